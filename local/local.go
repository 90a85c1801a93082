// Package local runs a recipe on this machine, end to end: it writes the
// plan where a compiled job would, starts the recipe's process services,
// runs every shard of every benchmark (runtime/shard), merges them
// (runtime/merge) and writes the suite's reports beside the results. It is
// nel run, the new run of nel reproduce, and the smoke test of nel
// validate --samples (Smoke).
//
// It is not under runtime/: nel-run never starts a local run, and the
// reports (HTML included) come from analysis/, which nothing under runtime/
// imports.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/report/render"
	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/runctl"
	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/serve"
	"github.com/nel-eval/nel/runtime/shard"
)

// Options adjust Run.
type Options struct {
	NelVersion string        // recorded in the plan and every result
	Every      time.Duration // status line interval off a terminal (0: the recipe's)
	Verbose    bool          // log what each shard does
	Resume     bool          // run infra_error samples again (shard.Options.RetryInfra)
	Title      string        // the report's title
	// RecipeText is the recipe's text when it is no file (quick mode):
	// the run folder keeps it as the run's recipe.
	RecipeText []byte
	// Quiet leaves out the recipe, plan and done lines: nel validate
	// --samples runs in a folder of its own and says what it found.
	Quiet bool
	// Continue, when set, is the run this one must continue (nel run
	// --resume): a recipe or plan hash that differs from it is refused,
	// since the run would start over instead.
	Continue *Recorded
}

// Run runs a loaded recipe on this machine, end to end, and returns its
// benchmarks' bundles. The headlines and the reports written go to
// stdout, progress and diagnostics to stderr. An INVALID benchmark is no
// error here: nel run says it with its exit status (Invalid), reproduce
// with its verdict.
func Run(ctx context.Context, s *compiler.Source, o Options, stdout, stderr io.Writer) (_ []*metrics.Bundle, err error) {
	p, release, err := prepare(s, o)
	if err != nil {
		return nil, err
	}
	defer release()
	// What nel run says goes to logs/run.log too, for nel logs; the live
	// progress bars of a terminal stay on the terminal.
	ui := stderr
	runLog := io.Discard // what goes to logs/run.log only
	if logFile, lerr := openRunLog(rundir.Dir(p.OutputDir)); lerr == nil {
		defer logFile.Close()
		runLog = logFile
		defer func() {
			if err != nil { // the caller prints it; the log keeps it too
				fmt.Fprintf(logFile, "nel: %v\n", err)
			}
		}()
		stderr = io.MultiWriter(stderr, logFile)
		if !cli.IsTerminal(ui) {
			ui = stderr
		}
	}
	if !o.Quiet {
		fmt.Fprintf(stderr, "nel: recipe %s\nnel: plan %s → %s\n", p.RecipeHash, p.PlanHash, p.OutputDir)
		if o.RecipeText != nil {
			out := rundir.Dir(p.OutputDir)
			fmt.Fprintf(stderr, "nel: recipe kept as %s%s\n", out.Recipe(filepath.Base(s.Path)), withOverrides(s, out))
		}
	}
	level := slog.LevelWarn
	if o.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	servers, err := startServices(ctx, p, log, stderr)
	if err != nil {
		return nil, err
	}
	defer serve.StopAll(servers, 10*time.Second)

	start := time.Now()
	getenv := serviceEnv(servers)
	t := newTally(p)
	failed := runShards(ctx, p, o, getenv, log, t, shardOutput{stderr, ui, runLog})
	failed += runHarnesses(ctx, s, p, o, getenv, stderr)
	sums, merr := merge.Merge(merge.Options{Plan: p, OutDir: p.OutputDir, Logger: log})
	for _, sm := range sums {
		fmt.Fprintln(stdout, sm.Headline())
		fmt.Fprintf(stdout, "  %s\n", sm.Path)
	}
	if ctx.Err() != nil && failed > 0 {
		// What the whole run keeps, not each shard's part.
		return nil, t.interrupted(context.Cause(ctx))
	}
	if failed > 0 {
		return nil, &ShardsFailed{Failed: failed, Of: shardCount(p)}
	}
	if merr != nil {
		return nil, fmt.Errorf("run: %w", merr)
	}
	// The suite's reports beside the results, as `nel report OUT -f ...`
	// would write them: report.md always, then each format of
	// output.report (report.html, report.csv, ...).
	suite := make([]*metrics.Bundle, 0, len(sums))
	for _, sm := range sums {
		suite = append(suite, sm.Bundle)
	}
	paths, err := render.WriteRun(p.OutputDir, suite, p.Reports, report.Options{Title: o.Title, Source: p.OutputDir})
	for _, path := range paths {
		fmt.Fprintf(stdout, "report: %s\n", path)
	}
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if !o.Quiet {
		fmt.Fprintf(stderr, "nel: done in %s\n", time.Since(start).Round(time.Millisecond))
	}
	return suite, nil
}

// ShardsFailed is Run's error when shards failed; each cause was printed
// as it happened.
type ShardsFailed struct{ Failed, Of int }

func (e *ShardsFailed) Error() string {
	return fmt.Sprintf("run: %d of %d shards failed; fix the cause and run the same command again to finish them", e.Failed, e.Of)
}

// prepare builds s's plan for this machine, records this process as the
// folder's run (refusing while another runs there, before anything is
// written), and writes the plan, and the recipe it came from, under
// <output.dir>/.nel/. release removes the process record.
func prepare(s *compiler.Source, o Options) (p *plan.Plan, release func(), err error) {
	h, _, err := compiler.ComputeHashes(s)
	if err != nil {
		return nil, nil, err
	}
	if p, err = compiler.BuildPlan(s, h, o.NelVersion); err != nil {
		return nil, nil, err
	}
	if err := localServices(p); err != nil {
		return nil, nil, exitcode.New(exitcode.Usage, fmt.Errorf("run %s: %w", s.Path, err))
	}
	out := rundir.Dir(p.OutputDir)
	if o.Resume && o.Continue == nil {
		if o.Continue, err = ReadRecorded(out); err != nil {
			return nil, nil, err
		}
	}
	if err := o.Continue.check(h.Recipe, p.PlanHash); err != nil {
		return nil, nil, err
	}
	if release, err = runctl.Hold(out, p.PlanHash); err != nil {
		return nil, nil, fmt.Errorf("run: %w", err)
	}
	if err := writePlan(out.Plan(p.PlanHash), p); err != nil {
		release()
		return nil, nil, err
	}
	if err := WriteSource(out, s, h.Recipe, o.RecipeText); err != nil {
		release()
		return nil, nil, err
	}
	return p, release, nil
}

// startServices starts p's process services, with nel-run found beside
// this executable first on their PATH.
func startServices(ctx context.Context, p *plan.Plan, log *slog.Logger, stderr io.Writer) ([]*serve.Server, error) {
	self, _ := os.Executable()
	self, err := filepath.EvalSymlinks(self)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	// A gym service's nel-run serve reads the run's plan (written by
	// prepare) as a job's reads its own: from $NEL_PLAN, and writes its
	// endpoint under $NEL_OUT. $NEL_RUN is
	// emptied so that its command finds the nel-run beside nel on the
	// PATH, not one an outer environment names.
	planFile, err := filepath.Abs(rundir.Dir(p.OutputDir).Plan(p.PlanHash))
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	out, err := filepath.Abs(p.OutputDir)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	servers, err := serve.StartAll(ctx, p, serve.StartOptions{
		Env:         []string{"NEL_PLAN=" + planFile, "NEL_RUN=", "NEL_OUT=" + out},
		LogDir:      string(rundir.Dir(p.OutputDir).Logs()),
		RecordDir:   rundir.Dir(p.OutputDir).Servers(),
		PathPrepend: filepath.Dir(self),
		Logger:      log,
		Progress:    func(msg string) { fmt.Fprintf(stderr, "nel: %s\n", msg) },
	})
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return servers, nil
}

// shardOutput is where runShards writes: diagnostics, the progress bars,
// and what goes to the run's log only.
type shardOutput struct{ stderr, ui, runLog io.Writer }

// runShards runs every shard of every benchmark at once, showing progress,
// says each distinct failure once and returns how many shards failed. t
// counts each shard's samples; a shard that was interrupted says so in the
// run's log only (Run says what the whole run kept).
func runShards(ctx context.Context, p *plan.Plan, o Options, getenv func(string) string, log *slog.Logger, t *tally, out shardOutput) int {
	interval := o.Every
	if interval == 0 {
		interval = time.Duration(p.ProgressInterval * float64(time.Second))
	}
	bars := newProgressUI(out.ui, p, interval)
	var data shard.DataCache // each benchmark's data is loaded once, for all its shards
	// One memory limit for the process, counting the requests in flight of
	// every shard that runs: a limit per shard would count only its own
	// requests, and the first shard to end would lift it under the others.
	// One rather than none: a run of several benchmarks at thousands in
	// flight each is what a node's job runs, and its memory is as bounded
	// here as there, for the same GC work. Measured with two shards of 2,000
	// in flight in one process against nel-run sim-server (1 s, 10,000
	// samples each, 2 cores): peak RSS 168-172 MB with it, 202-223 MB
	// without; CPU 3.3-3.8 s against 2.9-3.0 s.
	var mem shard.MemoryLimit
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed, interrupted []string
	for _, b := range p.Benchmarks {
		if b.Harness != nil {
			continue // runHarnesses runs it
		}
		for i := range p.Shards {
			wg.Go(func() {
				res, err := shard.Run(ctx, shard.Options{
					Plan: p, Benchmark: b.Key, Shard: i, Of: p.Shards,
					OutDir: p.OutputDir, NelVersion: o.NelVersion, Getenv: getenv, Logger: log,
					Progress: bars.update, Data: &data, RetryInfra: o.Resume, Memory: &mem,
				})
				t.add(b.Key, res, err)
				if err == nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if errors.As(err, new(*shard.Interrupted)) {
					interrupted = append(interrupted, err.Error())
				} else {
					failed = append(failed, err.Error())
				}
			})
		}
	}
	wg.Wait()
	bars.stop()
	sayFailures(out.stderr, failed)
	sayFailures(out.runLog, interrupted)
	return len(failed) + len(interrupted)
}

// shardCount is how many shards the run has: Shards per benchmark, one
// per harness benchmark.
func shardCount(p *plan.Plan) int {
	n := 0
	for _, b := range p.Benchmarks {
		if b.Harness != nil {
			n++
		} else {
			n += p.Shards
		}
	}
	return n
}

// serviceEnv is the environment the shards see: the started servers'
// URL variables, then the process's own.
func serviceEnv(servers []*serve.Server) func(string) string {
	urls := map[string]string{}
	for _, sv := range servers {
		urls[sv.Env] = sv.URL
	}
	return func(k string) string {
		if v, ok := urls[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
}

// sayFailures prints each cause once, in a stable order: shards of a
// benchmark often fail alike (a missing data file).
func sayFailures(w io.Writer, failed []string) {
	slices.Sort(failed)
	for i := 0; i < len(failed); {
		n := 1
		for i+n < len(failed) && failed[i+n] == failed[i] {
			n++
		}
		if n > 1 {
			fmt.Fprintf(w, "nel: %s (%d shards)\n", failed[i], n)
		} else {
			fmt.Fprintf(w, "nel: %s\n", failed[i])
		}
		i += n
	}
}

// Invalid is an error (exit status 1) when a benchmark of suite is
// INVALID: its infrastructure failures are above its max_error_rate, so
// the run did not measure the model, even though every file was written.
func Invalid(suite []*metrics.Bundle) error {
	var bad []string
	for _, b := range suite {
		if v := b.Validity; v.Invalid {
			bad = append(bad, fmt.Sprintf("%s (%s > max_error_rate %s)", b.Benchmark, metrics.Percent(v.Rate), metrics.Percent(v.MaxErrorRate)))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("run: %d of %d benchmarks INVALID, too many infrastructure failures: %s; fix the cause and run again with --resume to retry the failed samples",
		len(bad), len(suite), strings.Join(bad, ", "))
}

// localServices checks that every service a benchmark uses can run here,
// and keeps only those in p.
func localServices(p *plan.Plan) error {
	used := map[string]bool{}
	for _, b := range p.Benchmarks {
		used[b.Solver.Service] = true
		if b.Solver.ResourceService != "" {
			used[b.Solver.ResourceService] = true // a tool_calling solver's Gym tools
		}
		if b.Solver.GymService != "" {
			used[b.Solver.GymService] = true // a gym_delegation solver's agent
		}
		if b.GymServer != "" {
			used[b.GymServer] = true // a gym://cmd: benchmark's server
		}
		for _, m := range b.Scoring.Metrics {
			if m.Service != "" {
				used[m.Service] = true // a judge's service
			}
		}
	}
	var keep []plan.Service
	for _, s := range p.Services {
		if !used[s.Name] {
			continue
		}
		if s.Type != "api" && s.Type != "process" && s.Type != "gym" {
			return fmt.Errorf("service %s is a %s server: nel run starts only process and gym services on this machine (and calls api services and running gym servers); compile the recipe for SLURM instead (nel compile)", s.Name, s.Type)
		}
		keep = append(keep, s)
	}
	p.Services = keep
	return nil
}

// writePlan writes the plan where the compiled scripts put theirs, so that
// nel-run merge OUTPUT works on a local run too.
func writePlan(path string, p *plan.Plan) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("run: write plan: %w", err)
	}
	return os.Rename(tmp, path)
}

// withOverrides says, after a kept recipe's path, that the run also had
// -O overrides (recorded in the source record), which running the copy
// again needs too.
func withOverrides(s *compiler.Source, out rundir.Dir) string {
	for _, o := range s.Overrides {
		if !slices.Equal(o.Path, []string{"output", "dir"}) {
			return " (with the -O overrides recorded in " + out.Source() + ")"
		}
	}
	return ""
}
