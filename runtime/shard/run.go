// Package shard runs one shard of one benchmark of a compiled plan: the eval
// loop. For every (item, repeat) of the shard it builds the request, asks the
// model, scores the answer and records a row; the rows stream to Parquet
// as they finish (spool.go) and become the shard's files at the end.
//
// The loop is crash-safe: every finished sample is journaled (fsync'd)
// before it counts, and running the same shard again after a kill resumes
// from the journal, re-running only the samples that were in flight.
package shard

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/gymenv"
	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/journal"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/sandbox"
	"github.com/nel-eval/nel/runtime/score"
)

// Options says which shard to run and how.
type Options struct {
	Plan *plan.Plan
	// Benchmark is the benchmark's key in the plan.
	Benchmark string
	Shard, Of int
	// OutDir is the output root; "" means Plan.OutputDir.
	OutDir string
	// NelVersion is recorded in the files' provenance.
	NelVersion string
	// Loader reads datasets; nil means a dataset loader configured from the
	// environment, with relative paths resolved against the recipe's
	// directory.
	Loader bench.Loader
	// Data, when set, shares loaded data with the other shards of this
	// process that use the same cache.
	Data *DataCache
	// Getenv resolves ${VAR} references (service URLs, API keys); nil means
	// os.Getenv.
	Getenv func(string) string
	Logger *slog.Logger
	// Progress, when set, is called after every finished sample (and once
	// at the start); it must be cheap.
	Progress func(Progress)
	// ModelTransport, when set, wraps the model client's transport nearest
	// the wire, under the interceptor chain: it sees each request the
	// server gets (nel-run shard --metrics-addr counts them).
	ModelTransport func(http.RoundTripper) http.RoundTripper
	// BreakerThreshold is how many samples in a row may fail as if the
	// endpoint were down (server_error, rate_limit, timeout) before the
	// shard stops sending and probes it; 0 means 20.
	BreakerThreshold int
	// BreakerWindow and BreakerRate: when at least BreakerRate of the last
	// BreakerWindow finished samples failed as if the endpoint were down,
	// the shard stops sending and probes it too; 0 means 50 and 0.5.
	BreakerWindow int
	BreakerRate   float64
	// RecoverFor is how long a tripped breaker probes the endpoint before
	// the shard gives up; 0 means 5 minutes.
	RecoverFor time.Duration
	// ClientErrorThreshold is how many samples in a row may fail with the
	// same deterministic client error (400, 401, 403, 404, 422: a request
	// the server will never take) before the shard stops; 0 means 5.
	ClientErrorThreshold int
	// RetryInfra runs again, in a shard that is already complete, the
	// samples that ended in infra_error (nel run --resume); its scored and
	// model_error samples are kept as they are.
	RetryInfra bool
	// Memory, when set, is the process's soft memory limit, which counts
	// this shard's requests in flight while its samples run (see
	// MemoryLimit); nil leaves the process's memory settings alone.
	Memory *MemoryLimit
	// RampRate is how many requests per second the first max_concurrent
	// launches are paced at; 0 means 1,500 per CPU, negative means no
	// pacing. See runSamples.
	RampRate float64
}

// Progress is a snapshot of a running shard.
type Progress struct {
	Benchmark string
	Shard     int
	// Total samples in the shard; Done counts finished ones, resumed
	// included; Failed those with an error category.
	Total, Done, Failed, Resumed int
}

// Rate returns the rate at which samples finish and the time left, from
// done of total samples, base of which were done before elapsed began
// (resumed ones do not count toward the rate). ok is false before any
// sample finished.
func Rate(done, base, total int, elapsed time.Duration) (perSecond float64, eta time.Duration, ok bool) {
	perSecond = float64(done-base) / elapsed.Seconds()
	if perSecond <= 0 {
		return 0, 0, false
	}
	return perSecond, time.Duration(float64(total-done) / perSecond * float64(time.Second)).Round(time.Second), true
}

// Interrupted is Run's error when its context ended (a signal, nel stop)
// before every sample ran: the Safe samples of Total are in the journal,
// and the same command runs the rest. nel run adds up every shard's into
// the run's totals; this one shard's line is for its log.
type Interrupted struct {
	Benchmark   string
	Shard       int
	Safe, Total int
	Cause       error // context.Cause of Run's context
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("benchmark %s: shard %d interrupted (%v); %d of its %d samples are safe in the journal, run the same command again to finish", e.Benchmark, e.Shard, e.Cause, e.Safe, e.Total)
}

func (e *Interrupted) Unwrap() error { return e.Cause }

// Result describes a finished shard.
type Result struct {
	// Path is the shard's results file.
	Path            string
	Rows            int
	Resumed         int
	AlreadyComplete bool
	Simulated       bool
}

// sampleRecord is what the journal keeps for a finished sample.
type sampleRecord struct {
	Row       results.Row        `json:"row"`
	Traj      results.Trajectory `json:"traj"`
	Simulated bool               `json:"sim,omitempty"`
	// Status is the last HTTP status of a failed model call (0: none).
	Status int `json:"status,omitempty"`
	// Turns are an agentic sample's turns.parquet rows: journaled with
	// its row, so that a resumed shard writes the turns it ran.
	Turns []results.Turn `json:"turns,omitempty"`
}

// defaultRampPerCPU paces the first wave of requests (Options.RampRate):
// about what one CPU can launch and later take back per second with room to
// spare, so that 2,000 in flight spread over ~0.33 s on 2 CPUs and over a
// few milliseconds on a 64-CPU node. The ramp costs its width once (every
// later round is shifted by it), so it should be no wider than the CPU a
// wave needs (in flight × CPU per sample / CPUs: 2,000 × ~270 µs of client
// and simulator / 2 ≈ 0.27 s). Measured on an idle 2-core machine,
// interleaved, 3,000 against the earlier 1,500: 97.57–97.73 % against
// 96.90–97.18 % at C=512 (BenchmarkEfficiencyCapped), and 95.3–95.7 %
// against 92.5–92.8 % for the whole run at 2,000 in flight with the steady
// state unchanged (99.7–100 %, BenchmarkNelRunEfficiency2000). On a loaded
// machine no rate stood out from the noise.
const defaultRampPerCPU = 3000

// maxRamp bounds how long the first wave's pacing takes.
const maxRamp = time.Second

// ErrBreaker is wrapped by the error Run returns when the endpoint failed
// too many samples in a row.
var ErrBreaker = errors.New("endpoint failing")

// Run runs one shard to completion: its Parquet files exist when it returns
// nil.
func Run(ctx context.Context, o Options) (*Result, error) {
	r, err := newRunner(o)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

type runner struct {
	o      Options
	p      *plan.Plan
	b      *plan.Benchmark
	svc    *plan.Service
	def    *bench.Benchmark
	log    *slog.Logger
	files  rundir.Shard // the shard's files in the run folder
	dir    string       // their folder: <out>/<bench>/shards
	final  string       // results file
	trajs  string       // trajectories file
	extras []namedScorer
	binary bool // the benchmark's rewards are 0 or 1
	// env is what ScoreEnv scorers use (sandbox, judges); see env.go.
	env *bench.Env
	// judgeClients are the judges' model clients, closed with env.
	judgeClients []*model.Client
	// agentic: the solver is tool_calling (agent.go); its tasks are
	// harbor's, or a byob benchmark's records (items, agent_items.go);
	// its sessions are opened on agentSB.
	agentic bool
	// deleg is a gym_delegation shard's agent and model proxy (delegate.go).
	deleg *delegation
	// claw is an openclaw shard's CLI and model proxy (openclaw.go): its
	// samples take the agentic road, OpenClaw in place of the loop.
	claw    *claw
	harbor  *harbor.Dataset
	items   *itemTasks
	agentSB sandbox.Sandbox

	mu sync.Mutex
	// spool streams the finished samples to Parquet (spool.go); nDone
	// counts them, resumed ones included.
	spool       *spool
	nDone       int
	countFailed error // the first error of counting a journaled sample (record)
	// Failures not yet journaled (finish): down are those that look like
	// the endpoint being down, held until the shard ends; rejected the
	// deterministic client errors, held until a later sample succeeds.
	down, rejected []*pendingSample
	health         health   // the endpoint's recent record (breaker.go)
	offered        []string // the model ids the endpoint listed when probed
	prog           Progress
	simulated      atomic.Bool
	// sysFingerprint is the first system_fingerprint the solver's server
	// answered with (provenance.go).
	sysFingerprint atomic.Pointer[string]

	// window is how many records a streaming shard prepares at a time
	// (windowRecords; tests make it small to cross window edges).
	window int
}

type namedScorer struct {
	name string
	fn   score.Func
}

type pendingSample struct {
	start pendingStart
	rec   *sampleRecord
}

// pendingStart is a sample to send, and which start of it that is.
type pendingStart struct {
	key     journal.Key
	attempt int
}

func newRunner(o Options) (*runner, error) {
	if o.Plan == nil {
		return nil, errors.New("run shard: no plan")
	}
	if o.Of < 1 || o.Shard < 0 || o.Shard >= o.Of {
		return nil, fmt.Errorf("run shard: shard %d of %d is out of range", o.Shard, o.Of)
	}
	b, ok := o.Plan.Benchmark(o.Benchmark)
	if !ok {
		var keys []string
		for _, b := range o.Plan.Benchmarks {
			keys = append(keys, b.Key)
		}
		return nil, fmt.Errorf("run shard: the plan has no benchmark %q (it has: %s)", o.Benchmark, strings.Join(keys, ", "))
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	def, err := definition(o.Plan, b, o.Getenv)
	if err != nil {
		return nil, err
	}
	svc, ok := o.Plan.Service(b.Solver.Service)
	if !ok {
		return nil, fmt.Errorf("benchmark %s: the plan has no service %q", b.Key, b.Solver.Service)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OutDir == "" {
		o.OutDir = o.Plan.OutputDir
	}
	if o.BreakerThreshold <= 0 {
		o.BreakerThreshold = 20
	}
	if o.BreakerWindow <= 0 {
		o.BreakerWindow = 50
	}
	if o.BreakerRate <= 0 || o.BreakerRate > 1 {
		o.BreakerRate = 0.5
	}
	if o.RecoverFor <= 0 {
		o.RecoverFor = 5 * time.Minute
	}
	if o.ClientErrorThreshold <= 0 {
		o.ClientErrorThreshold = 5
	}
	if o.RampRate == 0 {
		o.RampRate = defaultRampPerCPU * float64(runtime.GOMAXPROCS(0))
	}
	r := &runner{
		o: o, p: o.Plan, b: b, svc: svc, def: def, agentic: agentSolver(b.Solver.Type), window: windowRecords,
		log: o.Logger.With("benchmark", b.Key, "shard", fmt.Sprintf("%d/%d", o.Shard, o.Of)),
	}
	if r.items, err = newItemTasks(b); err != nil {
		return nil, err
	}
	bdir := rundir.Dir(o.OutDir).Benchmark(b.Dir)
	r.files, r.dir = bdir.Shard(o.Shard, o.Of), bdir.Shards()
	r.final, r.trajs = string(r.files), r.files.Trajectories()
	for _, m := range b.Scoring.Metrics {
		switch m.Type {
		case "scorer":
			fn, ok := score.Lookup(m.Name)
			if !ok {
				return nil, fmt.Errorf("benchmark %s: scoring.metrics: no scorer %q (scorers: %s)", b.Key, m.Name, strings.Join(score.Names(), ", "))
			}
			r.extras = append(r.extras, namedScorer{"scorer:" + m.Name, fn})
		case "judge":
			// Built with the scoring environment (env_judge.go).
		default:
			return nil, fmt.Errorf("benchmark %s: scoring.metrics %q: metric type %q is not supported yet", b.Key, m.Name, m.Type)
		}
	}
	return r, nil
}

// asInterrupted is err, or an Interrupted in its place: a signal while the
// shard checks its endpoint or probes its servers ends it with an error of
// theirs, but once the shard knows its samples it is an interruption like
// any other, and says what it keeps (the run's summary adds it up).
func (r *runner) asInterrupted(ctx context.Context, err error) error {
	var in *Interrupted
	if err == nil || ctx.Err() == nil || r.prog.Total == 0 || errors.As(err, &in) {
		return err
	}
	return &Interrupted{Benchmark: r.b.Key, Shard: r.o.Shard, Safe: r.nDone, Total: r.prog.Total, Cause: context.Cause(ctx)}
}

// agentSolver says whether a solver works on tasks in sandbox sessions,
// a verifier scoring each: nel's loop, or the OpenClaw CLI in its place.
func agentSolver(typ string) bool { return typ == "tool_calling" || typ == "openclaw" }

// definition is the benchmark b runs: the one its byob section declares,
// else the built-in of its name. getenv gives a managed gym server's
// address.
func definition(p *plan.Plan, b *plan.Benchmark, getenv func(string) string) (*bench.Benchmark, error) {
	if b.Harbor != nil {
		return harborDefinition(b)
	}
	switch {
	case b.Solver.Type == "tool_calling":
		if err := toolCallingBenchmark(b); err != nil {
			return nil, err
		}
	case b.Solver.Type == "openclaw" && (b.BYOB == nil || len(b.BYOB.Verifier) == 0):
		return nil, fmt.Errorf("benchmark %s: not supported yet: the openclaw solver on a benchmark other than harbor:// tasks or byob records with a verifier", b.Key)
	}
	if b.GymServer != "" {
		return gymServer(p, b, getenv)
	}
	if strings.HasPrefix(b.Name, "gym://") {
		return gymenv.Definition(b.Name)
	}
	if b.BYOB != nil {
		return bench.BYOB(b.Name, b.BYOB, p.RecipeDir, apiKeyNames(p))
	}
	def, ok := bench.Lookup(b.Name)
	if !ok {
		return nil, fmt.Errorf("benchmark %s: %q is not a built-in benchmark of this nel-run (built in: %s)", b.Key, b.Name, strings.Join(bench.Names(), ", "))
	}
	return def, nil
}

// gymServer is gym://cmd: benchmark b's definition: the managed gym
// service's server, at the address the job (or nel run) gave it.
func gymServer(p *plan.Plan, b *plan.Benchmark, getenv func(string) string) (*bench.Benchmark, error) {
	svc, ok := p.Service(b.GymServer)
	if !ok || svc.URLEnv == "" {
		return nil, fmt.Errorf("benchmark %s: the plan has no managed gym service %q", b.Key, b.GymServer)
	}
	base := getenv(svc.URLEnv)
	if base == "" {
		return nil, fmt.Errorf("benchmark %s: gym service %s: $%s is not set; it holds the server's address and is set by the job script (or nel run) once the server is ready", b.Key, svc.Name, svc.URLEnv)
	}
	return gymenv.New(base).Definition(b.Name), nil
}

// openSolver opens what the shard's samples need besides the model: a
// gym_delegation's agent and proxy, the scoring environment (probed on
// first), a tool_calling solver's sandbox. Its closer closes them in
// reverse.
func (r *runner) openSolver(ctx context.Context, first *bench.Item) (func(), error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if r.b.Solver.Type == "gym_delegation" {
		c, err := r.openDelegation(ctx)
		if err != nil {
			return nil, err
		}
		closers = append(closers, c)
	}
	c, err := r.openScoring(ctx, first)
	if err != nil {
		closeAll()
		return nil, err
	}
	closers = append(closers, c)
	if r.agentic && (r.b.Solver.SandboxTools || !r.scoresAnswers()) {
		// Tasks always work in a session (toolCallingBenchmark); an
		// ordinary benchmark's loop only when it offers sandbox tools.
		c, err := r.openAgentSandbox(ctx)
		if err != nil {
			closeAll()
			return nil, err
		}
		closers = append(closers, c)
	}
	if r.b.Solver.Type == "openclaw" {
		c, err := r.openClaw(ctx)
		if err != nil {
			closeAll()
			return nil, err
		}
		closers = append(closers, c)
	}
	return closeAll, nil
}

func (r *runner) run(ctx context.Context) (res *Result, err error) {
	defer func() { err = r.asInterrupted(ctx, err) }()
	if res, err := r.existing(); res != nil || err != nil {
		return res, err
	}
	started := time.Now().UTC()
	data, err := r.shardItems(ctx)
	if err != nil {
		return nil, err
	}
	digest, mine := data.digest, data.mine
	if data.selected < r.o.Of {
		// Shards without an item would run a server for nothing; the
		// compiler refuses this when max_problems tells, the data tells here.
		return nil, fmt.Errorf("benchmark %s: %d items to evaluate, fewer than the %d shards; compile it with cluster.shards at most %d", r.b.Key, data.selected, r.o.Of, max(data.selected, 1))
	}
	if len(mine) > 0 {
		closeSolver, err := r.openSolver(ctx, mine[0])
		if err != nil {
			return nil, err
		}
		defer closeSolver()
	}
	repeats := max(r.b.Repeats, 1)
	r.prog = Progress{Benchmark: r.b.Key, Shard: r.o.Shard, Total: len(mine) * repeats}
	r.log.Info("shard", "items", len(mine), "selected", data.selected, "dataset_items", data.total, "repeats", repeats, "dataset", digest, "streamed", data.streamed)

	j, st, err := r.openJournal(started, digest)
	if err != nil {
		return nil, err
	}
	defer func() {
		if j != nil {
			j.Close()
		}
	}()
	items, todo, err := r.resume(j, st, mine, repeats)
	if err != nil {
		return nil, err
	}
	defer r.spool.stop() // a shard that ends early; finish stopped it otherwise
	resumed := r.nDone
	r.prog.Done, r.prog.Resumed = resumed, resumed
	if resumed > 0 {
		r.log.Info("resuming from journal", "done", resumed, "todo", len(todo))
	}
	var client *model.Client
	if len(todo) > 0 {
		// Before the provenance probes and the first sample: an endpoint
		// that cannot be reached, or that refuses the key, is an error
		// now, not a dataset of failed samples.
		if client, err = r.client(); err != nil {
			return nil, err
		}
		defer client.Close()
		r.logEndpoint()
		if err := r.checkEndpoint(ctx, client); err != nil {
			return nil, err
		}
	}
	provc := r.startProvenance(ctx)
	r.report()

	if len(todo) > 0 {
		if r.o.Memory != nil {
			// Kept until the shard's files are joined from the spool.
			per := int64(limitPerInFlight)
			if len(r.svc.Interceptors) > 0 || r.svc.ModelTraffic != nil {
				per = limitPerIntercepted
			}
			defer r.o.Memory.hold(max(r.b.MaxConcurrent, 1), per)()
		}
		if err := r.runSamples(ctx, client, j, st, items, todo); err != nil {
			return nil, err
		}
	}
	prov := <-provc

	meta := map[string]string{
		results.MetaRecipeHash:    r.p.RecipeHash,
		results.MetaPlanHash:      r.p.PlanHash,
		results.MetaBenchmarkHash: r.b.Hash,
		results.MetaBenchmark:     r.b.Key,
		results.MetaNelVersion:    r.o.NelVersion,
		results.MetaScoring:       r.p.ScoringVersion,
		results.MetaDataset:       digest,
		results.MetaModel:         r.svc.Model,
		results.MetaCategory:      r.def.Category,
		results.MetaSimulated:     strconv.FormatBool(r.simulated.Load()),
		results.MetaShard:         fmt.Sprintf("%d/%d", r.o.Shard, r.o.Of),
		results.MetaStartedAt:     started.Format(time.RFC3339),
		results.MetaEndedAt:       time.Now().UTC().Format(time.RFC3339),
		results.MetaSelected:      strconv.Itoa(data.selected),
		results.MetaRepeats:       strconv.Itoa(repeats),
		results.MetaProvenance:    r.provenanceJSON(prov),
	}
	rows, err := r.spool.finish(r.final, r.trajs, r.files.Turns(), meta)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	err = j.Remove()
	j = nil
	if err != nil {
		r.log.Warn("shard complete, but its journal could not be removed", "err", err)
	}
	return &Result{Path: r.final, Rows: rows, Resumed: resumed, Simulated: r.simulated.Load()}, nil
}

// existing looks at the shard's results file from an earlier run. It
// returns the Result when the shard is complete, nothing when it is to run
// (no results yet, or --resume has infrastructure failures to send again),
// and an error when the file belongs to another plan or cannot be read.
func (r *runner) existing() (*Result, error) {
	meta, n, err := results.ReadMeta(r.final)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s exists but cannot be read (%v): delete it to run the shard again", r.final, err)
	}
	if meta[results.MetaPlanHash] != r.p.PlanHash {
		return nil, fmt.Errorf("%s holds results of another plan (%s, this is %s): use another output directory or delete it", r.final, meta[results.MetaPlanHash], r.p.PlanHash)
	}
	retry := 0
	if r.o.RetryInfra {
		if retry, err = r.reopen(meta[results.MetaDataset]); err != nil {
			return nil, err
		}
	}
	if retry == 0 {
		r.log.Info("shard already complete", "file", r.final, "rows", n)
		return &Result{Path: r.final, Rows: int(n), AlreadyComplete: true, Simulated: meta[results.MetaSimulated] == "true"}, nil
	}
	r.log.Info("running the shard's infrastructure failures again", "file", r.final, "samples", retry)
	return nil, nil
}

// load loads the benchmark's data, checked against the plan's pins.
func (r *runner) load(ctx context.Context) (*bench.Set, error) {
	if r.b.Harbor != nil {
		return r.loadHarbor(ctx)
	}
	loader := r.loader()
	set, err := r.o.Data.load(ctx, r.b.Key, func(ctx context.Context) (*bench.Set, error) {
		return r.def.Load(ctx, loader, r.b.Params)
	})
	if err != nil {
		return nil, r.loadErr(err)
	}
	r.warnDuplicates(set.Duplicates)
	if r.items != nil {
		// byob records that are tasks: never streamed (byob is not RowWise).
		return r.itemInstructions(set)
	}
	return set, nil
}

// loader is the dataset loader of the benchmark's data, checking it
// against the plan's pins.
func (r *runner) loader() bench.Loader {
	loader := r.o.Loader
	if loader == nil {
		loader = dataset.NewLoader(dataset.OptionsFromEnv(r.p.RecipeDir))
	}
	if len(r.b.Data) > 0 {
		// A locked recipe: each spec at its pinned revision, refused when
		// its content is not the locked content.
		return &dataset.Pinned{Loader: loader, Pins: r.b.Data}
	}
	if len(r.b.LocalData) > 0 {
		// Local data is hashed by content when the job is compiled: a file
		// changed since would give numbers under a hash that is not theirs.
		return &dataset.Pinned{Loader: loader, Pins: r.b.LocalData, Local: true}
	}
	return loader
}

// loadErr words an error of the benchmark's Load for the shard.
func (r *runner) loadErr(err error) error {
	if r.b.Key == r.b.Name {
		return err // the benchmark's errors start with its name
	}
	return fmt.Errorf("benchmark %s: %w", r.b.Key, err)
}

func (r *runner) warnDuplicates(dups []bench.Duplicate) {
	if d := bench.DescribeDuplicates(dups); d != "" {
		r.log.Warn("benchmark "+r.b.Key+": "+d, "duplicates", len(dups))
	}
}

// openScoring opens the scoring environment (sandbox, judges) and checks
// that it can score the benchmark, first being one of its items. The
// function it returns closes the environment.
func (r *runner) openScoring(ctx context.Context, first *bench.Item) (func(), error) {
	env, closeEnv, err := r.openEnv(ctx)
	if err != nil {
		return nil, err
	}
	closeFn := func() {
		if err := closeEnv(); err != nil {
			r.log.Warn("closing the scoring environment", "err", err)
		}
	}
	r.env = env
	s := r.def.Score(first, "")
	if s.NeedsJudge && env.Judge == nil {
		closeFn()
		return nil, fmt.Errorf("benchmark %s: %s is scored by an LLM judge: add a judge metric to its scoring.metrics (type: \"judge\", service: a model service other than the solver's)", r.b.Key, r.b.Name)
	}
	r.binary = s.Binary
	return closeFn, nil
}

// openJournal opens the shard's journal, moving aside one from another
// plan or another version of the data.
func (r *runner) openJournal(started time.Time, digest string) (*journal.Journal, *journal.State, error) {
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	jpath, hdr := r.journalPath(), r.journalHeader(digest)
	j, st, err := journal.OpenKeys(jpath, hdr)
	if errors.Is(err, journal.ErrMismatch) {
		// The journal is from another plan or another version of the data:
		// its samples do not belong in these results. Keep it aside.
		aside := r.files.StaleJournal(started)
		r.log.Warn("journal is from another run; starting the shard afresh", "journal", jpath, "moved_to", aside, "why", err)
		if rerr := os.Rename(jpath, aside); rerr != nil {
			return nil, nil, fmt.Errorf("benchmark %s: %w; and moving it aside failed: %v", r.b.Key, err, rerr)
		}
		j, st, err = journal.OpenKeys(jpath, hdr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	return j, st, nil
}

// resume opens the shard's spool and takes into it the samples the journal
// st holds as done. It returns the shard's items by id and the samples
// still to run, in row order: those not done, and with --resume those
// whose infrastructure failed.
func (r *runner) resume(j *journal.Journal, st *journal.State, mine []*bench.Item, repeats int) (_ map[string]*bench.Item, _ []journal.Key, err error) {
	jpath := r.journalPath()
	// Row order (runtime/merge's): dataset index, item id, repeat. Sent in
	// it, the samples finish nearly in it, and the spool writes them as
	// they come rather than holding them.
	slices.SortFunc(mine, func(a, b *bench.Item) int { return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.ID, b.ID)) })
	order := make([]journal.Key, 0, len(mine)*repeats)
	items := make(map[string]*bench.Item, len(mine))
	for _, it := range mine {
		items[it.ID] = it
		for rep := range repeats {
			order = append(order, journal.Key{Item: it.ID, Repeat: rep})
		}
	}
	for k := range st.Done {
		if items[k.Item] == nil || k.Repeat < 0 || k.Repeat >= repeats {
			return nil, nil, fmt.Errorf("benchmark %s: journal %s has sample %s, which is not in this shard: the data changed under the same digest?", r.b.Key, jpath, k)
		}
	}
	sp, err := newSpool(r.files.Spool(), order, r.agentic, max(r.b.MaxConcurrent, partSamples))
	if err != nil {
		return nil, nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	r.spool = sp
	defer func() {
		if err != nil {
			sp.stop()
		}
	}()
	var todo []journal.Key
	for _, k := range order {
		if _, ok := st.Done[k]; !ok {
			todo = append(todo, k)
			continue
		}
		// Read one at a time (journal.OpenKeys): a resumed shard holds
		// what the spool holds, not every sample its journal has.
		raw, err := j.Data(st, k)
		if err != nil {
			return nil, nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
		}
		var rec sampleRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, nil, fmt.Errorf("benchmark %s: journal %s: sample %s: %w", r.b.Key, jpath, k, err)
		}
		if r.o.RetryInfra && rec.Row.Outcome == string(failure.InfraError) {
			todo = append(todo, k) // --resume: its infrastructure failed, send it again
			continue
		}
		if err := r.spool.add(k, &rec); err != nil {
			return nil, nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
		}
		r.nDone++
		if rec.Simulated {
			r.simulated.Store(true)
		}
		if rec.Row.ErrorCategory != "" {
			r.prog.Failed++
		}
	}
	return items, todo, nil
}

// reopen prepares a complete shard for RetryInfra: every sample of its
// results that is not an infra_error goes into the shard's journal as done,
// and every one that is goes in as started as often as its attempts say,
// so the run that follows sends exactly the infrastructure failures, with
// their attempts counted on. The results file stays until the new one
// replaces it: a crash in between leaves the old results, or a journal the
// next run resumes. It returns how many samples will run again.
func (r *runner) reopen(digest string) (int, error) {
	rows, _, err := results.ReadRows(r.final)
	if err != nil {
		return 0, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	retry := 0
	for _, row := range rows {
		if row.Outcome == string(failure.InfraError) {
			retry++
		}
	}
	if retry == 0 {
		return 0, nil
	}
	trajs, _, err := results.ReadTrajectories(r.trajs)
	if err != nil {
		return 0, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	if len(trajs) != len(rows) {
		return 0, fmt.Errorf("benchmark %s: %s has %d rows and %s %d: delete the shard's files to run it again whole", r.b.Key, r.final, len(rows), r.trajs, len(trajs))
	}
	turns, err := r.shardTurns()
	if err != nil {
		return 0, err
	}
	j, st, err := journal.OpenKeys(r.journalPath(), r.journalHeader(digest))
	if err != nil {
		return 0, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	defer func() {
		if j != nil {
			j.Close() // an error return: the write error is what counts
		}
	}()
	for i, row := range rows {
		k := journal.Key{Item: row.ItemID, Repeat: int(row.Repeat)}
		if _, done := st.Done[k]; done {
			continue // an earlier --resume that was cut short
		}
		if row.Outcome == string(failure.InfraError) {
			for range int(row.Attempts) - st.Starts[k] {
				if err := j.Start(k); err != nil {
					return 0, err
				}
			}
			continue
		}
		if err := j.DoneValue(k, &sampleRecord{Row: row, Traj: trajs[i], Turns: turns[k]}); err != nil {
			return 0, err
		}
	}
	err = j.Close()
	j = nil
	return retry, err
}

// journalPath is the shard's journal, beside its results.
func (r *runner) journalPath() string { return r.files.Journal() }

// journalHeader is what the journal must say to belong to this shard of
// this plan over data with this digest.
func (r *runner) journalHeader(digest string) journal.Header {
	return journal.Header{PlanHash: r.p.PlanHash, Benchmark: r.b.Key, Shard: r.o.Shard, Of: r.o.Of, Dataset: digest}
}

func (r *runner) report() {
	if r.o.Progress != nil {
		r.o.Progress(r.prog)
	}
}

// datasetDigest combines the digests of the data a benchmark read.
func datasetDigest(ds []*dataset.Dataset) string {
	if len(ds) == 1 {
		return ds[0].Digest
	}
	h := sha256.New()
	for _, d := range ds {
		fmt.Fprintf(h, "%s\t%s\n", d.Spec, d.Digest)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// runSamples runs the samples in todo with at most max_concurrent in flight.
func (r *runner) runSamples(ctx context.Context, client *model.Client, j *journal.Journal, st *journal.State, items map[string]*bench.Item, todo []journal.Key) error {
	conc := max(r.b.MaxConcurrent, 1)
	if got, err := model.RaiseOpenFiles(uint64(conc) + 256); err != nil || got < uint64(conc)+64 {
		r.log.Warn("the open-files limit may be too low for the concurrency", "max_concurrent", conc, "limit", got, "err", err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		cancel(err)
	}
	p := &workerPool{sem: make(chan struct{}, conc), jobs: make(chan pendingStart)}
	done := func(jb pendingStart, rec *sampleRecord, interrupted bool) {
		if interrupted {
			return // infrastructure stopped it: it runs again next time
		}
		if err := r.finish(j, jb.key, jb.attempt, rec); err != nil {
			fail(err)
		}
	}
	p.run = func(jb pendingStart, release func()) func() {
		it := items[jb.key.Item]
		switch {
		case r.deleg != nil:
			rec, interrupted := r.delegateSample(ctx, it, jb.key.Repeat, jb.attempt)
			done(jb, rec, interrupted)
		case r.agentic:
			// The slot is held for the whole sample: max_concurrent
			// bounds the sandboxes too.
			rec, interrupted := r.agentSample(ctx, notingModel{r, client}, it, jb.key.Repeat, jb.attempt)
			done(jb, rec, interrupted)
		case p.then == nil:
			rec, interrupted := r.sample(ctx, client, it, jb.key.Repeat, jb.attempt, release)
			done(jb, rec, interrupted)
		default:
			a := r.ask(ctx, client, it, jb.key.Repeat, jb.attempt)
			if a.err != nil {
				// A failure is not scored, and the breaker watches
				// failures: it sees this one before the slot is freed, so
				// that once it stops the shard, no more than the other
				// requests in flight went out.
				rec, interrupted := r.conclude(ctx, a)
				done(jb, rec, interrupted)
				return nil // the deferred release frees the slot
			}
			release()
			return func() {
				rec, interrupted := r.conclude(ctx, a)
				done(jb, rec, interrupted)
			}
		}
		return nil
	}
	if !r.agentic && r.deleg == nil && r.def.ScoreEnv == nil && (r.env == nil || len(r.env.Judges) == 0) {
		// Scoring is local work: a few scorers do it (workerPool).
		p.startScorers(conc)
		defer close(p.then)
	}
	defer close(p.jobs) // idle workers exit; busy ones when their sample is done
	r.dispatch(ctx, client, j, st, todo, p, fail)
	p.wg.Wait()
	// The samples journaled count once their records are durable
	// (record): wait for that.
	if err := r.settle(j); err != nil {
		fail(err)
	}
	if firstErr != nil {
		return fmt.Errorf("benchmark %s: %w", r.b.Key, firstErr)
	}
	if err := ctx.Err(); err != nil {
		return &Interrupted{Benchmark: r.b.Key, Shard: r.o.Shard, Safe: r.nDone, Total: r.prog.Total, Cause: context.Cause(ctx)}
	}
	// Infrastructure failures that no later success vouched for are real
	// results once the shard is otherwise complete.
	return r.flushSuspects(j)
}

// logEndpoint logs where the samples go, and from where: the first thing
// to check when a shard on one node cannot reach a server on another. An
// api service's url is shown as written, since its ${VAR}s may hold
// secrets.
func (r *runner) logEndpoint() {
	shown := r.svc.URL
	if r.svc.URLEnv != "" {
		shown = r.o.Getenv(r.svc.URLEnv)
	}
	attrs := []any{"service", r.svc.Name, "url", shown}
	if node := r.o.Getenv("SLURMD_NODENAME"); node != "" {
		attrs = append(attrs, "node", node)
	}
	r.log.Info("endpoint", attrs...)
}

// dispatch starts the samples of todo on p, those the breaker took back
// from an outage first, until every one has run, ctx is done or a step
// fails (it calls fail). Samples may still be in flight when it returns.
func (r *runner) dispatch(ctx context.Context, client *model.Client, j *journal.Journal, st *journal.State, todo []journal.Key, p *workerPool, fail func(error)) {
	conc := cap(p.sem)
	// The first wave is paced at RampRate. Launching max_concurrent
	// requests in the same instant opens as many connections at once (a
	// SYN burst that can overflow the server's accept backlog), and with
	// an endpoint whose latency is steady the whole wave then comes back
	// together every round: a burst of CPU work that delays the next
	// round (at 2,000 in flight and 1 s latency on 2 CPUs, rounds took
	// 1.1 s instead of 1 s). Paced, the rounds stay spread out for the
	// rest of the run; later launches follow completions, unpaced.
	// The ramp never takes longer than maxRamp: past that the client is
	// short of CPU for the concurrency anyway, and pacing only costs time.
	pace := time.Duration(0)
	if r.o.RampRate > 0 {
		pace = min(time.Duration(float64(time.Second)/r.o.RampRate), maxRamp/time.Duration(conc))
	}
	rampStart := time.Now()
	launched := 0
	next := 0 // into todo
	for ctx.Err() == nil {
		// Samples the breaker took back from an outage go first.
		jb, ok := r.popRequeue()
		if !ok && next < len(todo) {
			k := todo[next]
			next++
			jb, ok = pendingStart{k, st.Starts[k] + 1}, true
		}
		if !ok {
			// Nothing left to send: wait for what is in flight. An
			// outage at the end of the run is still probed and its
			// samples sent again; otherwise the run is done.
			p.wg.Wait()
			if r.tripped() {
				if err := r.recover(ctx, client); err != nil {
					fail(err)
					return
				}
				continue
			}
			if r.hasRequeue() {
				continue
			}
			return
		}
		if r.tripped() {
			if err := r.recover(ctx, client); err != nil {
				fail(err)
				return
			}
		}
		if launched < conc && pace > 0 {
			if !sleep(ctx, time.Until(rampStart.Add(pace*time.Duration(launched)))) {
				return
			}
		}
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if err := j.Start(jb.key); err != nil {
			<-p.sem
			fail(err)
			return
		}
		launched++
		p.start(jb)
	}
}

// workerPool runs samples on worker goroutines that are reused rather than
// started per sample: a new goroutine grows its stack to what a request
// needs, copying it several times, on every sample (about 6% of the CPU at
// 2,000 in flight). A sample goes to an idle worker when there is one, or
// to a new worker otherwise; there are at most as many as samples ever ran
// at once.
//
// When scoring is local work (no judge, no sandbox), a sample's scoring,
// journaling and recording run on a fixed set of scorers rather than on
// its worker: scoring needs a deeper stack than a request, and a goroutine
// keeps the stack it grew, so that scoring on the workers left each of
// 10,000 goroutines waiting on the model with a 16-32 KiB stack (issue
// 23). Answers waiting for a scorer cost their closure, not a goroutine.
type workerPool struct {
	sem  chan struct{}     // a slot per request in flight: max_concurrent
	jobs chan pendingStart // to idle workers; closed when the shard is done
	then chan func()       // to the scorers; nil: workers score
	wg   sync.WaitGroup    // the samples started and not yet done
	// run runs one sample, calling release once its request is answered,
	// and returns what is left to do on a scorer (nil: nothing).
	run func(jb pendingStart, release func()) (then func())
}

// scorers is how many goroutines score when scoring is local. They also
// wait for the journal's fsync, which commits what all of them wrote.
const scorers = 64

// startScorers starts the scorers, with room for queue answers waiting.
func (p *workerPool) startScorers(queue int) {
	p.then = make(chan func(), queue)
	for range scorers {
		go func() {
			for then := range p.then {
				then()
				p.wg.Done()
			}
		}()
	}
}

// start runs jb, whose slot in sem the caller holds.
func (p *workerPool) start(jb pendingStart) {
	p.wg.Add(1)
	select {
	case p.jobs <- jb:
	default:
		go p.worker(jb)
	}
}

func (p *workerPool) worker(jb pendingStart) {
	for {
		if then := p.do(jb); then != nil {
			p.then <- then
		} else {
			p.wg.Done()
		}
		var ok bool
		if jb, ok = <-p.jobs; !ok {
			return
		}
	}
}

// do runs one sample, or its request when a scorer does the rest. The
// slot is held while the request is in flight, not while the answer is
// scored and journaled: max_concurrent bounds what the server sees, and
// the next request goes out at once.
func (p *workerPool) do(jb pendingStart) func() {
	released := false
	release := func() {
		if !released {
			released = true
			<-p.sem
		}
	}
	defer release()
	return p.run(jb, release)
}

// sleep waits for d or until ctx is done, and says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// finish journals a finished sample. Failures that look like the endpoint
// being down are held back until the shard ends: if the breaker trips they
// are sent again after the outage, and if the shard stops they were never
// results, and the next run retries them. Deterministic client errors are
// held back until a later sample succeeds (a request only this prompt
// makes fail is a result; the same failure on every request stops the
// shard).
func (r *runner) finish(j *journal.Journal, k journal.Key, attempt int, rec *sampleRecord) error {
	kind := classifyForBreaker(rec)
	r.mu.Lock()
	if kind != sampleOK {
		p := &pendingSample{pendingStart{k, attempt}, rec}
		if kind == sampleDown {
			r.down = append(r.down, p)
		} else {
			r.rejected = append(r.rejected, p)
		}
		err := r.health.observe(kind, rec.Status, r.o)
		r.mu.Unlock()
		if errors.Is(err, errClientStreak) {
			return r.clientErrorStop(rec)
		}
		return nil
	}
	r.health.observe(kind, 0, r.o)
	pending := r.rejected
	r.rejected = nil
	r.mu.Unlock()
	for _, p := range pending {
		if err := r.record(j, p.start.key, p.rec); err != nil {
			return err
		}
	}
	return r.record(j, k, rec)
}

func (r *runner) flushSuspects(j *journal.Journal) error {
	r.mu.Lock()
	pending := append(r.down, r.rejected...)
	r.down, r.rejected = nil, nil
	r.mu.Unlock()
	for _, p := range pending {
		if err := r.record(j, p.start.key, p.rec); err != nil {
			return fmt.Errorf("benchmark %s: %w", r.b.Key, err)
		}
	}
	if err := r.settle(j); err != nil {
		return fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	return nil
}

// record journals a finished sample. It counts (the spool takes it,
// progress is reported) once its record is durable, on the journal's
// writer: the worker that ran it goes on to the next sample rather than
// wait for the fsync, and a slow disk holds records, not workers (each
// with its stack, and the pool starts more). settle waits for them.
func (r *runner) record(j *journal.Journal, k journal.Key, rec *sampleRecord) error {
	if err := r.countErr(); err != nil {
		return err
	}
	return j.DoneValueThen(k, rec, func(err error) {
		if err == nil {
			err = r.spool.add(k, rec)
		}
		r.mu.Lock()
		if err != nil {
			r.countFailed = cmp.Or(r.countFailed, err)
			r.mu.Unlock()
			return
		}
		r.nDone++
		r.prog.Done++
		if rec.Row.ErrorCategory != "" {
			r.prog.Failed++
		}
		p := r.prog
		r.mu.Unlock()
		if r.o.Progress != nil {
			r.o.Progress(p)
		}
	})
}

// countErr is the first error of counting a journaled sample.
func (r *runner) countErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.countFailed
}

// settle returns once every sample recorded so far counts, with the first
// error of journaling or counting one.
func (r *runner) settle(j *journal.Journal) error {
	if err := j.Wait(); err != nil {
		return err
	}
	return r.countErr()
}

// client builds the model client for the benchmark's service.
func (r *runner) client() (*model.Client, error) {
	base, key, err := r.endpoint(r.svc)
	if err != nil {
		return nil, err
	}
	mw, err := r.middleware(r.svc)
	if err != nil {
		return nil, err
	}
	if wrap := r.o.ModelTransport; wrap != nil {
		chain := mw
		mw = func(rt http.RoundTripper) http.RoundTripper {
			if chain == nil {
				return wrap(rt)
			}
			return chain(wrap(rt))
		}
	}
	c, err := model.New(model.Config{
		Middleware:    mw,
		BaseURL:       base,
		APIKey:        key,
		Model:         r.svc.Model,
		Protocol:      r.svc.Protocol,
		MaxConcurrent: max(r.b.MaxConcurrent, 1),
		// The compiler filled it (compiler.EffectiveRequestTimeout,
		// already within the sample's timeout); 0, in a plan from before
		// the field, leaves only the sample's budget, as it did then.
		RequestTimeout: time.Duration(r.b.RequestTimeout * float64(time.Second)),
		Logger:         r.log,
	})
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", r.svc.Name, err)
	}
	return c, nil
}

// middleware is the service's interceptor chain for its model client (nil:
// none).
// With proxy.model_traffic, the chain also logs every call to the
// shard's model_traffic.jsonl (appended: a resumed shard keeps the calls
// of its earlier attempts).
func (r *runner) middleware(svc *plan.Service) (func(http.RoundTripper) http.RoundTripper, error) {
	if len(svc.Interceptors) == 0 && svc.ModelTraffic == nil {
		return nil, nil
	}
	env := intercept.Env{Logger: r.log, Scope: fmt.Sprintf("%s-%d", r.b.Key, r.o.Shard)}
	if svc.ModelTraffic != nil {
		f, err := os.OpenFile(r.files.ModelTraffic(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("service %s: model traffic: %w", svc.Name, err)
		}
		// Request ids name the service and the shard: unique in the run.
		env.Traffic = intercept.NewTraffic(f, *svc.ModelTraffic, fmt.Sprintf("%s-%s-%d", svc.Name, r.b.Key, r.o.Shard))
	}
	chain, err := intercept.Build(svc.Interceptors, env)
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", svc.Name, err)
	}
	return chain.Middleware(), nil
}

// endpoint resolves a service's base URL and API key on the node: an api
// service's url with its ${VAR} references expanded now, a managed
// server's from the variable the job script set when the server came up;
// the key from the variable its api_key names.
func (r *runner) endpoint(svc *plan.Service) (base, key string, err error) {
	if svc.URLEnv != "" {
		if base = r.o.Getenv(svc.URLEnv); base == "" {
			return "", "", fmt.Errorf("service %s: $%s is not set; it holds the managed server's URL and is set by the job script (or nel run) once the server is ready", svc.Name, svc.URLEnv)
		}
	} else {
		var missing []string
		u := plan.EnvRefRE.ReplaceAllStringFunc(svc.URL, func(m string) string {
			sub := plan.EnvRefRE.FindStringSubmatch(m)
			if v := r.o.Getenv(sub[1]); v != "" {
				return v
			}
			if sub[2] != "" {
				return sub[3]
			}
			missing = append(missing, sub[1])
			return ""
		})
		if len(missing) > 0 {
			return "", "", fmt.Errorf("service %s: url %q needs $%s, which is not set", svc.Name, svc.URL, strings.Join(missing, ", $"))
		}
		base = plan.BaseURL(u)
	}
	if ref := svc.APIKey; ref != nil {
		key = r.o.Getenv(ref.Name)
		if key == "" && ref.Default != nil {
			key = *ref.Default
		}
		if key == "" {
			return "", "", fmt.Errorf("service %s: its api_key comes from $%s, which is not set", svc.Name, ref.Name)
		}
	}
	return base, key, nil
}

// apiKeyNames are the variables holding the plan's API keys, which a byob
// scorer command is not given.
func apiKeyNames(p *plan.Plan) []string {
	var names []string
	for _, sv := range p.Services {
		if sv.APIKey != nil {
			names = append(names, sv.APIKey.Name)
		}
	}
	return names
}
