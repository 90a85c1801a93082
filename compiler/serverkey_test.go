package compiler

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// loadRecipe loads recipe src as r.yaml.
func loadRecipe(t *testing.T, src string) *Source {
	t.Helper()
	s, err := newTestLoader(t).Load("r.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hashesOf(t *testing.T, s *Source) Hashes {
	t.Helper()
	h, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// guardedPlan loads recipe src and returns the plan as a SLURM job sees
// it (guardServers applied).
func guardedPlan(t *testing.T, src string) (*Source, *plan.Plan) {
	t.Helper()
	s := loadRecipe(t, src)
	p, err := BuildPlan(s, hashesOf(t, s), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := guardServers(s, p); err != nil {
		t.Fatal(err)
	}
	return s, p
}

// runServerCmd runs a server's command line as the job's shell would,
// with a fake engine on PATH that records its pid and argv, in dir.
func runServerCmd(t *testing.T, dir string, sv plan.Service, engine string) {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/bash\necho \"engine pid $$\" >> log\nprintf '%s\\n' \"$@\" > argv\n"
	if err := os.WriteFile(filepath.Join(bin, engine), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", serverCmd(sv))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=/home/u", "NEL_SERVICE_MODEL_HOST=10.1.2.3"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", serverCmd(sv), err, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setup_commands run in order, as shell commands (quotes, $VAR and
// redirections mean what they mean in a shell), then the server replaces
// that shell with its argv intact, bound to the address the job resolved.
func TestSetupCommandsRun(t *testing.T) {
	_, p := guardedPlan(t, `services:
  model:
    type: vllm
    model: "/models/it's a model"
    setup_commands:
      - echo "setup pid $$" > log
      - "x='quoted; $HOME'; echo \"$x\" >> log"
      - echo "$${HOME}" >> log
benchmarks:
  - name: gsm8k
    solver: {type: simple, service: model}
`)
	dir := t.TempDir()
	runServerCmd(t, dir, p.Services[0], "vllm")
	lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "log"))), "\n")
	if len(lines) != 4 || lines[1] != "quoted; $HOME" || lines[2] != "/home/u" {
		t.Fatalf("log = %q; want the setup's three lines, then the engine's", lines)
	}
	if setup, engine := strings.TrimPrefix(lines[0], "setup "), strings.TrimPrefix(lines[3], "engine "); setup != engine {
		t.Errorf("setup ran as %q, the engine as %q: want the engine to replace the shell (exec)", setup, engine)
	}
	want := "serve\n/models/it's a model\n--host\n10.1.2.3\n--port\n8000\n"
	if got := readFile(t, filepath.Join(dir, "argv")); !strings.HasPrefix(got, want) {
		t.Errorf("engine argv = %q; want it to start %q", got, want)
	}
}

// A pre_cmd is the whole start script: no engine command of nel's runs.
func TestPreCmdRuns(t *testing.T) {
	_, p := guardedPlan(t, `services:
  model:
    type: vllm
    model: /models/m
    pre_cmd: |
      #!/bin/bash
      echo "own start on $NEL_SERVICE_MODEL_HOST" > log
      exec vllm serve /models/m --host "$NEL_SERVICE_MODEL_HOST"
benchmarks:
  - name: gsm8k
    solver: {type: simple, service: model}
`)
	sv := p.Services[0]
	if len(sv.Command) != 4 || sv.Command[0] != "bash" || sv.Command[3] != "nel-model" {
		t.Fatalf("command = %q; want bash -c PRE_CMD nel-model", sv.Command)
	}
	dir := t.TempDir()
	runServerCmd(t, dir, sv, "vllm")
	if got := readFile(t, filepath.Join(dir, "log")); !strings.HasPrefix(got, "own start on 10.1.2.3\nengine pid ") {
		t.Errorf("log = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "argv")); got != "serve\n/models/m\n--host\n10.1.2.3\n" {
		t.Errorf("engine argv = %q; want pre_cmd's own", got)
	}
}

// The plan hash covers the commands, as it covers extra_args: how the
// server was started is deployment. The recipe hash (methodology and the
// model's identity) does not move with them, so runs still compare.
func TestSetupCommandsHashed(t *testing.T) {
	const src = `services:
  model: {type: vllm, model: /models/m, setup_commands: ["module load cuda/12.4"]}
benchmarks:
  - name: gsm8k
    solver: {type: simple, service: model}
`
	a, b := hashesOf(t, loadRecipe(t, src)), hashesOf(t, loadRecipe(t, strings.Replace(src, "12.4", "12.6", 1)))
	if a.Plan == b.Plan {
		t.Errorf("plan hash %s does not change with setup_commands", a.Plan)
	}
	if a.Recipe != b.Recipe {
		t.Errorf("recipe hash changes with setup_commands: %s, %s", a.Recipe, b.Recipe)
	}
}

// Keys: vLLM's by its variable, SGLang's by its flag, a process
// service's by name only; trtllm-serve and NIM get none. Each keyed
// service's api_key is the job's variable, never a value.
func TestServerKeys(t *testing.T) {
	_, p := guardedPlan(t, `services:
  v: {type: vllm, model: m}
  s: {type: sglang, model: m, port: 8001}
  t: {type: trt_llm, model: m, port: 8002}
  p: {type: process, command: [sim], port: 8003, model: m}
benchmarks:
  - name: gsm8k
    solver: {type: simple, service: v}
`)
	want := map[string]string{"v": "NEL_SERVICE_V_API_KEY", "s": "NEL_SERVICE_S_API_KEY", "p": "NEL_SERVICE_P_API_KEY", "t": ""}
	for _, sv := range p.Services {
		got := ""
		if sv.APIKey != nil {
			got = sv.APIKey.Name
			if sv.APIKey.Default != nil {
				t.Errorf("%s: api_key has a default %q", sv.Name, *sv.APIKey.Default)
			}
		}
		if got != want[sv.Name] {
			t.Errorf("%s: api_key from %q, want %q", sv.Name, got, want[sv.Name])
		}
		host := "${NEL_SERVICE_" + strings.ToUpper(sv.Name) + "_HOST}"
		if bound := strings.Contains(strings.Join(sv.Command, " "), "--host "+host); bound != (sv.Type != "process") {
			t.Errorf("%s: command %q: bound to %s is %v", sv.Name, sv.Command, host, bound)
		}
	}
}

// What nel cannot run as NeMo Evaluator would, or what would undo the
// bind or the key, is refused where it is written.
func TestServerGuardRefusals(t *testing.T) {
	src := `services:
  a:
    type: vllm
    model: m
    setup_commands: [module load x]
    pre_cmd: echo start
  b:
    type: vllm
    model: m
    num_nodes: 2
    setup_commands: [module load x]
  c:
    type: sglang
    model: m
    extra_args: [--api-key=secret, --mem-fraction-static, "0.8", --host, 0.0.0.0]
benchmarks:
  - name: gsm8k
    solver: {type: simple, service: a}
cluster:
  type: slurm
  walltime: "01:00:00"
  node_pools:
    gpu: {nodes: 2, ntasks_per_node: 1}
`
	s := loadRecipe(t, src)
	got := Unsupported(s).Error() // one error a line
	wantUnsupported := []string{
		"r.yaml:5:5: services.a.setup_commands: not supported yet: setup_commands together with pre_cmd (pre_cmd replaces the whole start script, so NeMo Evaluator would skip setup_commands: put them at the top of pre_cmd)",
		"r.yaml:11:5: services.b.setup_commands: not supported yet: setup_commands on a multi-node service (the Ray workers on the other nodes would start without them)",
	}
	if w := strings.Join(wantUnsupported, "\n"); got != w {
		t.Errorf("unsupported:\n%s\nwant:\n%s", got, w)
	}

	// Without a and b, compile refuses c's flags at their positions.
	src = strings.Replace(src, "    setup_commands: [module load x]\n    pre_cmd: echo start\n", "", 1)
	src = strings.Replace(src, "    num_nodes: 2\n    setup_commands: [module load x]\n", "", 1)
	s = loadRecipe(t, src)
	_, err := Compile(s, CompileOptions{NelVersion: "test", NelRun: "/opt/nel-run", NelRunSHA256: strings.Repeat("0", 64)})
	const why = ": nel binds a managed server to its node's address and gives it a key of its own for each job (README: Security on shared clusters); drop "
	want := "r.yaml:11:18: services.c.extra_args[0]" + why + "--api-key\n" +
		"r.yaml:11:66: services.c.extra_args[3]" + why + "--host"
	if err == nil || err.Error() != want {
		t.Errorf("compile error:\n%v\nwant:\n%s", err, want)
	}
	// -t make starts servers as nel run does, unbound and without a key:
	// the flags stay the user's.
	if _, err := Compile(s, CompileOptions{Target: "make", NelVersion: "test", NelRun: "/opt/nel-run", NelRunSHA256: strings.Repeat("0", 64)}); err != nil {
		t.Errorf("-t make: %v", err)
	}
}
