package compiler

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
)

// Benchmarks whose name is a peer harness's URI run that harness in its
// own container image, as NeMo Evaluator's SLURM scripts do: lm-eval://task
// (lm-evaluation-harness against the service's OpenAI-compatible endpoint,
// samples logged), skills://benchmark (NeMo-Skills' ns eval) and
// container://image#task (an eval-factory image's run_eval with a legacy
// run_config) and vlmevalkit://dataset (VLMEvalKit's run.py, through its
// OpenAI-compatible API model: harness_vlmevalkit.go). nel-run ingest then
// reads what the harness wrote.
//
// The benchmark hash covers what decides such a benchmark's methodology:
// the benchmark fields every benchmark hashes (name, max_problems,
// fewshot, repeats, system prompt, generation, params, scoring), plus the
// "harness" entry: kind, task, image (by digest once nel lock pinned it,
// as benchmarks[i].harness.image or cluster.eval_image), the endpoint
// type, the container solver's adapter_config, and the harness arguments
// that are methodology (lmEvalMethodArgs, skillsMethodArgs). The model id,
// endpoint URL and concurrency are left out, as for every benchmark.

// harnessInside is where the harness's folder is mounted in its container.
const harnessInside = "/nel-harness"

// harnessConfigFile is the container harness's run_config as the job
// writes it into the harness's folder, with harnessURLRef in its url; the
// step writes run_config.yaml from it with the URL filled in.
const harnessConfigFile = "run_config.json"

// harnessURLRef is the text the harness's argv and config carry for the
// service's base URL, which the job knows only once its servers are up:
// the harness step substitutes $NEL_HARNESS_URL for it.
const harnessURLRef = "${NEL_HARNESS_URL}"

// defaultHarnessImage is the image of a kind as NeMo Evaluator's
// resources/containers.toml names it ({registry}:{tag}-<variant>);
// cluster.eval_image replaces it.
func defaultHarnessImage(kind string) string {
	switch kind {
	case "lm-eval":
		return "nvcr.io/nvidia/nemo-evaluator:latest-lm-eval"
	case "skills":
		return "nvcr.io/nvidia/nemo-evaluator:latest-skills"
	case "vlmevalkit":
		return "nvcr.io/nvidia/nemo-evaluator:latest" // the base image, "Base + gym + vlmevalkit"
	case harborKind:
		return defaultHarborImage
	}
	return ""
}

// harnessOf says which peer harness runs benchmark b, and its task (and
// image, for container://); ok is false for other benchmarks. A
// harbor:// benchmark with the harbor solver is one: the Harbor CLI runs
// it whole (harness_harbor.go).
func harnessOf(b *Benchmark) (kind, task, image string, ok bool) {
	if dataset, isHarbor := harborOf(b.Name); isHarbor && b.Solver.Type == "harbor" {
		return harborKind, dataset, "", true
	}
	if b.Solver.Type == "harbor" && gitTasks(b.Name) {
		// The Harbor CLI runs the folder nel-run makes of the repository
		// on the node (harbor-tasks) before it starts.
		return harborKind, b.Name, "", true
	}
	return harnessOfName(b.Name)
}

// harnessOfName is harnessOf by the benchmark's name alone.
func harnessOfName(name string) (kind, task, image string, ok bool) {
	scheme, rest, found := strings.Cut(name, "://")
	if !found {
		return "", "", "", false
	}
	switch scheme {
	case "lm-eval", "skills", "vlmevalkit":
		return scheme, rest, "", true
	case "container":
		image, task, _ = strings.Cut(rest, "#")
		return scheme, task, image, true
	}
	return "", "", "", false
}

// IsHarness reports whether a peer harness runs benchmark b: its data is
// then the harness's own, in its image (which nel lock pins), not
// something nel reads.
func IsHarness(b *Benchmark) bool {
	_, _, _, ok := harnessOf(b)
	return ok
}

// harnessImage is the image a harness benchmark runs in: pinned by the
// lock, else the one container:// names, else cluster.eval_image, else
// the kind's default.
func harnessImage(r *Recipe, b *Benchmark) string {
	kind, _, uriImage, _ := harnessOf(b)
	switch {
	case b.harnessImage != "":
		return b.harnessImage
	case kind == "container":
		return uriImage
	case r.Cluster.EvalImage != "":
		return r.Cluster.EvalImage
	}
	return defaultHarnessImage(kind)
}

// harnessImageFields are the harness images a lock pins besides
// cluster.eval_image (pinned as that field): a container:// image and a
// default one, as "benchmarks[i].harness.image".
func harnessImageFields(r *Recipe) []ImageField {
	var out []ImageField
	for i, b := range r.Benchmarks {
		kind, _, _, ok := harnessOf(b)
		if !ok || (kind != "container" && r.Cluster.EvalImage != "") {
			continue
		}
		out = append(out, ImageField{Field: fmt.Sprintf("benchmarks[%d].harness.image", i), Ref: harnessImage(r, b),
			path: []any{"benchmarks", i, "name"}, set: func(v string) { b.harnessImage = v }})
	}
	return out
}

// planHarness is a harness benchmark's plan entry; nil for others.
func planHarness(r *Recipe, b *Benchmark) (*plan.Harness, error) {
	kind, task, _, ok := harnessOf(b)
	if !ok {
		return nil, nil
	}
	h := &plan.Harness{Kind: kind, Task: task, Image: harnessImage(r, b)}
	sv := r.Services[b.Solver.Service]
	model := sv.Model
	if sv.Managed() {
		model = servedName(b.Solver.Service, sv)
	}
	switch kind {
	case "lm-eval":
		h.Argv = lmEvalArgv(r, b, sv, model, task)
	case "skills":
		h.Argv = skillsArgv(r, b, model, task)
	case "container":
		h.Argv = []string{"nemo-evaluator", "run_eval", "--run_config", harnessInside + "/run_config.yaml"}
		cfg, err := containerRunConfig(b, sv, model, task)
		if err != nil {
			return nil, fmt.Errorf("%s: run_config: %w", b.Name, err)
		}
		h.Config = cfg
	case "vlmevalkit":
		h.Argv = vlmevalkitArgv(b, task)
		cfg, err := vlmevalkitConfig(r, b, model)
		if err != nil {
			return nil, fmt.Errorf("%s: driver config: %w", b.Name, err)
		}
		h.Config = cfg
	case harborKind:
		h.Argv = harborArgv(b, task)
		cfg, err := harborConfig(r, b, model)
		if err != nil {
			return nil, fmt.Errorf("%s: harbor job config: %w", b.Name, err)
		}
		h.Config = cfg
	}
	return h, nil
}

// lmEvalArgv runs lm-evaluation-harness against the service's chat (or
// completions) endpoint with every sample logged.
func lmEvalArgv(r *Recipe, b *Benchmark, sv *Service, model, task string) []string {
	modelType, path := "local-chat-completions", "/chat/completions"
	if sv.Protocol == "completions" {
		modelType, path = "local-completions", "/completions"
	}
	args := "model=" + model + ",base_url=" + harnessURLRef + path +
		",num_concurrent=" + strconv.Itoa(b.MaxConcurrent) + ",max_retries=3,tokenized_requests=False"
	argv := []string{"lm_eval", "--model", modelType, "--model_args", args, "--tasks", task}
	argv = append(argv, lmEvalMethodArgs(r, b, sv)...)
	return append(argv, "--output_path", harnessInside, "--log_samples")
}

// lmEvalMethodArgs are lm_eval's arguments that are methodology.
func lmEvalMethodArgs(r *Recipe, b *Benchmark, sv *Service) []string {
	var argv []string
	if sv.Protocol != "completions" {
		argv = append(argv, "--apply_chat_template")
	}
	if b.MaxProblems != nil {
		argv = append(argv, "--limit", strconv.Itoa(*b.MaxProblems))
	}
	if b.Fewshot != nil {
		argv = append(argv, "--num_fewshot", strconv.Itoa(*b.Fewshot))
	}
	if sp := effectiveSystemPrompt(b); sp != nil {
		argv = append(argv, "--system_instruction", *sp)
	}
	if kw := genArgs(EffectiveGeneration(r, b), "temperature=", "top_p=", "max_gen_toks="); len(kw) > 0 {
		argv = append(argv, "--gen_kwargs", strings.Join(kw, ","))
	}
	return argv
}

// skillsArgv runs NeMo-Skills' ns eval locally in its image (no cluster
// config: ns runs the generation and evaluation steps in place).
func skillsArgv(r *Recipe, b *Benchmark, model, task string) []string {
	argv := []string{"ns", "eval", "--server_type=openai", "--model=" + model,
		"--server_address=" + harnessURLRef, "--output_dir=" + harnessInside,
		"++max_concurrent_requests=" + strconv.Itoa(b.MaxConcurrent)}
	return append(argv, skillsMethodArgs(r, b, task)...)
}

// skillsMethodArgs are ns eval's arguments that are methodology.
func skillsMethodArgs(r *Recipe, b *Benchmark, task string) []string {
	bench := task
	if b.Repeats > 1 {
		bench += ":" + strconv.Itoa(b.Repeats) // that many seeds: output-rs<i>.jsonl
	}
	argv := []string{"--benchmarks=" + bench}
	if b.MaxProblems != nil {
		argv = append(argv, "++max_samples="+strconv.Itoa(*b.MaxProblems))
	}
	return append(argv, genArgs(EffectiveGeneration(r, b), "++inference.temperature=", "++inference.top_p=", "++inference.tokens_to_generate=")...)
}

// containerRunConfig is the legacy run_config an eval-factory image reads
// (as NeMo Evaluator builds it), as JSON, which is YAML too. Its url is
// harnessURLRef plus the endpoint's path; the job fills in the URL.
func containerRunConfig(b *Benchmark, sv *Service, model, task string) (string, error) {
	ep := containerEndpoint(b, sv, model)
	cfg := map[string]any{
		"config": map[string]any{"type": task, "output_dir": harnessInside},
		"target": map[string]any{"api_endpoint": ep},
	}
	if len(b.Params) > 0 {
		cfg["config"].(map[string]any)["params"] = b.Params
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	return string(out), err
}

// containerKeyEnv is the variable an eval-factory image reads its key
// from (the job exports it from NEL_HARNESS_API_KEY).
const containerKeyEnv = "NEMO_API_KEY"

func containerEndpoint(b *Benchmark, sv *Service, model string) map[string]any {
	typ := containerEndpointType(b, sv)
	path := "/chat/completions"
	if typ == "completions" {
		path = "/completions"
	}
	ep := map[string]any{"url": harnessURLRef + path, "model_id": model, "type": typ}
	if sv.APIKey != "" {
		ep["api_key_name"] = containerKeyEnv
	}
	if len(b.Solver.AdapterConfig) > 0 {
		ep["adapter_config"] = b.Solver.AdapterConfig
	}
	return ep
}

// containerEndpointType is the legacy endpoint type: the solver's
// endpoint_type, else the service protocol's (NeMo's mapping).
func containerEndpointType(b *Benchmark, sv *Service) string {
	if b.Solver.EndpointType != "" {
		return b.Solver.EndpointType
	}
	if sv.Protocol == "completions" {
		return "completions"
	}
	return "chat"
}

// harnessMethod is the "harness" entry of a harness benchmark's hash (see
// the comment at the top); nil for other benchmarks.
func harnessMethod(r *Recipe, b *Benchmark) map[string]any {
	kind, task, _, ok := harnessOf(b)
	if !ok {
		return nil
	}
	sv := r.Services[b.Solver.Service]
	m := map[string]any{"kind": kind, "task": task, "image": harnessImage(r, b)}
	if sv == nil {
		return m
	}
	switch kind {
	case "lm-eval":
		m["args"] = lmEvalMethodArgs(r, b, sv)
		m["endpoint_type"] = sv.Protocol
	case "skills":
		m["args"] = skillsMethodArgs(r, b, task)
		m["endpoint_type"] = sv.Protocol
	case "container":
		m["endpoint_type"] = containerEndpointType(b, sv)
		m["adapter_config"] = b.Solver.AdapterConfig
	case "vlmevalkit":
		m["judge"] = vlmevalkitJudge
		m["model_args"] = vlmevalkitMethod(r, b)
		m["endpoint_type"] = sv.Protocol
	case harborKind:
		for k, v := range harborMethodOf(r, b) {
			m[k] = v
		}
	}
	return m
}

// genArgs spells the generation parameters a harness takes (the rules
// refuse the others) under its names for them, in this order.
func genArgs(g Generation, temperature, topP, maxTokens string) []string {
	var out []string
	if g.Temperature != nil {
		out = append(out, temperature+fmtFloat(*g.Temperature))
	}
	if g.TopP != nil {
		out = append(out, topP+fmtFloat(*g.TopP))
	}
	if g.MaxTokens != nil {
		out = append(out, maxTokens+strconv.FormatInt(*g.MaxTokens, 10))
	}
	return out
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
