package compiler

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// openClawDir is a recipe beside the smoke dataset whose benchmark runs
// the openclaw solver with solver's extra fields, in sandbox.
func openClawDir(t *testing.T, solver, sandbox string) string {
	t.Helper()
	path := harborDir(t, "")
	r := strings.Replace(harborRecipe, `{type: "tool_calling", service: "m", sandbox_tools: true SOLVER}`, `{type: "openclaw", service: "m"`+solver+`}`, 1)
	r = strings.Replace(r, `{type: "local"}`, sandbox, 1)
	writeFiles(t, filepath.Dir(path), map[string]string{"r.cue": r})
	return path
}

// TestOpenClawSettings: the plan carries NeMo Evaluator's defaults
// (OpenClawSolverConfig: thinking high, 4 concurrent, a 600 s idle
// timeout, timeout_strategy task, openclaw_bin openclaw) or the recipe's.
func TestOpenClawSettings(t *testing.T) {
	s, _, err := loadWithEnv(t, openClawDir(t, "", `{type: "local"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Unsupported(s); len(got) != 0 {
		t.Fatalf("refusals %v", got)
	}
	want := plan.OpenClaw{Bin: "openclaw", Thinking: "high", MaxConcurrent: 4, IdleTimeoutSeconds: 600, TimeoutStrategy: "task"}
	if got := openClawSettings(s.Recipe.Benchmarks[0].Solver); got == nil || *got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	s, _, err = loadWithEnv(t, openClawDir(t, `, thinking: "off", context_window: 32768, max_concurrent: 1, idle_timeout_seconds: 30, run_timeout: 900, timeout_strategy: "max", max_agent_timeout: 1200, skip_preflight: true, openclaw_bin: "/opt/oc/openclaw.mjs"`, `{type: "local"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want = plan.OpenClaw{Bin: "/opt/oc/openclaw.mjs", Thinking: "off", ContextWindow: 32768, MaxConcurrent: 1, IdleTimeoutSeconds: 30,
		RunTimeout: 900, TimeoutStrategy: "max", MaxAgentTimeout: 1200, SkipPreflight: true}
	if got := openClawSettings(s.Recipe.Benchmarks[0].Solver); got == nil || *got != want {
		t.Errorf("settings %+v, want %+v", got, want)
	}
	if got := openClawSettings(Solver{Type: "tool_calling"}); got != nil {
		t.Errorf("a tool_calling solver's openclaw settings %+v", got)
	}
}

// TestOpenClawMethodology: what decides the score (the thinking level,
// the timeouts) changes the recipe hash; where OpenClaw is installed does
// not.
func TestOpenClawMethodology(t *testing.T) {
	hash := func(solver string) string {
		_, h, err := loadWithEnv(t, openClawDir(t, solver, `{type: "local"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return h.Recipe
	}
	base := hash("")
	if hash(`, openclaw_bin: "/elsewhere/openclaw"`) != base || hash(`, skip_preflight: true`) != base {
		t.Error("the executable's place or the preflight changed the recipe hash")
	}
	for _, f := range []string{`, thinking: "low"`, `, run_timeout: 60`, `, timeout_strategy: "override"`, `, max_agent_timeout: 60`, `, context_window: 8192`} {
		if hash(f) == base {
			t.Errorf("%s left the recipe hash as it was", f)
		}
	}
}

// TestOpenClawRefusals: what nel-run cannot give OpenClaw is refused at
// compile, each at its value's line and column (counted by hand).
func TestOpenClawRefusals(t *testing.T) {
	path := openClawDir(t, `, web_search_provider: "tavily", config_path: "oc.json"`, `{type: "docker", image: "ghcr.io/openclaw/openclaw:2026.9.6"}`)
	s, _, err := loadWithEnv(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range Unsupported(s) {
		got = append(got, e.Error())
	}
	for _, want := range []string{
		"r.cue:5:64: benchmarks[0].solver.web_search_provider: not supported yet: web_search_provider on the openclaw solver (",
		"r.cue:5:87: benchmarks[0].solver.config_path: not supported yet: config_path on the openclaw solver (",
		"r.cue:6:18: benchmarks[0].sandbox.type: not supported yet: the openclaw solver in a sandbox of type docker (",
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("refusals lack %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) != 3 {
		t.Errorf("%d refusals:\n%s", len(got), strings.Join(got, "\n"))
	}
	// A benchmark with no task for OpenClaw to work on.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"g.cue": `
services: m: {type: "api", url: "http://h/v1", model: "org/m"}
benchmarks: [{name: "gsm8k", solver: {type: "openclaw", service: "m"}, sandbox: {type: "local"}}]
`})
	if s, _, err = loadWithEnv(t, filepath.Join(dir, "g.cue"), nil); err != nil {
		t.Fatal(err)
	}
	refused := Unsupported(s)
	if len(refused) != 1 || !strings.Contains(refused[0].Error(), "g.cue:3:45: benchmarks[0].solver.type: not supported yet: solver type openclaw on a benchmark other than harbor:// tasks or byob tasks (") {
		t.Errorf("gsm8k: refusals %v", refused)
	}
}
