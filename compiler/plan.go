package compiler

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/templates"
)

// BuildPlan turns a validated recipe into the plan nel-run executes.
// It refuses what this nel cannot run yet.
func BuildPlan(s *Source, h Hashes, nelVersion string) (*plan.Plan, error) {
	return buildPlan(withGymCmdServers(s), h, nelVersion, "")
}

// buildPlan is BuildPlan for a compile target, which decides some of what
// can run (a server's image, on a local cluster, only on Kubernetes). s
// has its gym://cmd: servers already (withGymCmdServers).
func buildPlan(s *Source, h Hashes, nelVersion, target string) (*plan.Plan, error) {
	if errs := unsupported(s, target); len(errs) > 0 {
		return nil, errs.truncated()
	}
	r := s.Recipe
	p := &plan.Plan{
		PlanVersion:      plan.Version,
		NelVersion:       nelVersion,
		ScoringVersion:   ScoringVersion,
		RecipeHash:       h.Recipe,
		PlanHash:         h.Plan,
		Recipe:           filepath.ToSlash(s.Path),
		RecipeDir:        filepath.ToSlash(s.Dir),
		OutputDir:        filepath.ToSlash(s.OutputDir()),
		Shards:           1,
		ProgressInterval: r.Output.ProgressInterval,
		Reports:          r.Output.Report,
	}
	if r.Cluster.Shards != nil {
		p.Shards = *r.Cluster.Shards
	}
	p.Services = planServices(s)
	dirs := map[string]bool{}
	for i, b := range r.Benchmarks {
		key := BenchmarkKey(r, i)
		dir := safeDir(key)
		for dirs[dir] {
			dir += "_"
		}
		dirs[dir] = true
		pb := plan.Benchmark{
			Key:              key,
			Name:             b.Name,
			Dir:              dir,
			Hash:             h.Benchmarks[key],
			Repeats:          b.Repeats,
			MaxProblems:      b.MaxProblems,
			MaxConcurrent:    b.MaxConcurrent,
			Timeout:          b.Timeout,
			RequestTimeout:   EffectiveRequestTimeout(r, b),
			MaxErrorRate:     EffectiveMaxErrorRate(b),
			ShuffleSeed:      b.ShuffleSeed,
			Fewshot:          b.Fewshot,
			Params:           b.Params,
			SkipFailed:       b.SkipFailed,
			MaxSystemRetries: b.MaxSystemRetries,
			Solver: plan.Solver{
				Type:         b.Solver.Type,
				Service:      b.Solver.Service,
				SystemPrompt: effectiveSystemPrompt(b),
				Generation:   EffectiveGeneration(r, b),
				ImageDetail:  b.Solver.ImageDetail,
			},
			Scoring: plan.Scoring{IncludeDefaults: b.Scoring.IncludeDefaults, Primary: b.Scoring.Primary, Metrics: []plan.Metric{}},
		}
		if len(pb.Params) == 0 {
			pb.Params = nil
		}
		if s.dataPins != nil {
			pb.Data = s.dataPins[i]
		}
		pb.LocalData = localPins(s, i)
		if b.BYOB != nil {
			pb.BYOB = b.BYOB.spec
		}
		hp, err := planHarness(r, b)
		if err != nil {
			return nil, err
		}
		pb.Harness = hp
		pb.GymServer = s.gymCmd[i]
		if pb.GymServer == "" {
			pb.GymServer = gymServiceRef(r, b.Name)
		}
		if hp == nil { // the Harbor CLI reads a harbor-solver benchmark's tasks itself
			pb.Harbor = harborPlan(s, i)
		}
		pb.InstructionTemplate = s.instruction[i]
		if b.Solver.Type == "gym_delegation" {
			pb.Solver.GymService, pb.Solver.GymAgent, pb.Solver.TrustReward = b.Solver.GymService, b.Solver.GymAgent, b.Solver.TrustReward
		}
		if b.Solver.Type == "tool_calling" {
			toolSettings(&pb.Solver, b.Solver)
		}
		pb.Solver.OpenClaw = openClawSettings(b.Solver)
		for _, m := range b.Scoring.Metrics {
			rubric := m.Rubric
			if m.RubricText != "" {
				rubric = &m.RubricText // rubric_file, inlined at compile time
			}
			pb.Scoring.Metrics = append(pb.Scoring.Metrics, plan.Metric{
				Type: m.Type, Name: m.Name, Service: m.Service, Rubric: rubric, RubricFile: m.RubricFile,
				SystemPrompt: m.SystemPrompt, MaxScore: m.MaxScore, Temperature: m.Temperature,
				MaxTokens: m.MaxTokens, Timeout: m.Timeout, MaxRetries: m.MaxRetries, AllowSelfJudge: m.AllowSelfJudge,
				ReferenceFree: m.ReferenceFree,
			})
		}
		pb.Sandbox = planSandbox(r, b)
		p.Benchmarks = append(p.Benchmarks, pb)
	}
	return p, nil
}

// planSandbox is benchmark b's sandbox in the plan; nil for none.
func planSandbox(r *Recipe, b *Benchmark) *plan.Sandbox {
	sb := resolveSandbox(r, b)
	if sb == nil || sb.Type == "none" {
		return nil
	}
	name, _ := b.Sandbox.(string)
	ps := &plan.Sandbox{
		Name: name, Type: sb.Type, Image: sb.Image, Memory: sb.Memory, Cpus: sb.Cpus,
		Timeout: sb.Timeout, Concurrency: sb.Concurrency, Network: sb.Network,
		MaxProcesses: sb.MaxProcesses, MaxFileSize: sb.MaxFileSize, SlotsPerNode: sb.SlotsPerNode,
		Env: sb.ContainerEnv, ImageTemplate: sb.ImageTemplate,
		Pool: sb.Type != "slurm" && isSandboxPool(sb),
	}
	if sb.Type == "apptainer" && !ps.Pool {
		ps.SifCacheDir = sb.SifCacheDir
	}
	if len(ps.Env) == 0 {
		ps.Env = nil
	}
	if sb.Type == "ecs_fargate" {
		// Fargate's memory is MiB in a string ("8192"), not
		// a size the other engines read.
		ps.Memory = ""
		ps.ECS = planECS(sb)
	}
	return ps
}

// planServices is the plan entry of each of the recipe's services, by
// name.
func planServices(s *Source) []plan.Service {
	var out []plan.Service
	for _, name := range sortedKeys(s.Recipe.Services) {
		sv := s.Recipe.Services[name]
		ps := planService(name, sv)
		ps.Interceptors = planInterceptors(s, sv)
		ps.ModelTraffic = modelTrafficOf(sv)
		if ps.Serves != nil {
			ps.Serves.LocalData = s.servedPins(name)
		}
		out = append(out, ps)
	}
	return out
}

func planService(name string, s *Service) plan.Service {
	ps := plan.Service{
		Name:       name,
		Type:       s.Type,
		Protocol:   s.Protocol,
		Model:      s.Model,
		Managed:    s.Managed(),
		Generation: derefGeneration(s.Generation),
	}
	if ref, ok := parseWholeEnvRef(s.APIKey); ok {
		ps.APIKey = &plan.EnvRef{Name: ref.Name, Default: ref.Default}
	}
	if !ps.Managed {
		ps.URL = s.URL
		return ps
	}
	ps.URLEnv = "NEL_SERVICE_" + templates.EnvName(name) + "_URL"
	ps.Port = s.Port
	ps.HealthPath = s.HealthPath
	ps.StartupTimeout = s.StartupTimeout
	ps.Command = serverCommand(name, s)
	ps.Image = s.Image
	if s.Type == "gym" {
		planGym(&ps, s)
	} else if s.Type != "process" {
		ps.Model = servedName(name, s)
		ps.Parallelism = &plan.Parallelism{TP: s.TensorParallelSize, PP: s.PipelineParallelSize, DP: s.DataParallelSize, NumNodes: s.NumNodes}
	}
	switch s.Type {
	case "dynamo":
		// The first role's worker stands for the server in provenance; the
		// job script starts the rest (dynamoLayout).
		r := dynamoRoles(s, "")[0]
		ps.Parallelism = &plan.Parallelism{TP: max(r.TP, 1), PP: max(r.PP, 1), DP: max(r.DP, 1), NumNodes: r.Nodes}
	case "nim":
		if ps.HealthPath == "/health" {
			// The schema's default, which a NIM does not serve: its
			// readiness (model loaded) is /v1/health/ready.
			ps.HealthPath = "/v1/health/ready"
		}
		for _, e := range []plan.EnvVar{{Name: "NIM_SERVED_MODEL_NAME", Value: ps.Model}, {Name: "NIM_SERVER_PORT", Value: strconv.Itoa(s.Port)}} {
			if _, set := s.ExtraEnv[e.Name]; !set {
				ps.Env = append(ps.Env, e)
			}
		}
	}
	for _, k := range sortedKeys(s.ExtraEnv) {
		v := s.ExtraEnv[k]
		if ref, ok := parseWholeEnvRef(v); ok {
			ps.Env = append(ps.Env, plan.EnvVar{Name: k, From: &plan.EnvRef{Name: ref.Name, Default: ref.Default}})
		} else {
			ps.Env = append(ps.Env, plan.EnvVar{Name: k, Value: v})
		}
	}
	return ps
}

func derefGeneration(g *Generation) Generation {
	if g == nil {
		return Generation{}
	}
	return *g
}

// servedName is the model id a managed server answers to: served_model_name,
// or the service's own name (as NeMo Evaluator does).
func servedName(name string, s *Service) string {
	if s.ServedModelName != "" {
		return s.ServedModelName
	}
	return name
}

// serverCommand is the argv that starts a managed server, in a shell that
// runs the service's setup_commands first, or its pre_cmd instead
// (withSetup). It binds all interfaces; a SLURM job binds the node's own
// address instead (guardServers).
func serverCommand(name string, s *Service) []string {
	if s.PreCmd != "" || len(s.SetupCommands) > 0 {
		return withSetup(name, s, engineCommand(name, s))
	}
	return engineCommand(name, s)
}

// withSetup wraps argv in bash -c for the service's shell commands, as
// NeMo Evaluator runs them: setup_commands one per line under set -euo
// pipefail before the server, which then replaces the shell (exec, so
// the job's pid is the server's); a pre_cmd is the whole script, as the
// user wrote it, and starts the server itself. They are shell commands
// on purpose, so they are not quoted as words: the script is one argument
// of bash -c, quoted whole (runtime/shellquote) where it reaches a shell,
// and shown in the compiled script as written.
func withSetup(name string, s *Service, argv []string) []string {
	if s.onEveryNode() {
		return []string{"bash", "-c", everyNodeScript(s), "nel-" + name}
	}
	if s.PreCmd != "" {
		return []string{"bash", "-c", s.PreCmd, "nel-" + name}
	}
	script := "set -euo pipefail\n" + strings.Join(s.SetupCommands, "\n") + "\nexec \"$@\""
	return append([]string{"bash", "-c", script, "nel-" + name}, argv...)
}

// engineCommand is the argv of the server itself.
func engineCommand(name string, s *Service) []string {
	itoa := strconv.Itoa
	var argv []string
	switch s.Type {
	case "process":
		return slices.Clone(s.Command)
	case "gym":
		return gymCommand(name, s)
	case "vllm":
		argv = []string{"vllm", "serve", s.Model, "--host", "0.0.0.0", "--port", itoa(s.Port),
			"--served-model-name", servedName(name, s), "--tensor-parallel-size", itoa(s.TensorParallelSize)}
		if s.PipelineParallelSize > 1 {
			argv = append(argv, "--pipeline-parallel-size", itoa(s.PipelineParallelSize))
		}
		if s.DataParallelSize > 1 {
			argv = append(argv, "--data-parallel-size", itoa(s.DataParallelSize))
		}
		if s.NumNodes > 1 {
			argv = append(argv, "--distributed-executor-backend", "ray")
		}
	case "sglang":
		argv = []string{"python3", "-m", "sglang.launch_server", "--model-path", s.Model, "--host", "0.0.0.0",
			"--port", itoa(s.Port), "--served-model-name", servedName(name, s), "--tp-size", itoa(s.TensorParallelSize)}
		if s.PipelineParallelSize > 1 {
			argv = append(argv, "--pp-size", itoa(s.PipelineParallelSize))
		}
		if s.DataParallelSize > 1 {
			argv = append(argv, "--dp-size", itoa(s.DataParallelSize))
		}
	case "trt_llm":
		argv = []string{"trtllm-serve", "serve", s.Model, "--host", "0.0.0.0", "--port", itoa(s.Port),
			"--tp_size", itoa(s.TensorParallelSize), "--pp_size", itoa(s.PipelineParallelSize)}
	case "nim":
		// A NIM's image is the server; this is its documented start script
		// (pyxis runs a command, not the image's entrypoint). It reads its
		// settings from NIM_* variables, never from arguments.
		return []string{nimStart}
	case "dynamo":
		r := dynamoRoles(s, "")[0]
		return append(dynamoWorkerArgv(name, s, r), r.ExtraArgs...)
	}
	return append(argv, s.ExtraArgs...)
}

var unsafeDirRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeDir maps a benchmark key to a directory name (no separators, no
// leading dot).
func safeDir(key string) string {
	d := unsafeDirRE.ReplaceAllString(key, "_")
	d = strings.TrimLeft(d, ".")
	if d == "" {
		d = "benchmark"
	}
	return d
}

// EffectiveRequestTimeout is a benchmark's per-request timeout in seconds:
// its request_timeout, else its solver service's proxy.request_timeout
// (NeMo's bound on each upstream call of the service), else
// plan.DefaultRequestTimeout; never more than the sample's timeout (the
// outer bound).
func EffectiveRequestTimeout(r *Recipe, b *Benchmark) float64 {
	t := float64(plan.DefaultRequestTimeout)
	if st, ok := proxyRequestTimeout(r.Services[b.Solver.Service]); ok {
		t = st
	}
	if b.RequestTimeout != nil {
		t = *b.RequestTimeout
	}
	return min(t, b.Timeout)
}

// EffectiveMaxErrorRate is a benchmark's max_error_rate: as written, else
// 1 with skip_failed (skip every infrastructure failure) and
// plan.DefaultMaxErrorRate without.
func EffectiveMaxErrorRate(b *Benchmark) float64 {
	switch {
	case b.MaxErrorRate != nil:
		return *b.MaxErrorRate
	case b.SkipFailed:
		return 1
	}
	return plan.DefaultMaxErrorRate
}
