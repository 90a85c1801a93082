package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/agent/gymtools"
	"github.com/nel-eval/nel/runtime/agent/sandboxtools"
	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/harbor/tbench"
	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/journal"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// harborDefinition is the benchmark of a harbor:// plan entry: its items
// are the dataset's tasks (loadHarbor), its reward is what each task's
// verifier writes, which may be a fraction (so the rewards are not
// binary).
func harborDefinition(b *plan.Benchmark) (*bench.Benchmark, error) {
	switch {
	case b.Solver.Type != "tool_calling" && b.Solver.Type != "openclaw":
		return nil, fmt.Errorf("benchmark %s: not supported yet: harbor:// tasks with a %s solver (nel runs them with tool_calling or openclaw)", b.Key, b.Solver.Type)
	case b.Solver.Type == "tool_calling" && !b.Solver.SandboxTools:
		return nil, fmt.Errorf("benchmark %s: harbor:// tasks need sandbox_tools: the agent works on /app through them", b.Key)
	}
	return &bench.Benchmark{
		Name:     b.Name,
		Category: "Agentic",
		Score:    func(*bench.Item, string) bench.Score { return bench.Score{} },
	}, nil
}

// loadHarbor loads a harbor:// benchmark's tasks as the compiler pinned
// them, keeps the dataset for the samples, and returns the tasks as items.
func (r *runner) loadHarbor(ctx context.Context) (*bench.Set, error) {
	pinned := *r.b.Harbor
	if g := pinned.Git; g != nil {
		// Tasks built from a repository (terminal-bench-v1): fetched and
		// converted here, once per run folder. The plan holds the
		// commit; the rows, the digest of what was converted.
		// Absolute: LoadPinned reads a relative Dir from the recipe's
		// folder, which need not be where the run folder is named from.
		dir, err := filepath.Abs(rundir.Dir(r.o.OutDir).Sources())
		if err == nil {
			dir, err = tbench.Prepare(ctx, pinned.Dataset, *g, dir, r.log)
		}
		if err != nil {
			return nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
		}
		pinned.Dir = dir
	}
	ds, err := harbor.LoadPinned(ctx, r.p.RecipeDir, pinned)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	r.harbor = ds
	tmpl, err := r.instruction()
	if err != nil {
		return nil, err
	}
	items, err := ds.ItemsWith(tmpl)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: instruction_template: %w", r.b.Key, err)
	}
	return &bench.Set{
		Items:    items,
		Datasets: []*dataset.Dataset{{Spec: r.b.Name, Digest: ds.Digest}},
	}, nil
}

// openAgentSandbox opens the sandbox the agent's sessions are opened on.
// An engine that cannot run here makes every sample a sandbox_error (as
// for scorers, env_sandbox.go): OpenSession on it fails.
func (r *runner) openAgentSandbox(ctx context.Context) (func(), error) {
	sb := r.b.Sandbox
	if sb == nil || sb.Type == "" || sb.Type == "none" {
		return nil, fmt.Errorf("benchmark %s: a tool_calling solver works in a sandbox: set %s.sandbox (e.g. sandbox: {type: \"local\"})", r.b.Key, r.benchmarkPath())
	}
	cfg, err := sandboxConfig(sb)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %s.sandbox: %w", r.b.Key, r.benchmarkPath(), err)
	}
	cfg.Logger = r.log
	if cfg.Type == "apptainer" {
		// Where Harbor tasks' Dockerfiles are built: absolute, as the
		// builds name it from folders of their own.
		cache := sb.SifCacheDir
		if cache == "" {
			cache = rundir.Dir(r.o.OutDir).Images()
		}
		if cfg.BuildCache, err = filepath.Abs(cache); err != nil {
			return nil, fmt.Errorf("benchmark %s: sandbox: image cache: %w", r.b.Key, err)
		}
	}
	if cfg.Type == "slurm" {
		// The pool's servers keep the sessions; the job script says where
		// they are.
		if cfg.Endpoints, err = sandbox.EndpointsFromEnv(cfg.Name, r.o.Getenv); err != nil {
			return nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
		}
		cfg.Token = r.o.Getenv(sandbox.PoolTokenEnv(cfg.Name))
	}
	s, err := sandbox.Open(ctx, cfg)
	switch {
	case errors.Is(err, sandbox.ErrUnavailable):
		r.log.Warn("sandbox unavailable: every sample is recorded as sandbox_error", "err", err)
		s = unavailable{name: sandboxName(cfg), err: err}
	case err != nil:
		return nil, fmt.Errorf("benchmark %s: sandbox: %w", r.b.Key, err)
	}
	r.agentSB = s
	return func() {
		if err := s.Close(); err != nil {
			r.log.Warn("closing the agent's sandbox", "err", err)
		}
	}, nil
}

// agentRun is one agentic sample as it went: the loop's result, the
// verifier's reward and details, and the sample's outcome.
type agentRun struct {
	res     *agent.Result
	outcome agent.Outcome
	reward  float64
	details *harbor.Details
	// err is why the sample has no verdict, or why the loop ended
	// without an answer; its category is cat.
	err error
	cat failure.Category
}

// agentSample runs one (task, repeat) with the tool_calling solver: a
// fresh sandbox session holding the task's environment at /app, the loop
// within the task's agent budget, then the task's verifier in the same
// session. interrupted reports that the run itself was stopped.
func (r *runner) agentSample(ctx context.Context, m agent.Model, it *bench.Item, repeat, attempt int) (rec *sampleRecord, interrupted bool) {
	seed := Seed(r.p.RecipeHash, r.b.Key, it.ID, repeat)
	req, reqJSON := r.request(it, seed)
	start := time.Now()
	sctx := intercept.WithSample(ctx, intercept.Sample{Benchmark: r.b.Key, Item: it.ID, Repeat: repeat})
	ar := r.runAgent(sctx, m, it, req.Messages, seed)
	if ctx.Err() != nil {
		return nil, true
	}
	row := results.Row{
		RecipeHash: r.p.RecipeHash, Benchmark: r.b.Key, ItemID: it.ID, ItemIdx: int64(it.Index),
		Repeat: int64(repeat), Category: it.Category, Expected: it.Expected,
		LatencyMS: float64(time.Since(start).Microseconds()) / 1000,
		Attempts:  int64(attempt), Seed: seed, Scores: map[string]float64{},
		Reward: ar.reward, ErrorCategory: string(ar.cat), Model: r.svc.Model,
	}
	traj := results.Trajectory{
		RecipeHash: r.p.RecipeHash, Benchmark: r.b.Key, ItemID: it.ID, ItemIdx: int64(it.Index),
		Repeat: int64(repeat), Request: string(reqJSON), Model: r.svc.Model, LatencyMS: row.LatencyMS,
	}
	var turns []agent.Turn
	if ar.res != nil {
		row.PromptTokens, row.CompletionTokens = ar.res.PromptTokens, ar.res.CompletionTokens
		row.FinishReason = lastFinish(ar.res.Turns)
		traj.Response = ar.res.Answer
		turns = ar.res.Turns
	}
	if r.scoresAnswers() && ar.outcome == agent.Answered {
		resp := &model.Response{
			Content: ar.res.Answer, FinishReason: row.FinishReason,
			PromptTokens: row.PromptTokens, CompletionTokens: row.CompletionTokens,
		}
		if !r.score(ctx, it, resp, &row, &traj) {
			return nil, true // stopped while scoring: run it again on resume
		}
		ar.outcome = scoredOutcome(&row)
	} else {
		r.settleAgent(&row, &traj, ar)
	}
	return &sampleRecord{Row: row, Traj: traj, Simulated: r.simulated.Load(), Turns: results.TurnsOf(row, r.o.Shard, turns, ar.outcome)}, false
}

// scoresAnswers says the benchmark's own scorer scores the agent's final
// answer, as it would a chat answer: its items are no tasks with a
// verifier (harbor://, byob.verifier).
func (r *runner) scoresAnswers() bool {
	return r.b.Harbor == nil && r.items == nil
}

// scoredOutcome is the outcome of an answer the benchmark's scorer scored
// in row: the scorer stands where a task's verifier does (a wrong answer
// failed it), and a scoring environment that failed (a judge, a
// sandbox) is infrastructure.
func scoredOutcome(row *results.Row) agent.Outcome {
	switch {
	case row.Outcome == string(failure.InfraError):
		return agent.InfraError
	case row.Reward >= 1:
		return agent.Solved
	}
	return agent.FailedVerifier
}

// settleAgent records a sample the benchmark's scorer does not score in
// row and traj: a task's verdict (its verifier's reward and details), or
// a loop that ended without an answer, wrong (the model's) or with no
// verdict (infrastructure) as a chat sample's failure would be.
func (r *runner) settleAgent(row *results.Row, traj *results.Trajectory, ar agentRun) {
	msg := ""
	if ar.err != nil {
		msg = ar.err.Error()
		traj.Error = msg
	}
	if ar.details != nil {
		method := "harbor_verifier"
		if r.items != nil {
			method = "byob_verifier" // byob.verifier's command, not a Harbor task's tests
		}
		d, _ := json.Marshal(map[string]any{"method": method, "verifier": ar.details})
		traj.ScoringDetails = string(d)
	}
	if r.scoresAnswers() {
		settle(row, r.binary, r.extras, msg)
		return
	}
	settle(row, false, nil, msg)
}

// taskImage is the image a container sandbox runs task's session in: its
// [environment].docker_image or its Dockerfile's FROM image, pulled by
// name (a Dockerfile that builds more is harbor.ErrBuild, which the
// docker and apptainer sandboxes build: sampleTask), as apptainer names a
// registry image (docker://); "" (the sandbox's own image) for a task
// with neither. The local sandbox runs the host's programs and takes none.
func taskImage(sandboxType string, task *harbor.Task) (string, error) {
	switch sandboxType {
	case "docker", "apptainer", "ecs_fargate": // ecs_fargate: the image of the sample's task
	default:
		return "", nil
	}
	img, err := task.Image()
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // neither docker_image nor a Dockerfile
	}
	if err != nil {
		return "", err
	}
	return containerImage(sandboxType, img), nil
}

// containerImage is image img as a container sandbox pulls it: apptainer
// names a registry image docker://IMAGE.
func containerImage(sandboxType, img string) string {
	if sandboxType == "apptainer" && !strings.Contains(img, "://") {
		return "docker://" + img
	}
	return img
}

// runAgent runs one sample's loop: in a sandbox session of its own when
// the solver offers sandbox tools (a task's session holds its environment
// at /app), then, for a task, its verifier in the same session. An
// ordinary benchmark's answer is scored after, by its own scorer
// (agentSample), as a chat answer would be.
func (r *runner) runAgent(ctx context.Context, m agent.Model, it *bench.Item, msgs []model.Message, seed int64) agentRun {
	var task *harbor.Task
	var sess sandbox.Session
	if r.agentSB != nil {
		var spec sandbox.SessionSpec
		var err error
		if task, spec, err = r.sampleTask(it); err != nil {
			return infraRun(failure.SandboxError, err)
		}
		if sess, err = sandbox.OpenSession(ctx, r.agentSB, spec); err != nil {
			return infraRun(failure.SandboxError, fmt.Errorf("open the sample's sandbox session: %w", err))
		}
		defer func() {
			if err := sess.Close(); err != nil {
				r.log.Warn("closing a sample's sandbox session", "item", it.ID, "err", err)
			}
		}()
	}
	var res *agent.Result
	if r.claw != nil {
		// openclaw runs on tasks only (compile and definition refuse the
		// rest), so the session and the task are there.
		res = r.runClaw(ctx, sess, task, it.Question(), seed)
	} else {
		tools, err := r.agentTools(ctx, sess, it)
		if err != nil {
			// The resource server could not be read: the sample's
			// infrastructure, not the model.
			return infraRun(failure.APIError, err)
		}
		budget := r.sampleBudget()
		if task != nil {
			budget = task.AgentBudget(budget)
		}
		actx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		if res, err = agent.Run(actx, r.agentConfig(seed), m, tools, msgs); err != nil {
			// A misconfiguration of the loop: nel's failure, not the model's.
			return infraRun(failure.APIError, fmt.Errorf("tool_calling: %w", err))
		}
	}
	ar := agentRun{res: res, outcome: res.Outcome, err: res.Err, cat: res.Category()}
	if res.Outcome != agent.Answered || task == nil {
		// The model never finished: the loop's ending is the verdict
		// (turn_budget and repeated_call are the model's; time budget,
		// tools and endpoint are infrastructure), not a reward the
		// verifier might read off a half-done /app. Or there is no
		// verifier: the benchmark's scorer reads the answer.
		return ar
	}
	return r.verify(ctx, task, sess, ar)
}

// verify runs task's verifier in the session the agent left and makes its
// reward the sample's.
func (r *runner) verify(ctx context.Context, task *harbor.Task, sess sandbox.Session, ar agentRun) agentRun {
	reward, d, err := task.Verify(ctx, sess)
	ar.details = &d
	if err != nil {
		var fe *failure.Error
		ar.outcome, ar.err, ar.cat = agent.InfraError, err, failure.ScorerError
		if errors.As(err, &fe) {
			ar.cat = fe.Category
		}
		return ar
	}
	// Solved is the full reward; a partial one (reward.json's fraction) is
	// scored as it is and counted as a verifier failure.
	ar.reward, ar.outcome = reward, agent.FailedVerifier
	if reward >= 1 {
		ar.outcome = agent.Solved
	}
	return ar
}

func infraRun(cat failure.Category, err error) agentRun {
	return agentRun{outcome: agent.InfraError, err: err, cat: cat}
}

// agentConfig is the loop's configuration from the plan's solver.
func (r *runner) agentConfig(seed int64) agent.Config {
	s := r.b.Solver
	return agent.Config{
		MaxTurns:       s.MaxTurns,
		ToolTimeout:    time.Duration(s.ToolTimeout * float64(time.Second)),
		MaxOutputChars: s.MaxOutputChars,
		ResponseMode:   s.ResponseMode,
		Generation:     s.Generation,
		Seed:           seed,
		Logger:         r.log,
	}
}

// agentTools are the tools a sample is offered: the sandbox tools on its
// session (none without one: sandbox_tools is off), then a resource
// server's (resource_service), whose state for the sample is keyed by the
// item's id.
func (r *runner) agentTools(ctx context.Context, sess sandbox.Session, it *bench.Item) ([]agent.Tool, error) {
	s := r.b.Solver
	var tools []agent.Tool
	if sess != nil {
		tools = sandboxtools.New(sess, sandboxtools.Options{Timeout: time.Duration(s.ToolTimeout * float64(time.Second))})
	}
	if s.ResourceService == "" {
		return tools, nil
	}
	svc, ok := r.p.Service(s.ResourceService)
	if !ok {
		return nil, fmt.Errorf("resource_service: the plan has no service %q", s.ResourceService)
	}
	base, _, err := r.endpoint(svc)
	if err != nil {
		return nil, fmt.Errorf("resource_service: %w", err)
	}
	gym, err := gymtools.Tools(ctx, gymtools.Config{BaseURL: base, SessionID: it.ID})
	if err != nil {
		return nil, fmt.Errorf("resource_service %s: %w", svc.Name, err)
	}
	return append(tools, gym...), nil
}

// lastFinish is the finish reason of the last assistant turn.
func lastFinish(turns []agent.Turn) string {
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Role == "assistant" {
			return turns[i].FinishReason
		}
	}
	return ""
}

// notingModel is the solver's client as the loop sees it, noting what
// every response says about the server (simulated, its fingerprint) as a
// single-turn sample does.
type notingModel struct {
	r *runner
	c *model.Client
}

func (n notingModel) Complete(ctx context.Context, req model.Request) (*model.Response, error) {
	resp, err := n.c.Complete(ctx, req)
	n.r.noteResponse(resp)
	if resp != nil && resp.Simulated {
		n.r.simulated.Store(true)
	}
	return resp, err
}

// shardTurns reads a complete agentic shard's turns file back, by sample,
// for reopen: the samples kept as they were keep their turns in the
// journal, so the shard written after the retry holds them unchanged.
// A shard whose solver takes no turns has none (nil).
func (r *runner) shardTurns() (map[journal.Key][]results.Turn, error) {
	if !r.agentic {
		return nil, nil
	}
	turns, _, err := results.ReadTurns(r.files.Turns())
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	out := map[journal.Key][]results.Turn{}
	for _, t := range turns {
		k := journal.Key{Item: t.ItemID, Repeat: int(t.Repeat)}
		out[k] = append(out[k], t)
	}
	return out, nil
}
