package compiler

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// harborSolverRecipe is NeMo's 08a_terminalbench_harbor_docker.yaml in
// shape (harnessRecipe's service): a harbor:// dataset of Harbor's
// registry, the terminus-2 agent, docker.
var harborSolverRecipe = harnessRecipe[:strings.Index(harnessRecipe, "benchmarks:")] + `benchmarks:
  - name: harbor://terminal-bench@2.0
    max_problems: 5
    max_concurrent: 3
    solver:
      type: harbor
      service: nemotron
      agent: terminus-2
    sandbox:
      type: docker
      timeout: 600.0
`

// TestHarborSolverPlan: the Harbor CLI runs the registry dataset with the
// recipe's agent; the job config says the agent, its model through the
// service, the timeout, the concurrency; the key is a reference only.
func TestHarborSolverPlan(t *testing.T) {
	b := mustPlan(t, loadHarness(t, harborSolverRecipe)).Benchmarks[0]
	if b.Harbor != nil {
		t.Errorf("a harbor-solver benchmark has tasks for nel-run's loop: %+v", b.Harbor)
	}
	hp := b.Harness
	if hp == nil || hp.Kind != "harbor" || hp.Task != "terminal-bench@2.0" || hp.Image != defaultHarborImage {
		t.Fatalf("harness %+v", hp)
	}
	if got, want := strings.Join(hp.Argv, " "), "harbor run --config /nel-harness/job.json --dataset terminal-bench@2.0 --n-tasks 5"; got != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	var cfg struct {
		JobName      string `json:"job_name"`
		Attempts     int    `json:"n_attempts"`
		Orchestrator struct {
			N int `json:"n_concurrent_trials"`
		} `json:"orchestrator"`
		Environment struct{ Type string } `json:"environment"`
		Agents      []struct {
			Name     string            `json:"name"`
			Model    string            `json:"model_name"`
			Override float64           `json:"override_timeout_sec"`
			Env      map[string]string `json:"env"`
			Kwargs   map[string]any    `json:"kwargs"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(hp.Config), &cfg); err != nil {
		t.Fatalf("job config: %v\n%s", err, hp.Config)
	}
	a := cfg.Agents[0]
	if cfg.JobName != "nel" || cfg.Attempts != 1 || cfg.Orchestrator.N != 3 || cfg.Environment.Type != "docker" || len(cfg.Agents) != 1 ||
		a.Name != "terminus-2" || a.Model != "openai/nvidia/nemotron-3-super-120b-a12b" || a.Override != 600 ||
		a.Env["OPENAI_API_BASE"] != "${NEL_HARNESS_URL}" || a.Env["OPENAI_API_KEY"] != "${NEL_HARNESS_API_KEY}" || a.Kwargs != nil {
		t.Errorf("job config:\n%s", hp.Config)
	}
	p := mustPlan(t, loadHarness(t, harborSolverRecipe, "max_problems: 5", "max_problems: 5\n    repeats: 4"))
	if !strings.Contains(p.Benchmarks[0].Harness.Config, `"n_attempts": 4,`) {
		t.Errorf("repeats 4: config %s", p.Benchmarks[0].Harness.Config)
	}
}

// TestHarborSolverTimeouts: timeout_strategy as NeMo Evaluator reads it.
func TestHarborSolverTimeouts(t *testing.T) {
	for _, c := range []struct {
		edit []string
		want map[string]float64
	}{
		{nil, map[string]float64{"override_timeout_sec": 600}}, // the sandbox's timeout
		{[]string{"agent: terminus-2", "agent: terminus-2\n      run_timeout: 900"}, map[string]float64{"override_timeout_sec": 900}},
		{[]string{"agent: terminus-2", "agent: terminus-2\n      timeout_strategy: task"}, map[string]float64{}},
		{[]string{"agent: terminus-2", "agent: terminus-2\n      timeout_strategy: task\n      max_agent_timeout: 1200"}, map[string]float64{"max_timeout_sec": 1200}},
	} {
		s := loadHarness(t, harborSolverRecipe, c.edit...)
		got := harborTimeouts(s.Recipe, s.Recipe.Benchmarks[0])
		if len(got) != len(c.want) {
			t.Errorf("%v: timeouts %v, want %v", c.edit, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%v: timeouts %v, want %v", c.edit, got, c.want)
			}
		}
	}
}

// TestHarborSolverHash: the agent and its settings are methodology; the
// model, endpoint and concurrency are not.
func TestHarborSolverHash(t *testing.T) {
	base, _ := benchHash(t, harborSolverRecipe)
	for _, c := range []struct {
		name string
		edit []string
		same bool
	}{
		{"model", []string{"nemotron-3-super-120b-a12b", "other"}, true},
		{"concurrency", []string{"max_concurrent: 3", "max_concurrent: 8"}, true},
		{"agent", []string{"agent: terminus-2", "agent: openhands"}, false},
		{"agent_kwargs", []string{"agent: terminus-2", "agent: terminus-2\n      agent_kwargs: {max_episodes: 10}"}, false},
		{"timeout", []string{"timeout: 600.0", "timeout: 900.0"}, false},
		{"dataset", []string{"terminal-bench@2.0", "terminal-bench@2.1"}, false},
		{"limit", []string{"max_problems: 5", "max_problems: 6"}, false},
		{"repeats", []string{"max_problems: 5", "max_problems: 5\n    repeats: 4"}, false},
	} {
		got, _ := benchHash(t, harborSolverRecipe, c.edit...)
		if (got == base) != c.same {
			t.Errorf("%s: benchmark hash changed = %v, want %v", c.name, got != base, !c.same)
		}
	}
}

// TestHarborSolverRefusals: what the Harbor CLI cannot be given is refused
// where the recipe says it.
func TestHarborSolverRefusals(t *testing.T) {
	for _, c := range []struct {
		edit []string
		want string
	}{
		{[]string{"type: docker", "type: apptainer"}, "benchmarks[0].sandbox: not supported yet: solver type harbor in an apptainer sandbox"},
		{[]string{"timeout: 600.0", "timeout: 600.0\n      image: python:3.12"}, "benchmarks[0].sandbox: not supported yet: sandbox image with solver type harbor"},
		{[]string{"agent: terminus-2", "agent: terminus-2\n      cmd_timeout: 60"}, "benchmarks[0].solver.cmd_timeout: not supported yet: cmd_timeout with solver type harbor"},
		{[]string{"agent: terminus-2", "agent: terminus-2\n      timeout_strategy: max"}, "benchmarks[0].solver.timeout_strategy: not supported yet: timeout_strategy max with solver type harbor"},
		{[]string{"agent: terminus-2", "agent: terminus-2\n      container_env: {A: b}"}, "benchmarks[0].solver.container_env: not supported yet: container_env with solver type harbor"},
		{[]string{"harbor://terminal-bench@2.0", "nmp_harbor"}, "benchmarks[0].solver.type: not supported yet: solver type harbor on a benchmark other than harbor:// tasks (NeMo Evaluator reads nmp_harbor's tasks from an NMP checkout"},
		{[]string{"harbor://terminal-bench@2.0", "terminal-bench-hard"}, "benchmarks[0].name: not supported yet: terminal-bench-hard without a pinned commit"},
	} {
		s := loadHarness(t, harborSolverRecipe, c.edit...)
		h, _, _ := ComputeHashes(s)
		_, err := BuildPlan(s, h, "test")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v\nwant %q", c.edit, err, c.want)
		}
	}
}

// TestHarborSolverScript runs the step's script in bash (its folder a
// temporary one, a stand-in harbor on PATH): the job config gets the URL
// as text, the key stays a reference, the CLI gets its arguments and the
// jobs dir.
func TestHarborSolverScript(t *testing.T) {
	bash, err := exec.LookPath("bash") // the job's shell: always there
	if err != nil {
		t.Fatal(err)
	}
	dir, bin := t.TempDir(), t.TempDir()
	fake := "#!/bin/sh\nprintf '%s\\n' \"$@\" > args\nprintf '%s|%s|%s\\n' \"$OPENAI_API_BASE\" \"$OPENAI_API_KEY\" \"$NEL_HARNESS_API_KEY\" > env\n"
	if err := os.WriteFile(filepath.Join(bin, "harbor"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"env": {"OPENAI_API_BASE": "${NEL_HARNESS_URL}", "OPENAI_API_KEY": "${NEL_HARNESS_API_KEY}"}}`
	if err := os.WriteFile(filepath.Join(dir, harnessConfigFile), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.ReplaceAll(harnessPrelude+harnessScript(harborKind), "cd "+harnessInside, "cd "+shellquote.Quote(dir))
	cmd := exec.Command(bash, "-c", script, "nel-harness", "harbor", "run", "--config", harnessInside+"/job.json", "--dataset", "tb@2.0")
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "NEL_HARNESS_URL=http://node7:8000/v1", "NEL_HARNESS_API_KEY=k-secret", "NEL_HARBOR_JOBS_DIR=/lustre/run/harness"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for file, want := range map[string]string{
		"job.json": `{"env": {"OPENAI_API_BASE": "http://node7:8000/v1", "OPENAI_API_KEY": "${NEL_HARNESS_API_KEY}"}}` + "\n",
		"args":     "run\n--config\n/nel-harness/job.json\n--dataset\ntb@2.0\n--jobs-dir\n/lustre/run/harness\n",
		"env":      "http://node7:8000/v1|k-secret|k-secret\n",
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", file, b, err, want)
		}
	}
}

// TestHarborTasksDir: a local dataset's folder as the job finds it: the
// plan's folder under the recipe's (both relative to where the job runs),
// or $HARBOR_DATASETS_DIR's absolute one; none for a registry dataset.
func TestHarborTasksDir(t *testing.T) {
	for _, c := range []struct{ recipeDir, dir, want string }{
		{"examples/agentic", "harbor_datasets/mini", "examples/agentic/harbor_datasets/mini"},
		{".", "harbor_datasets/mini", "harbor_datasets/mini"},
		{"examples/agentic", "/lustre/harbor/mini", "/lustre/harbor/mini"},
		{"examples/agentic", "", ""},
	} {
		if got := harborTasksDir(c.recipeDir, &Benchmark{harborDir: c.dir}); got != c.want {
			t.Errorf("harborTasksDir(%q, %q) = %q, want %q", c.recipeDir, c.dir, got, c.want)
		}
	}
}
