package compiler

import (
	"maps"

	"github.com/nel-eval/nel/runtime/plan"
)

// The openclaw solver (NeMo Evaluator's OpenClawSolver): nel-run runs the
// OpenClaw agent CLI on each task in the sample's sandbox session, pointed
// at the shard's model proxy, and the task's verifier scores /app after
// it (runtime/shard/openclaw.go).

// openClawSettings is the plan's copy of an openclaw solver's fields,
// NeMo's defaults filled in by the schema; nil for another solver.
func openClawSettings(s Solver) *plan.OpenClaw {
	if s.Type != "openclaw" {
		return nil
	}
	oc := &plan.OpenClaw{Bin: s.OpenClawBin, Thinking: s.Thinking, MaxConcurrent: s.MaxConcurrent,
		IdleTimeoutSeconds: s.IdleTimeoutSeconds, TimeoutStrategy: s.TimeoutStrategy, SkipPreflight: s.SkipPreflight}
	if s.ContextWindow != nil {
		oc.ContextWindow = *s.ContextWindow
	}
	if s.RunTimeout != nil {
		oc.RunTimeout = *s.RunTimeout
	}
	if s.MaxAgentTimeout != nil {
		oc.MaxAgentTimeout = *s.MaxAgentTimeout
	}
	return oc
}

// openClawMethod adds to a solver's methodology what decides an openclaw
// run's score: the thinking level, the model's window, the agent's
// concurrency and its time budget. Where OpenClaw is installed
// (openclaw_bin) and the preflight are not.
func openClawMethod(m map[string]any, s Solver) {
	oc := openClawSettings(s)
	maps.Copy(m, map[string]any{
		"thinking": oc.Thinking, "context_window": oc.ContextWindow, "max_concurrent": oc.MaxConcurrent,
		"idle_timeout_seconds": oc.IdleTimeoutSeconds, "run_timeout": oc.RunTimeout,
		"timeout_strategy": oc.TimeoutStrategy, "max_agent_timeout": oc.MaxAgentTimeout,
	})
}

// openClawUnsupported refuses what of an openclaw benchmark nel-run cannot
// run: OpenClaw works on tasks in a local (bubblewrap) session, the only
// engine that lets it reach the proxy on the node's loopback and see its
// own install.
func openClawUnsupported(no func(feature string, path ...any), r *Recipe, i int, b *Benchmark) {
	s := b.Solver
	_, isHarbor := harborOf(b.Name)
	switch {
	case b.Name == "pinchbench":
		no("the pinchbench benchmark (NeMo Evaluator reads its tasks, workspace files and grading code from its PinchBench image in a private ECR registry, which nel cannot read; write the tasks as Harbor task folders and run them as harbor://DATASET)", "benchmarks", i, "name")
	case !isHarbor && !itemTasks(b):
		no("solver type openclaw on a benchmark other than harbor:// tasks or byob tasks (nel-run runs OpenClaw on a task in its sandbox session and scores it by the task's verifier; an answer scored by the benchmark's scorer is not wired yet)", "benchmarks", i, "solver", "type")
	}
	if s.WebSearchProvider != nil {
		no("web_search_provider on the openclaw solver (OpenClaw's web search needs the provider's key in the sandbox, and nel passes no secret into one)", "benchmarks", i, "solver", "web_search_provider")
	}
	if s.ConfigPath != nil {
		no("config_path on the openclaw solver (nel writes OpenClaw's config so that the agent reaches the model only through nel-run's proxy)", "benchmarks", i, "solver", "config_path")
	}
	if sb := resolveSandbox(r, b); sb != nil && sb.Type != "local" && sb.Type != "none" {
		no("the openclaw solver in a sandbox of type "+sb.Type+" (nel-run runs OpenClaw in a local, bubblewrap, session, which shares the node's network to reach the model's proxy; a container session does not yet)", sandboxPath(b, i, "type")...)
	}
}
