package compiler

import (
	"fmt"
	"slices"
	"strings"
)

// localImages is why a local cluster refuses a managed service's image
// (gym.go's gym services too).
const localImages = "container images on a local cluster (run it with cluster.type slurm, or drop image)"

// Features that load (so NeMo Evaluator configs validate unchanged) but
// that this nel cannot run yet. compile refuses them with the feature and
// where it is; validate reports them as notes. target is the compile
// target ("" for none).
func unsupported(s *Source, target string) Errors {
	c := &ruleChecker{s: s, r: s.Recipe}
	no := func(feature string, path ...any) {
		c.at("not supported yet: "+feature, path...)
	}
	r := s.Recipe
	for _, name := range sortedKeys(r.Services) {
		sv := r.Services[name]
		switch sv.Type {
		case "api", "vllm", "sglang", "trt_llm", "process", "dynamo", "nim":
		case "gym":
			gymUnsupported(no, r, target, name, sv)
			continue
		default:
			no("service type "+sv.Type, "services", name, "type")
			continue
		}
		if len(sv.Interceptors) > 0 {
			no("interceptors", "services", name, "interceptors")
		}
		proxyUnsupported(no, name, sv)
		if sv.ProxyVerbose != nil && *sv.ProxyVerbose {
			no("proxy_verbose", "services", name, "proxy_verbose")
		}
		setupUnsupported(no, name, sv)
		instancesUnsupported(no, name, sv, r.Cluster.Type, target)
		if sv.Gpus != nil {
			no("gpus (use node pools with gres)", "services", name, "gpus")
		}
		if sv.NumNodes > 1 && sv.Type != "vllm" && sv.Type != "dynamo" {
			no(fmt.Sprintf("multi-node %s (num_nodes > 1 works for vllm and dynamo)", sv.Type), "services", name, "num_nodes")
		}
		if c.dynamoNimSupport(no, name, sv) {
			continue
		}
		// Kubernetes runs a server in its image wherever the recipe
		// meant to run. A process whose command starts its image itself
		// (docker run IMAGE …, as a launcher deployment runs locally)
		// needs nothing of the cluster: the field is what nel lock pins.
		if sv.Managed() && r.Cluster.Type == "local" && sv.Image != "" && target != "k8s" && !slices.Contains(sv.Command, sv.Image) {
			no(localImages, "services", name, "image")
		}
		if strings.Contains(sv.URL, "${") {
			for _, ref := range envRefsIn(sv.URL) {
				if ref == "" {
					no("${…} text in url other than ${VAR} or ${VAR:-default}", "services", name, "url")
				}
			}
		}
		c.extraEnv(sv.ExtraEnv, "services", name, "extra_env")
	}
	for _, p := range s.deferredRefs {
		if !nodeResolves(r, p) && !paramsServiceRef(r, p) {
			no("$${VAR} here (nel resolves a ${VAR} on the node only in url, api_key and environment values, in a dynamo or nim model and image, and in setup_commands and pre_cmd; here it would stay literal text)", p...)
		}
	}
	for _, name := range sortedKeys(r.Sandboxes) {
		unsupportedSandbox(r.Sandboxes[name], no, "sandboxes", name)
	}
	for i, b := range r.Benchmarks {
		benchmarkUnsupported(no, r, i, b)
		harborUnsupported(no, s, i, b)
		instructionUnsupported(no, s, i, b)
		itemTasksUnsupported(no, r, i, b)
		imageTemplateUnsupported(no, r, i, b)
	}
	unsupportedCluster(r, no)
	if r.Cluster.Type != "local" { // a local cluster's container_env is refused whole
		c.extraEnv(r.Cluster.ContainerEnv, "cluster", "container_env")
	}
	if r.Output.Timestamped {
		no("output.timestamped (a compiled job must be byte-identical; put the run id in output.dir)", "output", "timestamped")
	}
	return c.errs.sorted()
}

// setupUnsupported refuses the setup_commands and pre_cmd that the job
// could not run where the server starts (withSetup wraps one command).
func setupUnsupported(no func(string, ...any), name string, sv *Service) {
	field := "setup_commands"
	if sv.PreCmd != "" {
		field = "pre_cmd"
		if len(sv.SetupCommands) > 0 {
			// NeMo Evaluator drops setup_commands then; nel says so instead.
			no("setup_commands together with pre_cmd (pre_cmd replaces the whole start script, so NeMo Evaluator would skip setup_commands: put them at the top of pre_cmd)", "services", name, "setup_commands")
		}
	} else if len(sv.SetupCommands) == 0 {
		return
	}
	switch {
	case sv.Type == "dynamo":
		no(field+" on a dynamo service (it starts NATS, etcd, a frontend and workers, each its own step)", "services", name, field)
	case sv.NumNodes > 1 && !sv.onEveryNode():
		no(field+" on a multi-node service (the Ray workers on the other nodes would start without them)", "services", name, field)
	}
}

// unsupportedCluster names what nel cannot do of r's cluster.
func unsupportedCluster(r *Recipe, no func(string, ...any)) {
	cl := r.Cluster
	if cl.Type == "local" && len(cl.ContainerEnv) > 0 {
		no("container_env on a local cluster (nel run does not set it; export the variables before nel run)", "cluster", "container_env")
	}
	switch cl.Type {
	case "docker":
		no("cluster type docker", "cluster", "type")
	case "slurm":
		if cl.CondaEnv != "" {
			no("conda_env (nel-run needs no Python)", "cluster", "conda_env")
		}
		if cl.EvalImage != "" && !allHarness(r) {
			no("eval_image for nel's own benchmarks (nel-run is a static binary and runs on the node; eval_image sets the image of lm-eval://, skills:// and vlmevalkit:// benchmarks only)", "cluster", "eval_image")
		}
		if cl.Hostname != "" {
			no("remote submission (hostname); pipe nel compile to sbatch on the login node", "cluster", "hostname")
		}
	}
}

// unsupportedSandbox names the fields of sandbox sb (at path) that nel-run
// cannot honour: the lifecycle options of NeMo Evaluator's agentic
// benchmarks, which no nel solver has yet.
func unsupportedSandbox(sb *Sandbox, no func(string, ...any), path ...any) {
	at := func(field ...any) []any { return append(slices.Clone(path), field...) }
	switch sb.Type {
	case "none":
		return
	case "custom":
		no("sandbox type "+sb.Type, at("type")...)
		return
	case "ecs_fargate":
		unsupportedECS(sb, no, at)
	}
	for _, k := range sortedKeys(sb.ContainerEnv) {
		if strings.Contains(sb.ContainerEnv[k], "${") {
			no("${VAR} in a sandbox's container_env (nel-run gives the sandbox the text as written)", at("container_env", k)...)
		}
	}
	switch sb.Type {
	case "apptainer":
		if sb.NodePool != "" {
			// A pool of sandbox servers on those nodes (isSandboxPool):
			// sif_cache_dir is their APPTAINER_CACHEDIR, slots_per_node
			// their slots.
			break
		}
		if sb.SlotsPerNode != 4 {
			no("slots_per_node on an apptainer sandbox (it sizes a pool of sandbox nodes; nel-run runs apptainer on the shards' nodes, concurrency jobs at a time)", at("slots_per_node")...)
		}
	}
	// image_template is checked per benchmark (imageTemplateUnsupported):
	// it is nel's for byob tasks.
	const agentic = " (a lifecycle option of NeMo Evaluator's agentic sandboxes, which nel's agent solvers do not apply yet)"
	if sb.CaptureCmd != "" {
		no("capture_cmd"+agentic, at("capture_cmd")...)
	}
	if sb.Stateful {
		no("stateful sandboxes"+agentic, at("stateful")...)
	}
	if sb.ScrubGitHistory {
		no("scrub_git_history"+agentic, at("scrub_git_history")...)
	}
	if sb.VerifyTimeout != 600 {
		no("verify_timeout"+agentic, at("verify_timeout")...)
	}
}

// extraEnv refuses a ${VAR} reference inside a longer value: the job
// exports a variable either as written or as another one's value.
func (c *ruleChecker) extraEnv(env map[string]string, path ...any) {
	for _, k := range sortedKeys(env) {
		if _, ok := parseWholeEnvRef(env[k]); !ok && strings.Contains(env[k], "${") {
			c.at("not supported yet: ${VAR} inside a longer value (write the whole value as ${VAR})", append(path, k)...)
		}
	}
}

// envWords refuses the ${…} text in a managed server's model and image
// that the job script cannot leave to the node's shell: only a plain
// ${VAR} becomes "${VAR}" there (shellWord).
func (c *ruleChecker) envWords(name string, sv *Service) {
	for _, f := range []struct{ field, v string }{{"model", sv.Model}, {"image", sv.Image}} {
		if !refsInWords(sv) || !strings.Contains(f.v, "${") {
			continue
		}
		for _, ref := range envRefsIn(f.v) {
			if ref == "" || strings.Contains(f.v, "${"+ref+":-") {
				c.at("not supported yet: ${…} text in "+f.field+" other than ${VAR} (no default: the variable must be set where the job runs)", "services", name, f.field)
				break
			}
		}
	}
}

// benchmarkUnsupported refuses what benchmark i asks for that nel cannot
// run yet.
func benchmarkUnsupported(no func(feature string, path ...any), r *Recipe, i int, b *Benchmark) {
	kind, _, _, isHarness := harnessOf(b)
	if isHarness {
		harnessUnsupported(no, r, i, b)
		harnessProxyPaths(no, b.Solver.Service, r.Services[b.Solver.Service])
	} else {
		if pythonBenchmark(b.Name) {
			no("a Python benchmark file (NeMo Evaluator's path/file.py[:NAME]; nel-run runs no Python: declare it with byob, docs/byob.md)", "benchmarks", i, "name")
		}
		if k, ok := benchmarkSource(b.Name); ok && !k.Supported {
			scheme, _, _ := strings.Cut(b.Name, "://")
			no("benchmark source "+scheme+":// ("+k.About+")", "benchmarks", i, "name")
		}
		if strings.HasPrefix(b.Name, "gym://") && gymServiceRef(r, b.Name) == "" {
			gymNameUnsupported(no, i, b.Name)
		}
		switch {
		case b.Solver.Type == "simple":
		case b.Solver.Type == "tool_calling":
			nemoNameUnsupported(no, i, b)
			toolCallingUnsupported(no, r, i, b)
		case b.Solver.Type == "gym_delegation":
			nemoNameUnsupported(no, i, b)
		case b.Solver.Type == "openclaw":
			openClawUnsupported(no, r, i, b)
		case b.Solver.Type == "harbor":
			no("solver type harbor on a benchmark other than harbor:// tasks ("+nemoHarborBenchmark(b.Name)+"the Harbor CLI runs a Harbor dataset: name it harbor://NAME@VERSION)", "benchmarks", i, "solver", "type")
		default:
			no("solver type "+b.Solver.Type, "benchmarks", i, "solver", "type")
		}
	}
	if kind != "vlmevalkit" && b.Solver.ImageDetail != "" && b.Solver.ImageDetail != "auto" {
		no("image_detail outside vlmevalkit:// (nel's own simple solver sends no images; VLMEvalKit's API model takes it as img_detail)", "benchmarks", i, "solver", "image_detail")
	}
	if b.Verifier != "" {
		no("verifier", "benchmarks", i, "verifier")
	}
	if _, ok := b.Sandbox.(map[string]any); ok {
		unsupportedSandbox(resolveSandbox(r, b), no, "benchmarks", i, "sandbox")
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
func Unsupported(s *Source) Errors { return unsupported(s, "") }

// nodeResolves says whether the string at path p may keep a literal ${VAR}
// (written $${VAR}) for the node to resolve: a service's url, a dynamo or
// nim service's model and image, which the job's shell expands after
// checking the variable is set (dynamo.go's shellWord), and the shell
// commands of setup_commands and pre_cmd, as NeMo Evaluator's script runs them.
func nodeResolves(r *Recipe, p []any) bool {
	if len(p) == 4 && p[0] == "services" && p[2] == "setup_commands" {
		return true // shell commands, run by the node's shell
	}
	if len(p) != 3 || p[0] != "services" {
		return false
	}
	switch p[2] {
	case "url", "pre_cmd":
		return true
	case "model", "image":
		name, _ := p[1].(string)
		sv := r.Services[name]
		return sv != nil && refsInWords(sv)
	}
	return false
}
