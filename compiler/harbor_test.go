package compiler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/plan"
)

// smokeDataset is the 5-task Harbor dataset written for nel's tests.
var smokeDataset = filepath.Join("..", "examples", "agentic", "harbor_datasets", "nel-smoke")

// harborRecipe is a tool_calling recipe over harbor://nel-smoke; SOLVER
// is replaced by extra solver fields.
const harborRecipe = `
services: m: {type: "api", url: "http://h/v1", model: "org/m"}
benchmarks: [{
	name: "harbor://nel-smoke"
	solver: {type: "tool_calling", service: "m", sandbox_tools: true SOLVER}
	sandbox: {type: "local"}
}]
`

// copySmoke copies the smoke dataset to dst.
func copySmoke(t *testing.T, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(smokeDataset)); err != nil {
		t.Fatal(err)
	}
}

// harborDir writes the recipe (solver fields added) beside a copy of the
// smoke dataset in a fresh folder and returns the recipe's path.
func harborDir(t *testing.T, solver string) string {
	t.Helper()
	dir := t.TempDir()
	copySmoke(t, filepath.Join(dir, "harbor_datasets", "nel-smoke"))
	recipe := filepath.Join(dir, "r.cue")
	writeFiles(t, dir, map[string]string{"r.cue": strings.Replace(harborRecipe, "SOLVER", solver, 1)})
	return recipe
}

func loadWithEnv(t *testing.T, path string, env map[string]string) (*Source, Hashes, error) {
	t.Helper()
	l := newTestLoader(t)
	l.LookupEnv = mapEnv(env)
	s, err := l.LoadFile(path, nil)
	if err != nil {
		return nil, Hashes{}, err
	}
	h, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, h, nil
}

// TestHarborTasksRead: the dataset beside the recipe is read when the
// recipe loads; the plan's tasks carry its digest (the one runtime/harbor
// computes) and its folder relative to the recipe's; with
// $HARBOR_DATASETS_DIR the folder is that one, made absolute.
func TestHarborTasksRead(t *testing.T) {
	recipe := harborDir(t, "")
	want, err := harbor.Load(context.Background(), "nel-smoke", smokeDataset)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := loadWithEnv(t, recipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := harborPlan(s, 0)
	if got == nil || *got != (plan.HarborTasks{Dataset: "nel-smoke", Dir: "harbor_datasets/nel-smoke", Digest: want.Digest, Tasks: 5}) {
		t.Errorf("tasks %+v, want digest %s", got, want.Digest)
	}

	elsewhere := t.TempDir()
	copySmoke(t, filepath.Join(elsewhere, "nel-smoke"))
	s, _, err = loadWithEnv(t, recipe, map[string]string{harbor.EnvDatasetsDir: elsewhere})
	if err != nil {
		t.Fatal(err)
	}
	if got := harborPlan(s, 0); got == nil || got.Dir != filepath.ToSlash(filepath.Join(elsewhere, "nel-smoke")) || got.Digest != want.Digest {
		t.Errorf("with %s set: tasks %+v", harbor.EnvDatasetsDir, got)
	}
}

// TestHarborHashes: the benchmark hash covers the tasks' content and the
// loop's budgets and tools, not the model, nor where the tasks lie (which
// the plan hash covers).
func TestHarborHashes(t *testing.T) {
	key := "harbor://nel-smoke"
	base := harborDir(t, "")
	_, h0, err := loadWithEnv(t, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	differs := map[string]string{
		"max_turns":        ", max_turns: 10",
		"tool_timeout":     ", tool_timeout: 30",
		"max_output_chars": ", max_output_chars: 100",
		"response_mode":    `, response_mode: "sandbox_artifact"`,
		"system_prompt":    `, system_prompt: "Be brief."`,
	}
	for what, solver := range differs {
		_, h, err := loadWithEnv(t, harborDir(t, solver), nil)
		if err != nil {
			t.Fatal(err)
		}
		if h.Benchmarks[key] == h0.Benchmarks[key] {
			t.Errorf("%s: the benchmark hash did not change", what)
		}
	}

	// Another model: same benchmark hash, another recipe hash.
	other := harborDir(t, "")
	text, _ := os.ReadFile(other)
	writeFiles(t, filepath.Dir(other), map[string]string{"r.cue": strings.Replace(string(text), `"org/m"`, `"org/other"`, 1)})
	_, h, err := loadWithEnv(t, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Benchmarks[key] != h0.Benchmarks[key] || h.Recipe == h0.Recipe {
		t.Errorf("another model: benchmark hash changed %v, recipe hash changed %v", h.Benchmarks[key] != h0.Benchmarks[key], h.Recipe != h0.Recipe)
	}

	// One byte of one task's tests: another benchmark.
	edited := harborDir(t, "")
	f := filepath.Join(filepath.Dir(edited), "harbor_datasets", "nel-smoke", "count-lines", "tests", "test.sh")
	b, _ := os.ReadFile(f)
	if err := os.WriteFile(f, append(b, '\n'), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, h, _ = loadWithEnv(t, edited, nil); h.Benchmarks[key] == h0.Benchmarks[key] {
		t.Errorf("a changed tests/test.sh left the benchmark hash unchanged")
	}

	// The same tasks elsewhere: the same recipe, deployed elsewhere.
	elsewhere := t.TempDir()
	copySmoke(t, filepath.Join(elsewhere, "nel-smoke"))
	_, h, err = loadWithEnv(t, base, map[string]string{harbor.EnvDatasetsDir: elsewhere})
	if err != nil {
		t.Fatal(err)
	}
	if h.Benchmarks[key] != h0.Benchmarks[key] || h.Recipe != h0.Recipe || h.Plan == h0.Plan {
		t.Errorf("moved tasks: benchmark/recipe hashes must stay (%v %v) and the plan hash change (%v)",
			h.Benchmarks[key] == h0.Benchmarks[key], h.Recipe == h0.Recipe, h.Plan != h0.Plan)
	}
}

// TestSimpleSolverHashUnchanged: the tool_calling keys are only in a
// tool_calling solver's method, so every other benchmark's hash is what it
// was (the goldens pin them too).
func TestSimpleSolverHashUnchanged(t *testing.T) {
	m := solverMethod(&Recipe{}, Solver{Type: "simple", ImageDetail: "auto"})
	if len(m) != 3 {
		t.Errorf("a simple solver's method has %d keys, want type, image_detail and sandbox_tools: %v", len(m), m)
	}
	tc := solverMethod(&Recipe{Services: map[string]*Service{"g": {Type: "gym", Image: "gym:1"}}},
		Solver{Type: "tool_calling", ResourceService: "g", MaxTurns: 50})
	if g, ok := tc["resource_service"].(map[string]any); !ok || g["image"] != "gym:1" || tc["max_turns"] != 50 {
		t.Errorf("tool_calling method %v", tc)
	}
}

// TestHarborErrors: a dataset name that is not a folder name, and a
// dataset that does not read, are errors at the benchmark's name.
func TestHarborErrors(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"harbor://", `expected harbor://DATASET, DATASET a folder under $HARBOR_DATASETS_DIR (by default harbor_datasets beside the recipe), found "harbor://"`},
		{"harbor://../etc", "expected harbor://DATASET"},
		{"harbor://a//b", "expected harbor://DATASET"},
		{"harbor:///abs", "expected harbor://DATASET"},
	} {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"r.cue": strings.NewReplacer(`"harbor://nel-smoke"`, `"`+c.name+`"`, "SOLVER", "").Replace(harborRecipe)})
		_, _, err := loadWithEnv(t, filepath.Join(dir, "r.cue"), nil)
		if err == nil || !strings.Contains(err.Error(), "r.cue:4:8: benchmarks[0].name: "+c.want) {
			t.Errorf("%s: error %v, want %q at benchmarks[0].name", c.name, err, c.want)
		}
	}
	// A registry name (org/name) is a folder path.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"r.cue": strings.NewReplacer(`"harbor://nel-smoke"`, `"harbor://org/tasks"`, "SOLVER", "").Replace(harborRecipe)})
	copySmoke(t, filepath.Join(dir, "harbor_datasets", "org", "tasks"))
	if s, _, err := loadWithEnv(t, filepath.Join(dir, "r.cue"), nil); err != nil || harborPlan(s, 0).Tasks != 5 || harborPlan(s, 0).Dir != "harbor_datasets/org/tasks" {
		t.Errorf("harbor://org/tasks: %v", err)
	}
	recipe := harborDir(t, "")
	bad := filepath.Join(filepath.Dir(recipe), "harbor_datasets", "nel-smoke", "edit-json", "task.toml")
	if err := os.WriteFile(bad, []byte("[verifier]\ntimeout_sec = \"soon\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := loadWithEnv(t, recipe, nil)
	want := `r.cue:4:8: benchmarks[0].name: harbor dataset nel-smoke: task edit-json: task.toml: verifier.timeout_sec: expected a number, found soon (the dataset is read when the recipe is loaded`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a bad task.toml: error %v, want %q", err, want)
	}
}

// TestHarborCompiles: harbor:// tasks with the tool_calling solver compile
// to a plan that pins them; a recipe whose dataset is missing still
// validates (as NeMo Evaluator's do: it downloads them), and compile
// refuses it saying where it looked.
func TestHarborCompiles(t *testing.T) {
	s, h, err := loadWithEnv(t, harborDir(t, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPlan(s, h, "test")
	if err != nil || len(Unsupported(s)) != 0 {
		t.Fatalf("compile refuses: %v %v", err, Unsupported(s))
	}
	if b := p.Benchmarks[0]; b.Harbor == nil || b.Harbor.Tasks != 5 || b.Solver.Type != "tool_calling" || !b.Solver.SandboxTools {
		t.Errorf("plan benchmark: harbor %+v solver %+v", b.Harbor, b.Solver)
	}

	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"r.cue": strings.Replace(harborRecipe, "SOLVER", "", 1)})
	s, _, err = loadWithEnv(t, filepath.Join(dir, "r.cue"), nil)
	if err != nil {
		t.Fatalf("a recipe whose dataset is not here does not validate: %v", err)
	}
	if tasks := harborPlan(s, 0); tasks == nil || tasks.Digest != "" {
		t.Errorf("a missing dataset: tasks %+v, want no digest", tasks)
	}
	got := Unsupported(s)
	if len(got) != 1 || !strings.Contains(got[0].Error(), "benchmarks[0].name: not supported yet: a Harbor dataset that is not on this machine (looked in "+filepath.Join(dir, "harbor_datasets", "nel-smoke")) {
		t.Errorf("a missing dataset: refusals %v", got)
	}
}

// The tool_calling solver runs any benchmark nel scores (toolcalling.go)
// but gym:// ones; the harbor solver (the Harbor CLI's own agents) runs a
// harbor:// dataset only, and is refused at its type elsewhere.
func TestToolCallingElsewhereRefused(t *testing.T) {
	var got []string
	no := func(f string, path ...any) { got = append(got, fmt.Sprint(path...)+": "+f) }
	for _, b := range []*Benchmark{
		{Name: "gsm8k", Solver: Solver{Type: "tool_calling", SandboxTools: true}},
		{Name: "gym://127.0.0.1:8600", Solver: Solver{Type: "tool_calling", ResourceService: "g"}},
		{Name: "nmp_harbor", Solver: Solver{Type: "harbor"}},
		{Name: "my-tasks", Solver: Solver{Type: "harbor"}},
		{Name: "harbor://tb", Solver: Solver{Type: "tool_calling", SandboxTools: true}},
	} {
		benchmarkUnsupported(no, &Recipe{}, 0, b)
	}
	want := []string{
		"benchmarks0solvertype: solver type tool_calling on a gym:// benchmark (nel-run scores a gym:// item by the server's /verify of one response it asked for; run the Gym environment's tools as resource_service of a benchmark nel scores)",
		"benchmarks0solvertype: solver type harbor on a benchmark other than harbor:// tasks (NeMo Evaluator reads nmp_harbor's tasks from an NMP checkout ($NMP_REPO/tests/agentic-use) and builds their base image from its Dockerfile.harbor: put the tasks under $HARBOR_DATASETS_DIR and name the folder harbor://DATASET; the Harbor CLI runs a Harbor dataset: name it harbor://NAME@VERSION)",
		"benchmarks0solvertype: solver type harbor on a benchmark other than harbor:// tasks (the Harbor CLI runs a Harbor dataset: name it harbor://NAME@VERSION)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refusals:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHarborUnsupported checks the refusals of what harbor:// tasks need
// that nel cannot give: a dataset not here, a solver other than an agent,
// an agent without the sandbox tools or with an artifact nel cannot read.
// Every sandbox type keeps a session now (ecs_fargate one task per
// sample, a slurm pool on its servers): none is refused for it.
func TestHarborUnsupported(t *testing.T) {
	s := &Source{Dir: "recipes", harbor: map[int]plan.HarborTasks{0: {Dataset: "tb"}}}
	var got []string
	no := func(f string, path ...any) { got = append(got, f) }
	s.harbor[0] = plan.HarborTasks{Dataset: "tb"}
	for _, b := range []*Benchmark{
		{Name: "harbor://tb", Solver: Solver{Type: "simple"}},
		{Name: "harbor://tb", Solver: Solver{Type: "tool_calling"}},
		{Name: "harbor://tb", Solver: Solver{Type: "tool_calling", SandboxTools: true, ResponseMode: "sandbox_artifact"}, Sandbox: map[string]any{"type": "ecs_fargate"}},
		// A slurm pool keeps sessions: only the missing dataset is refused.
		{Name: "harbor://tb", Solver: Solver{Type: "tool_calling", SandboxTools: true}, Sandbox: map[string]any{"type": "slurm"}},
	} {
		harborUnsupported(no, s, 0, b)
	}
	want := []string{
		"a Harbor dataset that is not on this machine (looked in " + filepath.Join("recipes", "harbor_datasets", "tb") + "; nel does not download Harbor datasets for its own loop: put the task folders there, or set $HARBOR_DATASETS_DIR; or use solver type harbor, whose CLI fetches NAME@VERSION from Harbor's registry in the job)",
		"harbor:// tasks with a simple solver (an agent solves them in a sandbox: use solver type tool_calling with sandbox_tools: true, or openclaw)",
		"a Harbor dataset that is not on this machine (looked in " + filepath.Join("recipes", "harbor_datasets", "tb") + "; nel does not download Harbor datasets for its own loop: put the task folders there, or set $HARBOR_DATASETS_DIR; or use solver type harbor, whose CLI fetches NAME@VERSION from Harbor's registry in the job)",
		"harbor:// tasks without sandbox_tools (the agent works on /app through the sandbox tools; set sandbox_tools: true)",
		"a Harbor dataset that is not on this machine (looked in " + filepath.Join("recipes", "harbor_datasets", "tb") + "; nel does not download Harbor datasets for its own loop: put the task folders there, or set $HARBOR_DATASETS_DIR; or use solver type harbor, whose CLI fetches NAME@VERSION from Harbor's registry in the job)",
		"response_mode sandbox_artifact on harbor:// tasks (the task's verifier reads /app itself; nel reads no artifact: leave response_mode at last_message)",
		"a Harbor dataset that is not on this machine (looked in " + filepath.Join("recipes", "harbor_datasets", "tb") + "; nel does not download Harbor datasets for its own loop: put the task folders there, or set $HARBOR_DATASETS_DIR; or use solver type harbor, whose CLI fetches NAME@VERSION from Harbor's registry in the job)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refusals:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestToolSettings: the plan carries every tool_calling field the recipe
// gives, defaults filled by the schema.
func TestToolSettings(t *testing.T) {
	_, _, err := loadWithEnv(t, harborDir(t, `, resource_service: "g", system_prompt: "x"`), nil)
	if err == nil {
		t.Fatalf("a resource_service that names no service loaded")
	}
	if !strings.Contains(err.Error(), `benchmarks[0].solver.resource_service: expected the name of a service, found "g"`) {
		t.Errorf("error %v", err)
	}
	s, _, err := loadWithEnv(t, harborDir(t, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	var p plan.Solver
	toolSettings(&p, s.Recipe.Benchmarks[0].Solver)
	want := plan.Solver{SandboxTools: true, MaxTurns: 50, ToolTimeout: 180, MaxOutputChars: 16384, ResponseMode: "last_message"}
	if p.SandboxTools != want.SandboxTools || p.MaxTurns != want.MaxTurns || p.ToolTimeout != want.ToolTimeout ||
		p.MaxOutputChars != want.MaxOutputChars || p.ResponseMode != want.ResponseMode || p.ResourceService != "" {
		t.Errorf("plan solver %+v, want NeMo Evaluator's defaults %+v", p, want)
	}
}

// TestHarborTaskImageRefused: a task whose Dockerfile builds (RUN) is
// refused at compile where nel-run could not build it, naming the task and
// its line, rather than each of its samples failing on the node: the
// docker sandbox builds it, and refuses only a Dockerfile that works
// outside /app; the apptainer sandbox builds one that converts into a
// definition file, and refuses one that does not (ADD of a URL), and an
// apptainer pool's servers build none; the local sandbox reads no
// Dockerfile.
func TestHarborTaskImageRefused(t *testing.T) {
	path := harborDir(t, "")
	dir := filepath.Dir(path)
	env := filepath.Join(dir, "harbor_datasets", "nel-smoke", "sort-names", "environment")
	writeFiles(t, env, map[string]string{
		"Dockerfile": "FROM python:3.12-slim\nRUN pip install pytest\n",
	})
	s, _, err := loadWithEnv(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Unsupported(s); len(got) != 0 {
		t.Errorf("local sandbox: refusals %v", got)
	}
	refusals := func(sandbox string) Errors {
		t.Helper()
		r := strings.Replace(strings.Replace(harborRecipe, "SOLVER", "", 1), `type: "local"`, sandbox, 1)
		writeFiles(t, dir, map[string]string{"r.cue": r})
		s, _, err := loadWithEnv(t, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return Unsupported(s)
	}
	if got := refusals(`type: "docker"`); len(got) != 0 {
		t.Errorf("docker sandbox, a Dockerfile with RUN: refusals %v, want none (nel-run builds it)", got)
	}
	if got := refusals(`type: "apptainer", image: "docker://python:3.12-slim"`); len(got) != 0 {
		t.Errorf("apptainer sandbox, a Dockerfile with RUN: refusals %v, want none (nel-run builds it)", got)
	}
	writeFiles(t, env, map[string]string{
		"Dockerfile": "FROM python:3.12-slim\nRUN pip install pytest\n# fetched\nADD https://example.com/data.tgz /opt/\n",
	})
	got := refusals(`type: "apptainer", image: "docker://python:3.12-slim"`)
	if len(got) != 1 || !strings.Contains(got[0].Error(), "benchmarks[0].sandbox: not supported yet: a task image nel cannot pull by name for an apptainer session (task sort-names: environment/Dockerfile:4: ADD https://example.com/data.tgz /opt/: not supported yet: ADD of a URL") {
		t.Errorf("apptainer sandbox, ADD of a URL: refusals %v", got)
	}
	if got := refusals(`type: "docker"`); len(got) != 0 {
		t.Errorf("docker sandbox, ADD of a URL: refusals %v, want none (docker build fetches it)", got)
	}
	writeFiles(t, env, map[string]string{
		"Dockerfile": "FROM python:3.12-slim\nRUN pip install pytest\nWORKDIR /testbed\n",
	})
	got = refusals(`type: "docker"`)
	if len(got) != 1 || !strings.Contains(got[0].Error(), "(task sort-names: environment/Dockerfile: line 3: not supported yet: WORKDIR /testbed") {
		t.Errorf("docker sandbox, WORKDIR /testbed: refusals %v", got)
	}
}
