package compiler

import (
	"reflect"
	"strings"
)

// harnessUnsupported refuses what a harness benchmark cannot do: what the
// harness has no flag for, and what nel would otherwise drop silently.
func harnessUnsupported(no func(feature string, path ...any), r *Recipe, i int, b *Benchmark) {
	// A name without its task or image is refused when the recipe is
	// loaded (names.go).
	kind, _, _, _ := harnessOf(b)
	at := func(path ...any) []any { return append([]any{"benchmarks", i}, path...) }
	wantSolver := "simple"
	switch kind {
	case "container":
		wantSolver = "container"
	case harborKind:
		wantSolver = "harbor"
	}
	if b.Solver.Type != wantSolver {
		no("solver type "+b.Solver.Type+" for "+kind+":// (it runs with solver type "+wantSolver+")", at("solver", "type")...)
		return
	}
	sv := r.Services[b.Solver.Service]
	if sv == nil {
		return // rules.go names the missing service
	}
	if r.Cluster.Shards != nil && *r.Cluster.Shards > 1 {
		no("cluster.shards > 1 with a "+kind+":// benchmark (the harness runs as one process)", "cluster", "shards")
	}
	if strings.Contains(sv.URL, "${") {
		no("${VAR} in the url of a service a "+kind+":// benchmark uses (the harness gets the URL as written)", "services", b.Solver.Service, "url")
	}
	if sv.Protocol != "chat_completions" && sv.Protocol != "completions" {
		no("protocol "+sv.Protocol+" for "+kind+":// (chat_completions or completions)", "services", b.Solver.Service, "protocol")
	}
	if kind == "lm-eval" && strings.Contains(sv.Model, ",") {
		no("a model id with a comma for lm-eval:// (lm_eval --model_args is comma-separated)", "services", b.Solver.Service, "model")
	}
	if b.ContextWindow != nil {
		no("context_window for "+kind+"://", at("context_window")...)
	}
	if sb := resolveSandbox(r, b); kind != harborKind && sb != nil && sb.Type != "none" {
		no("a sandbox for "+kind+":// (the harness runs its own code execution)", at("sandbox")...)
	}
	switch kind {
	case "lm-eval", "skills", "vlmevalkit":
		simpleHarnessUnsupported(no, r, kind, b, at)
	case "container":
		containerUnsupported(no, r, b, at)
	case harborKind:
		harborUnsupportedSolver(no, r, b, at)
	}
}

// simpleHarnessUnsupported covers lm-eval://, skills:// and vlmevalkit://,
// which take nel's max_problems, generation and scorer metrics as flags.
func simpleHarnessUnsupported(no func(string, ...any), r *Recipe, kind string, b *Benchmark, at func(...any) []any) {
	if len(b.Params) > 0 {
		no("params for "+kind+":// (nel passes max_problems, fewshot, system_prompt and generation as the harness's flags)", at("params")...)
	}
	if kind != "skills" && b.Repeats > 1 {
		no("repeats > 1 for "+kind+":// (it runs each item once)", at("repeats")...)
	}
	if kind == "vlmevalkit" {
		if b.Fewshot != nil {
			no("fewshot for vlmevalkit:// (VLMEvalKit's datasets build their own prompts)", at("fewshot")...)
		}
		if r.Services[b.Solver.Service].Protocol == "completions" {
			no("protocol completions for vlmevalkit:// (VLMEvalKit's API model posts to chat/completions)", "services", b.Solver.Service, "protocol")
		}
	}
	if kind == "skills" {
		if b.Fewshot != nil {
			no("fewshot for skills:// (NeMo-Skills sets few-shot examples in its prompt config)", at("fewshot")...)
		}
		if effectiveSystemPrompt(b) != nil {
			no("system_prompt for skills:// (NeMo-Skills sets it in its prompt config)", at("solver", "system_prompt")...)
		}
		if r.Services[b.Solver.Service].Protocol == "completions" {
			no("protocol completions for skills://", "services", b.Solver.Service, "protocol")
		}
	}
	g := EffectiveGeneration(r, b)
	if g.TopK != nil || g.Seed != nil || g.Stop != nil || g.FrequencyPenalty != nil || g.PresencePenalty != nil || len(g.ExtraBody) > 0 {
		no("generation parameters other than temperature, top_p and max_tokens for "+kind+"://", at("solver", "generation")...)
	}
	for j, m := range b.Scoring.Metrics {
		if m.Type != "scorer" {
			no("metric type "+m.Type+" for "+kind+":// (scorer metrics score the harness's responses)", at("scoring", "metrics", j, "type")...)
		}
	}
}

// containerUnsupported covers container://, whose harness takes its own
// parameters (params) and does its own scoring.
func containerUnsupported(no func(string, ...any), r *Recipe, b *Benchmark, at func(...any) []any) {
	if b.Repeats > 1 {
		no("repeats > 1 for container:// (set the harness's own repeats in params)", at("repeats")...)
	}
	if b.MaxProblems != nil {
		no("max_problems for container:// (set params.limit_samples, which the harness reads)", at("max_problems")...)
	}
	if b.Fewshot != nil {
		no("fewshot for container:// (set it in params)", at("fewshot")...)
	}
	if effectiveSystemPrompt(b) != nil || b.Solver.Generation != nil || b.Generation != nil {
		no("system_prompt or generation for container:// (set them in params, which the harness reads)", at("solver")...)
	} else if g := EffectiveGeneration(r, b); !reflect.ValueOf(g).IsZero() {
		no("the service's generation for container:// (set it in the benchmark's params, which the harness reads)", "services", b.Solver.Service, "generation")
	}
	if len(b.Scoring.Metrics) > 0 {
		no("scoring metrics for container:// (the eval-factory harness scores)", at("scoring", "metrics")...)
	}
	switch b.Solver.EndpointType {
	case "", "chat", "completions":
	default:
		no("endpoint_type "+b.Solver.EndpointType+" (chat or completions)", at("solver", "endpoint_type")...)
	}
	for _, host := range sortedKeys(b.Solver.Mounts) {
		if strings.ContainsAny(host+b.Solver.Mounts[host], ",:") {
			no("a mount path with ',' or ':' (Pyxis --container-mounts cannot carry it)", at("solver", "mounts", host)...)
		}
	}
	for _, k := range sortedKeys(b.Solver.EnvVars) {
		if !envNameRE.MatchString(k) {
			no("env_vars name "+k+" (want a variable name)", at("solver", "env_vars", k)...)
		}
		if v := b.Solver.EnvVars[k]; strings.Contains(v, "${") {
			if _, ok := parseWholeEnvRef(v); !ok {
				no("${VAR} inside a longer value (write the whole value as ${VAR})", at("solver", "env_vars", k)...)
			}
		}
	}
}

// allHarness reports whether every benchmark of r runs a peer harness.
func allHarness(r *Recipe) bool {
	for _, b := range r.Benchmarks {
		if !IsHarness(b) {
			return false
		}
	}
	return len(r.Benchmarks) > 0
}

// harnessOffSLURM refuses the harness benchmarks of a recipe compiled to
// a Makefile: a job starts a harness as a Pyxis container step of a SLURM
// job (nel run starts it with docker or apptainer). what names the
// target.
func harnessOffSLURM(s *Source, what string) error {
	c := &ruleChecker{s: s, r: s.Recipe}
	for i, b := range s.Recipe.Benchmarks {
		if kind, _, _, ok := harnessOf(b); ok {
			c.at("not supported yet: "+kind+":// benchmarks in "+what+" (a job runs the harness in its container image under Pyxis: compile with -t slurm, or run it here with nel run, which uses docker or apptainer)", "benchmarks", i, "name")
		}
	}
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs.sorted()
}
