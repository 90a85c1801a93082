package compiler

import (
	"fmt"
	"strings"
)

// Features that load (so NeMo Evaluator configs validate unchanged) but
// that this nel cannot run yet. compile refuses them with the feature and
// where it is; validate reports them as notes.
func unsupported(s *Source) Errors {
	c := &ruleChecker{s: s, r: s.Recipe}
	no := func(feature string, path ...any) {
		c.at("not supported yet: "+feature, path...)
	}
	r := s.Recipe
	for _, name := range sortedKeys(r.Services) {
		sv := r.Services[name]
		switch sv.Type {
		case "api", "vllm", "sglang", "trt_llm", "process":
		default:
			no("service type "+sv.Type, "services", name, "type")
			continue
		}
		if len(sv.Interceptors) > 0 {
			no("interceptors", "services", name, "interceptors")
		}
		if sv.Proxy != nil {
			no("proxy", "services", name, "proxy")
		}
		if sv.ProxyVerbose != nil && *sv.ProxyVerbose {
			no("proxy_verbose", "services", name, "proxy_verbose")
		}
		if len(sv.SetupCommands) > 0 {
			no("setup_commands", "services", name, "setup_commands")
		}
		if sv.PreCmd != "" {
			no("pre_cmd", "services", name, "pre_cmd")
		}
		if sv.Gpus != nil {
			no("gpus (use node pools with gres)", "services", name, "gpus")
		}
		if sv.NumNodes > 1 && sv.Type != "vllm" {
			no(fmt.Sprintf("multi-node %s (num_nodes > 1 works for vllm)", sv.Type), "services", name, "num_nodes")
		}
		if sv.Managed() && r.Cluster.Type == "local" && sv.Image != "" {
			no("container images on a local cluster (run it with cluster.type slurm, or drop image)", "services", name, "image")
		}
		if strings.Contains(sv.URL, "${") {
			for _, ref := range envRefsIn(sv.URL) {
				if ref == "" {
					no("${…} text in url other than ${VAR} or ${VAR:-default}", "services", name, "url")
				}
			}
		}
		for _, k := range sortedKeys(sv.ExtraEnv) {
			if _, ok := parseWholeEnvRef(sv.ExtraEnv[k]); !ok && strings.Contains(sv.ExtraEnv[k], "${") {
				no("${VAR} inside a longer value (write the whole value as ${VAR})", "services", name, "extra_env", k)
			}
		}
	}
	for _, name := range sortedKeys(r.Sandboxes) {
		if t := r.Sandboxes[name].Type; t == "ecs_fargate" || t == "custom" {
			no("sandbox type "+t, "sandboxes", name, "type")
		}
	}
	for i, b := range r.Benchmarks {
		benchmarkUnsupported(no, r, i, b)
	}
	cl := r.Cluster
	switch cl.Type {
	case "docker":
		no("cluster type docker", "cluster", "type")
	case "slurm":
		if cl.CondaEnv != "" {
			no("conda_env (nel-run needs no Python)", "cluster", "conda_env")
		}
		if cl.EvalImage != "" && !allHarness(r) {
			no("eval_image for nel's own benchmarks (nel-run is a static binary and runs on the node; eval_image sets the image of lm-eval:// and skills:// benchmarks only)", "cluster", "eval_image")
		}
		if cl.Hostname != "" {
			no("remote submission (hostname); pipe nel compile to sbatch on the login node", "cluster", "hostname")
		}
	}
	if r.Output.Timestamped {
		no("output.timestamped (a compiled job must be byte-identical; put the run id in output.dir)", "output", "timestamped")
	}
	if len(r.Output.Export) > 0 {
		no("output.export", "output", "export")
	}
	return c.errs.sorted()
}

// benchmarkUnsupported refuses what benchmark i asks for that nel cannot
// run yet.
func benchmarkUnsupported(no func(feature string, path ...any), r *Recipe, i int, b *Benchmark) {
	if _, _, _, ok := harnessOf(b.Name); ok {
		harnessUnsupported(no, r, i, b)
	} else {
		if scheme, _, ok := strings.Cut(b.Name, "://"); ok && scheme == "vlmevalkit" {
			no("benchmark source vlmevalkit:// (nel does not drive VLMEvalKit's run.py against an endpoint yet, nor read its per-item predictions, .xlsx by default)", "benchmarks", i, "name")
		} else if ok && scheme != "hf" && scheme != "file" {
			no("benchmark source "+scheme+"://", "benchmarks", i, "name")
		}
		if b.Solver.Type != "simple" {
			no("solver type "+b.Solver.Type, "benchmarks", i, "solver", "type")
		}
	}
	if b.Solver.ImageDetail != "" && b.Solver.ImageDetail != "auto" {
		no("image_detail (vision models)", "benchmarks", i, "solver", "image_detail")
	}
	if b.Playbook != "" {
		no("playbook", "benchmarks", i, "playbook")
	}
	if b.Verifier != "" {
		no("verifier", "benchmarks", i, "verifier")
	}
	if b.InstructionTemplate != nil {
		no("instruction_template", "benchmarks", i, "instruction_template")
	}
	if m, ok := b.Sandbox.(map[string]any); ok {
		if t, _ := m["type"].(string); t == "ecs_fargate" || t == "custom" {
			no("sandbox type "+t, "benchmarks", i, "sandbox", "type")
		}
	}
	for j, m := range b.Scoring.Metrics {
		switch m.Type {
		case "scorer":
		case "judge":
			if m.SwapCheck {
				no("swap_check on a judge metric (it applies to pairwise judges; a judge metric scores one response)", "benchmarks", i, "scoring", "metrics", j, "swap_check")
			}
		case "pairwise_judge", "ensemble_judge":
			no("metric type "+m.Type+" (nel-run runs judge metrics, one service each: use type \"judge\")", "benchmarks", i, "scoring", "metrics", j, "type")
		default:
			no("metric type "+m.Type, "benchmarks", i, "scoring", "metrics", j, "type")
		}
	}
}

// parseWholeEnvRef parses a value that is exactly ${VAR} or ${VAR:-default}.
func parseWholeEnvRef(s string) (ref struct {
	Name    string
	Default *string
}, ok bool) {
	m := envRefRE.FindStringSubmatch(s)
	if m == nil || m[0] != s {
		return ref, false
	}
	ref.Name = m[1]
	if m[2] != "" {
		d := m[3]
		ref.Default = &d
	}
	return ref, true
}

// envRefsIn lists the variable names of the ${…} references in s; "" for
// one that is not a plain ${VAR} or ${VAR:-default}.
func envRefsIn(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return out
		}
		s = s[i:]
		m := envRefRE.FindStringSubmatch(s)
		if m == nil || !strings.HasPrefix(s, m[0]) {
			out = append(out, "")
			s = s[2:]
			continue
		}
		out = append(out, m[1])
		s = s[len(m[0]):]
	}
}

// Unsupported lists the features of a valid recipe that nel compile
// refuses (it runs them in a later version); nel validate shows them as notes.
func Unsupported(s *Source) Errors { return unsupported(s) }
