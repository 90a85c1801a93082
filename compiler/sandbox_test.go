package compiler

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/sandbox"
)

// The variable the job script exports is the one the shards read.
func TestSandboxEndpointsEnv(t *testing.T) {
	for _, name := range []string{"py", "py-exec.v2", "Code_Box", "7b"} {
		if got, want := sandboxEndpointsEnv(name), sandbox.EndpointsEnv(name); got != want {
			t.Errorf("%q: the script exports %s, the shards read %s", name, got, want)
		}
		if got, want := sandboxTokenEnv(name), sandbox.PoolTokenEnv(name); got != want {
			t.Errorf("%q: the script exports the token in %s, the shards read %s", name, got, want)
		}
	}
}

// The sandbox pool's part of the compiled script, run with a fake srun and
// scontrol: one sandbox-serve per node of the pool's het group, in the
// sandbox's image (a hostile string arrives intact) with nel-run mounted,
// the endpoints exported, and wait-ready polling each server.
func TestSandboxPoolScript(t *testing.T) {
	image := "img $(touch PWNED) `touch PWNED` ' \" ; touch PWNED"
	src := `services: m: {type: "api", url: "https://api.example.com/v1/chat/completions", model: "m"}
sandboxes: py: {
	type: "slurm"
	image: ` + strconv.Quote(image) + `
	node_pool: "sbx"
	slots_per_node: 3
	timeout: 90.5
}
benchmarks: [{name: "humaneval", sandbox: "py", solver: {type: "simple", service: "m"}}]
cluster: {type: "slurm", node_pools: {cpu: {nodes: 1}, sbx: {nodes: 2}}}
`
	s, err := loadCUE(t, "r.cue", src)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	nelRun := filepath.Join(root, "nel's $(dir)", "nel-run")
	script, err := Compile(s, CompileOptions{NelVersion: "test", NelRun: nelRun, NelRunSHA256: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	rec := runPoolBlock(t, string(script), "py", nelRun)
	if _, err := os.Stat(filepath.Join(filepath.Dir(rec), "PWNED")); err == nil {
		t.Fatal("the image name ran as code")
	}
	read := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(rec, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	}
	wantSrun := []string{"--overlap", "--mem=0", "--het-group=1", "--nodes=2", "--ntasks-per-node=1", "--nodelist=n1,n2",
		"--container-image=" + image, "--container-mounts=" + nelRun + ":" + nelRun + ":ro", "--no-container-mount-home",
		nelRun, "sandbox-serve", "--name", "py", "--listen", ":18800", "--slots", "3", "--memory", "4g", "--cpus", "2",
		"--timeout", "90.5s", "--token-env", "NEL_SANDBOX_PY_TOKEN"}
	if got := read("srun"); !reflect.DeepEqual(got, wantSrun) {
		t.Errorf("srun argv:\n got %q\nwant %q", got, wantSrun)
	}
	wait0 := read("nel-run")
	wantWait := []string{"wait-ready", "--name", "sandbox py", "--pid", "", "--api-key-env", "NEL_SANDBOX_PY_TOKEN", "--log", rec + "/out/logs/sandbox-py-7.log",
		"--timeout", "600s", "http://n1:18800/health", "http://n2:18800/health"}
	if len(wait0) == len(wantWait) {
		wantWait[4] = wait0[4] // the pid of the background srun
	}
	if !reflect.DeepEqual(wait0, wantWait) {
		t.Errorf("wait-ready argv:\n got %q\nwant %q", wait0, wantWait)
	}
	if got := read("endpoints"); !reflect.DeepEqual(got, []string{"n1:18800,n2:18800"}) {
		t.Errorf("exported endpoints %q, want n1:18800,n2:18800", got)
	}
	// The pool's token: made fresh (32 random bytes in hex), exported to
	// the servers' srun and to wait-ready (and so to the shards after).
	tok := read("srun-token")[0]
	if ok, _ := regexp.MatchString(`^[0-9a-f]{64}$`, tok); !ok || read("wait-token")[0] != tok {
		t.Errorf("pool token %q given to srun, %q to wait-ready; want the same 64 hex digits", tok, read("wait-token")[0])
	}
}

// runPoolBlock runs the part of a compiled script that starts sandbox pool
// name (its srun, its exported endpoints, its wait-ready) with a fake srun,
// scontrol and nel-run that record their arguments (and srun its
// APPTAINER_CACHEDIR) in the folder it returns: srun, nel-run, endpoints,
// cachedir.
func runPoolBlock(t *testing.T, text, name, nelRun string) string {
	t.Helper()
	env, tok := sandboxEndpointsEnv(name), sandboxTokenEnv(name)
	start := strings.Index(text, "\n# sandbox "+name+" ")
	end := strings.Index(text, "\nexport "+env+"\n")
	wait := strings.Index(text, "\n\"$NEL_RUN\" wait-ready --name 'sandbox "+name+"'")
	if start < 0 || end < start || wait < end {
		t.Fatalf("no sandbox pool block, or the wait before the start:\n%s", text)
	}
	waitEnd := wait + 1 + strings.Index(text[wait+1:], "\n") + 1
	waitEnd += strings.Index(text[waitEnd:], "\n")
	root := filepath.Dir(filepath.Dir(nelRun))
	rec := filepath.Join(root, "rec")
	if err := os.MkdirAll(rec, 0o755); err != nil {
		t.Fatal(err)
	}
	prelude := `set -euo pipefail
srun() { printf '%s\0' "$@" > "$REC/srun"; printf '%s' "${APPTAINER_CACHEDIR-unset}" > "$REC/cachedir"; bash -c 'printf %s "${` + tok + `-unset}"' > "$REC/srun-token"; }
scontrol() { printf 'n1\nn2\nn3\n'; }
nel_fail() { echo "nel_fail: $*" >&2; exit 1; }
nel_run() { printf '%s\0' "$@" > "$REC/nel-run"; bash -c 'printf %s "${` + tok + `-unset}"' > "$REC/wait-token"; }
nel_pids=()
NEL_OUT=$REC/out; mkdir -p "$NEL_OUT/logs"
NEL_RUN=` + quoteForTest(nelRun) + `
`
	// "$NEL_RUN" in the wait line is the real path; call the recorder.
	waitLines := strings.Replace(text[wait+1:waitEnd], `"$NEL_RUN" wait-ready`, `nel_run wait-ready`, 1)
	body := prelude + text[start+1:end] + "\nexport " + env + "\n" + waitLines + `
wait
bash -c 'printf %s "$` + env + `"' > "$REC/endpoints"
`
	cmd := exec.Command("bash", "-c", body)
	cmd.Dir = root
	cmd.Env = []string{"PATH=/usr/bin:/bin", "REC=" + rec, "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST_HET_GROUP_1=n[1-3]"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s\n--- script:\n%s", err, out, body)
	}
	return rec
}

// An apptainer sandbox with node_pool is a pool too: its servers run on
// the nodes themselves (no Pyxis), as --engine apptainer with the
// sandbox's image, their image cache in sif_cache_dir (a hostile path
// arrives intact, and runs nothing).
func TestApptainerPoolScript(t *testing.T) {
	cache := "/shared/sif $(touch PWNED) ' ;touch PWNED"
	src := `services: m: {type: "api", url: "https://api.example.com/v1/chat/completions", model: "m"}
sandboxes: py: {
	type: "apptainer"
	image: "docker://python:3.12-slim"
	node_pool: "sbx"
	sif_cache_dir: ` + strconv.Quote(cache) + `
	slots_per_node: 2
	timeout: 45
}
benchmarks: [{name: "humaneval", sandbox: "py", solver: {type: "simple", service: "m"}}]
cluster: {type: "slurm", node_pools: {cpu: {nodes: 1}, sbx: {nodes: 2}}}
`
	s, err := loadCUE(t, "r.cue", src)
	if err != nil {
		t.Fatal(err)
	}
	nelRun := filepath.Join(t.TempDir(), "bin", "nel-run")
	script, err := Compile(s, CompileOptions{NelVersion: "test", NelRun: nelRun, NelRunSHA256: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	rec := runPoolBlock(t, string(script), "py", nelRun)
	if _, err := os.Stat(filepath.Join(filepath.Dir(rec), "PWNED")); err == nil {
		t.Fatal("sif_cache_dir ran as code")
	}
	b, _ := os.ReadFile(filepath.Join(rec, "srun"))
	want := []string{"--overlap", "--mem=0", "--het-group=1", "--nodes=2", "--ntasks-per-node=1", "--nodelist=n1,n2",
		nelRun, "sandbox-serve", "--name", "py", "--listen", ":18800", "--slots", "2", "--memory", "4g", "--cpus", "2",
		"--timeout", "45s", "--token-env", "NEL_SANDBOX_PY_TOKEN", "--engine", "apptainer", "--image", "docker://python:3.12-slim"}
	if got := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"); !reflect.DeepEqual(got, want) {
		t.Errorf("srun argv:\n got %q\nwant %q", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(rec, "cachedir")); string(b) != cache {
		t.Errorf("the servers' APPTAINER_CACHEDIR is %q, want %q", b, cache)
	}
	if b, _ := os.ReadFile(filepath.Join(rec, "endpoints")); string(b) != "n1:18800,n2:18800" {
		t.Errorf("exported endpoints %q", b)
	}
	h, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	if sb := p.Benchmarks[0].Sandbox; sb == nil || sb.Type != "apptainer" || !sb.Pool {
		t.Errorf("plan sandbox %+v, want an apptainer pool", sb)
	}
}

// quoteForTest single-quotes s for bash.
func quoteForTest(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Sandbox servers take ports no managed service uses.
func TestSandboxPorts(t *testing.T) {
	src := `services: sim: {type: "process", command: ["srv"], port: 18800, model: "m", node_pool: "a"}
sandboxes: {
	b: {type: "slurm", node_pool: "a"}
	a: {type: "slurm", node_pool: "b"}
	c: {type: "local"}
}
benchmarks: [{name: "humaneval", sandbox: "a", solver: {type: "simple", service: "sim"}}]
cluster: {type: "slurm", eval_pool: "cpu", node_pools: {cpu: {nodes: 1}, a: {nodes: 1}, b: {nodes: 1}}}
`
	s, err := loadCUE(t, "r.cue", src)
	if err != nil {
		t.Fatal(err)
	}
	script, err := Compile(s, CompileOptions{NelVersion: "test", NelRun: "/opt/nel-run", NelRunSHA256: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	// By name: a gets the first free port (18800 is the server's), b the next.
	for _, want := range []string{"--name a --listen :18801 ", "--name b --listen :18802 "} {
		if !strings.Contains(string(script), want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if strings.Contains(string(script), "--name c ") {
		t.Errorf("a local sandbox got a server")
	}
}

// An apptainer sandbox that nel-run runs itself takes sif_cache_dir as the
// folder it builds Harbor tasks' images in; a pool's is its servers'
// APPTAINER_CACHEDIR, in the script, not in the plan.
func TestApptainerSifCacheDirPlan(t *testing.T) {
	for _, c := range []struct{ sandbox, want string }{
		{`{type: "apptainer", image: "docker://python:3.12-slim", sif_cache_dir: "/shared/sif"}`, "/shared/sif"},
		{`{type: "apptainer", image: "docker://python:3.12-slim"}`, ""},
		{`{type: "apptainer", image: "docker://python:3.12-slim", node_pool: "sbx", sif_cache_dir: "/shared/sif"}`, ""},
	} {
		src := `services: m: {type: "api", url: "https://api.example.com/v1/chat/completions", model: "m"}
sandboxes: py: ` + c.sandbox + `
benchmarks: [{name: "humaneval", sandbox: "py", solver: {type: "simple", service: "m"}}]
`
		if strings.Contains(c.sandbox, "node_pool") {
			src += `cluster: {type: "slurm", node_pools: {cpu: {nodes: 1}, sbx: {nodes: 2}}}` + "\n"
		}
		s, err := loadCUE(t, "r.cue", src)
		if err != nil {
			t.Fatal(err)
		}
		if u := Unsupported(s); len(u) != 0 {
			t.Errorf("%s: refused: %v", c.sandbox, u)
		}
		h, _, err := ComputeHashes(s)
		if err != nil {
			t.Fatal(err)
		}
		p, err := BuildPlan(s, h, "test")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Benchmarks[0].Sandbox.SifCacheDir; got != c.want {
			t.Errorf("%s: plan sif_cache_dir %q, want %q", c.sandbox, got, c.want)
		}
	}
}
