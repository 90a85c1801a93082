package compiler

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	"github.com/nel-eval/nel/runtime/harness"
)

// A harbor:// benchmark with the harbor solver is run whole by the Harbor
// CLI (`harbor run`), as a peer harness: the job starts the CLI in its
// image, the CLI fetches the dataset NAME@VERSION from Harbor's registry,
// starts each task's container through the node's docker daemon, runs the
// named agent against the service and the task's verifier, and writes one
// folder per trial; nel-run ingest reads each trial's result.json
// (runtime/harness/harbor.go). This is what lets NeMo Evaluator's
// SWE-bench and Terminal-Bench playbooks compile without their datasets
// on this machine: the registry's name and version are what the hashes
// cover, as they are what Harbor downloads.
//
// The settings go to the CLI as a job config file (Harbor's JobConfig, in
// JSON) besides the dataset and limit flags: the agent's name, model,
// kwargs, timeouts and environment have no flags of their own. repeats
// are Harbor's attempts (n_attempts): that many trials of each task.

// harborKind is the harness kind of a harbor-solver benchmark.
const harborKind = harness.Harbor

// The job config is written into the harness's folder as
// harnessConfigFile; the step writes harborJobFile from it with the URL
// filled in.
const (
	harborJobFile = "job.json"
)

// harborScript is the step's script after the harness prelude: the job
// config with the URL filled in (as text), the endpoint where LiteLLM in
// the CLI's own process looks for it, the key's name defined (the config
// refers to it), a local dataset's folder put in for harborTasksRef, then
// the CLI, writing its trials into the harness's folder by its path on
// the node.
const harborScript = `cfg=$(cat ` + harnessConfigFile + `)
printf '%s\n' "${cfg//"$u"/"$NEL_HARNESS_URL"}" > ` + harborJobFile + `
export OPENAI_API_BASE="$NEL_HARNESS_URL" OPENAI_BASE_URL="$NEL_HARNESS_URL"
export NEL_HARNESS_API_KEY="${NEL_HARNESS_API_KEY:-}"
t='` + harborTasksRef + `'
args=("${args[@]//"$t"/"${` + harborTasksEnv + `:-}"}")
exec "${args[@]}" --jobs-dir "$` + harborJobsDirEnv + `"
`

// harborTasksEnv names a Harbor dataset's folder on this machine by its
// path on the node, where the step mounts it too (read-only); the CLI's
// --path carries harborTasksRef, which the step replaces by it.
const (
	harborTasksEnv = "NEL_HARBOR_TASKS"
	harborTasksRef = "${" + harborTasksEnv + "}"
)

// harborTasksDir is where the job finds benchmark b's local dataset,
// relative to where it runs (as the plan's recipe_dir is) or absolute;
// "" for a registry dataset.
func harborTasksDir(recipeDir string, b *Benchmark) string {
	if b.harborDir == "" || path.IsAbs(b.harborDir) {
		return b.harborDir
	}
	return path.Join(recipeDir, b.harborDir)
}

// harborJobsDirEnv names the harness's folder by its path on the node
// (the Harbor CLI's --jobs-dir), where the folder is mounted too.
const harborJobsDirEnv = "NEL_HARBOR_JOBS_DIR"

// harborDockerSocket is the node's docker daemon, mounted into the CLI's
// container: Harbor starts each task's container through it.
const harborDockerSocket = "/var/run/docker.sock"

// defaultHarborImage is NeMo Evaluator's "full" evaluation image
// (resources/containers.toml: {registry}:{tag}-full), which installs its
// harbor extra and so the Harbor CLI. The CLI's docker environment also
// needs the docker CLI with compose in the image; cluster.eval_image
// replaces it with one that has both.
const defaultHarborImage = "nvcr.io/nvidia/nemo-evaluator:latest-full"

// harborArgv is the CLI's command line: the job config, the registry
// dataset, the limit. The jobs dir is added by the step, which knows the
// folder's path on the node.
func harborArgv(b *Benchmark, dataset string) []string {
	argv := []string{"harbor", "run", "--config", harnessInside + "/" + harborJobFile, "--dataset", dataset}
	if b.harborDir != "" || b.harborGit {
		argv[4], argv[5] = "--path", harborTasksRef
	}
	if b.MaxProblems != nil {
		argv = append(argv, "--n-tasks", strconv.Itoa(*b.MaxProblems))
	}
	return argv
}

// harborConfig is the Harbor job config of benchmark b: one agent, the
// docker environment, the concurrency.
func harborConfig(r *Recipe, b *Benchmark, model string) (string, error) {
	agent := map[string]any{
		"name":       b.Solver.Agent,
		"model_name": "openai/" + model, // LiteLLM's OpenAI-compatible provider
		// An installed agent runs in the task's container and reaches
		// the service through these; the key stays a reference that
		// Harbor resolves from its own environment.
		"env": map[string]string{
			"OPENAI_API_BASE": harnessURLRef,
			"OPENAI_BASE_URL": harnessURLRef,
			"OPENAI_API_KEY":  "${NEL_HARNESS_API_KEY}",
		},
	}
	if len(b.Solver.AgentKwargs) > 0 {
		agent["kwargs"] = b.Solver.AgentKwargs
	}
	for k, v := range harborTimeouts(r, b) {
		agent[k] = v
	}
	cfg := map[string]any{
		"job_name":     harness.HarborJob, // the folder of its trials, where ingest reads them
		"n_attempts":   max(b.Repeats, 1), // each attempt a repeat (runtime/harness numbers them)
		"orchestrator": map[string]any{"type": "local", "n_concurrent_trials": max(b.MaxConcurrent, 1)},
		"environment":  map[string]any{"type": "docker", "delete": true},
		"agents":       []any{agent},
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	return string(out), err
}

// harborTimeouts are the agent's timeout fields per the solver's
// timeout_strategy (NeMo Evaluator's): "override" (the default) gives
// run_timeout, else the sandbox's timeout, over the task's own; "task"
// keeps the task's. max_agent_timeout caps either. "max" is refused
// (support): Harbor takes one override or the task's value, never the
// larger of the two.
func harborTimeouts(r *Recipe, b *Benchmark) map[string]float64 {
	out := map[string]float64{}
	if b.Solver.TimeoutStrategy == "" || b.Solver.TimeoutStrategy == "override" {
		switch sb := resolveSandbox(r, b); {
		case b.Solver.RunTimeout != nil:
			out["override_timeout_sec"] = *b.Solver.RunTimeout
		case sb != nil && sb.Timeout > 0:
			out["override_timeout_sec"] = sb.Timeout
		}
	}
	if b.Solver.MaxAgentTimeout != nil {
		out["max_timeout_sec"] = *b.Solver.MaxAgentTimeout
	}
	return out
}

// harborMethodOf is what the hash covers of a harbor-solver benchmark
// besides kind, task and image: the agent and its settings.
func harborMethodOf(r *Recipe, b *Benchmark) map[string]any {
	return map[string]any{"agent": b.Solver.Agent, "agent_kwargs": b.Solver.AgentKwargs,
		"timeouts": harborTimeouts(r, b), "environment": "docker"}
}

// harborUnsupportedSolver refuses what a harbor-solver benchmark asks for
// that the Harbor CLI cannot be given, rather than dropping it.
func harborUnsupportedSolver(no func(string, ...any), r *Recipe, b *Benchmark, at func(...any) []any) {
	s := b.Solver
	// A harbor solver without a sandbox is an error (rules.go), as in
	// NeMo Evaluator.
	switch sb := resolveSandbox(r, b); {
	case sb == nil:
	case sb.Type == "docker":
		harborDockerSandbox(no, sb, at)
	case sb.Type == "ecs_fargate":
		no("solver type harbor in an ecs_fargate sandbox (the Harbor CLI starts task containers through a docker daemon on the node; nel-run starts no docker in its ecs_fargate tasks: use sandbox type docker, or solver type tool_calling, whose sessions run in ecs_fargate tasks)", at("sandbox")...)
	default:
		no(fmt.Sprintf("solver type harbor in %s sandbox (the Harbor CLI starts task containers through a docker daemon on the node: use sandbox type docker, or the tool_calling solver in this sandbox)", article(sb.Type)), at("sandbox")...)
	}
	if s.CmdTimeout != nil {
		no("cmd_timeout with solver type harbor (NeMo Evaluator patches the OpenHands SDK in the sandbox for it; the Harbor CLI has no such setting: drop it with cmd_timeout: null)", at("solver", "cmd_timeout")...)
	}
	if s.TimeoutStrategy == "max" {
		no("timeout_strategy max with solver type harbor (Harbor takes either an override or the task's timeout, not the larger: use override or task, with max_agent_timeout as a cap)", at("solver", "timeout_strategy")...)
	}
	if len(s.ContainerEnv) > 0 {
		no("container_env with solver type harbor (nel passes the agent only the endpoint and its key)", at("solver", "container_env")...)
	}
	for _, f := range []struct{ name, value string }{{"skill", s.Skill}, {"skill_dir", s.SkillDir}} {
		if f.value != "" {
			no("skill and skill_dir with solver type harbor (NeMo Evaluator uploads the skill into the task's container before the agent starts; the Harbor CLI has no such setting)", at("solver", f.name)...)
		}
	}
	if len(withoutGitParams(b)) > 0 {
		no("params with solver type harbor (the Harbor CLI takes none)", at("params")...)
	}
	if len(b.Scoring.Metrics) > 0 {
		no("scoring metrics with solver type harbor (the reward is what each task's verifier writes)", at("scoring", "metrics")...)
	}
}

// harborDockerSandbox refuses the docker sandbox settings Harbor would
// not apply: it takes each task's image and network from the task.
// memory and cpus have defaults, so a recipe's own cannot be told from
// them; Harbor sizes each container from task.toml.
func harborDockerSandbox(no func(string, ...any), sb *Sandbox, at func(...any) []any) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"image", sb.Image != "" || sb.ImageTemplate != ""}, {"network", sb.Network != "" && sb.Network != "bridge"}, {"node_pool", sb.NodePool != ""}, {"container_env", len(sb.ContainerEnv) > 0}} {
		if f.set {
			no(fmt.Sprintf("sandbox %s with solver type harbor (Harbor sets up each task's container from the task's own environment)", f.name), at("sandbox")...)
		}
	}
}
