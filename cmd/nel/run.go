package main

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

	nelreport "github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/report/htmlreport"
	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/serve"
	"github.com/nel-eval/nel/runtime/shard"
)

const runHelp = `Runs a recipe on this machine, end to end: starts its process services,
runs every benchmark's shards in parallel, merges them, and prints each
benchmark's headline. Results go to <output.dir>/<benchmark>/results.parquet
(and trajectories.parquet); the suite's reports to <output.dir>/report.md and
one file per other format of output.report (report.html, report.csv, ...);
the compiled plan to <output.dir>/.nel/.

Services must be of type api (an endpoint somewhere) or process (a command
nel starts and health-waits here, e.g. 'nel-run sim-server'); GPU servers
(vllm, sglang, trt_llm) run through 'nel compile'.

Interrupted? Run the same command again: finished samples are kept and only
the rest runs. With --resume, samples that ended in an infrastructure
failure (infra_error: the endpoint, network, sandbox or a judge failed) run
again too; scored samples and model errors never do.

Before the first sample each shard probes its endpoint: a dead endpoint or a
rejected key is an error within seconds. A run stops when the same client
error (401, 403, 404, 400) fails several samples in a row, and pauses to
probe when the endpoint fails too often, sending the failed samples again
once it answers. A benchmark whose infrastructure failures pass its
max_error_rate is INVALID: its headline says so and shows no score, and nel
run exits 1 once everything is printed and written.

On a terminal a live line per benchmark shows progress; in a log (not a
terminal) one status line is printed every --progress.`

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var ovs overrides
	fs := newFlags("run", "[-o DIR] [--resume] [-O path=value]... FILE", runHelp, stderr)
	fs.Var(&ovs, "O", "override a field before validation: path.to.field=value (repeatable)")
	outFlag := fs.String("o", "", "output `DIR` (overrides output.dir)")
	every := fs.Duration("progress", 0, "status line interval when stderr is not a terminal (default: output.progress_interval)")
	verbose := fs.Bool("v", false, "log what each shard does")
	locked := fs.Bool("locked", false, "refuse a recipe with a floating image tag or an unlocked dataset (see nel lock)")
	resume := fs.Bool("resume", false, "also run again the samples that ended in infra_error, in finished shards too (scored and model_error samples are kept)")
	files, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		fs.Usage()
		return &exitError{2, errors.New("run: expected exactly one recipe")}
	}
	if *outFlag != "" {
		ovs = append(ovs, compiler.Override{Text: "-o " + *outFlag, Path: []string{"output", "dir"}, Value: *outFlag})
	}
	s, err := load(files[0], ovs)
	if err != nil {
		return err
	}
	if *locked {
		if errs := compiler.CheckLocked(s, floatingImage); len(errs) > 0 {
			return errs
		}
	}
	suite, err := runSource(ctx, s, runOptions{Every: *every, Verbose: *verbose, Resume: *resume, Title: filepath.Base(files[0])}, stdout, stderr)
	if err != nil {
		return err
	}
	return invalidRun(suite)
}

// invalidRun is an error (exit status 1) when a benchmark of the run is
// INVALID: its infrastructure failures are above its max_error_rate, so
// the run did not measure the model, even though every file was written.
func invalidRun(suite []*metrics.Bundle) error {
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

// runOptions adjust runSource.
type runOptions struct {
	Every   time.Duration // status line interval off a terminal (0: the recipe's)
	Verbose bool
	Resume  bool   // run infra_error samples again (shard.Options.RetryInfra)
	Title   string // the report's title
}

// runSource runs a loaded recipe on this machine, end to end, and returns
// its benchmarks' bundles (nel run, nel reproduce). An INVALID benchmark
// is no error here: nel run says it with its exit status, reproduce with
// its verdict.
func runSource(ctx context.Context, s *compiler.Source, o runOptions, stdout, stderr io.Writer) ([]*metrics.Bundle, error) {
	h, _, err := compiler.ComputeHashes(s)
	if err != nil {
		return nil, err
	}
	p, err := compiler.BuildPlan(s, h, version)
	if err != nil {
		return nil, err
	}
	if err := localServices(p); err != nil {
		return nil, &exitError{2, fmt.Errorf("run %s: %w", s.Path, err)}
	}

	level := slog.LevelWarn
	if o.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	out := p.OutputDir
	planPath := filepath.Join(out, ".nel", "plan-"+strings.TrimPrefix(p.PlanHash, "sha256:")[:12]+".json")
	if err := writePlan(planPath, p); err != nil {
		return nil, err
	}
	if err := writeSource(filepath.Join(out, ".nel"), s, h.Recipe); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "nel: recipe %s\nnel: plan %s → %s\n", h.Recipe, p.PlanHash, out)

	self, _ := os.Executable()
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	servers, err := serve.StartAll(ctx, p, serve.StartOptions{
		LogDir:      filepath.Join(out, "logs"),
		RecordDir:   serve.RecordDir(out),
		PathPrepend: filepath.Dir(self),
		Logger:      log,
		Progress:    func(msg string) { fmt.Fprintf(stderr, "nel: %s\n", msg) },
	})
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	defer serve.StopAll(servers, 10*time.Second)
	urls := map[string]string{}
	for _, sv := range servers {
		urls[sv.Env] = sv.URL
	}
	getenv := func(k string) string {
		if v, ok := urls[k]; ok {
			return v
		}
		return os.Getenv(k)
	}

	interval := o.Every
	if interval == 0 {
		interval = time.Duration(p.ProgressInterval * float64(time.Second))
	}
	ui := newProgressUI(stderr, p, interval)
	start := time.Now()
	var data shard.DataCache // each benchmark's data is loaded once, for all its shards
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for _, b := range p.Benchmarks {
		for i := range p.Shards {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := shard.Run(ctx, shard.Options{
					Plan: p, Benchmark: b.Key, Shard: i, Of: p.Shards,
					OutDir: out, NelVersion: version, Getenv: getenv, Logger: log,
					Progress: ui.update, Data: &data, RetryInfra: o.Resume,
				})
				if err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	ui.stop()
	// Shards of a benchmark often fail alike (a missing data file): each
	// cause once, in a stable order.
	slices.Sort(failed)
	for i := 0; i < len(failed); {
		n := 1
		for i+n < len(failed) && failed[i+n] == failed[i] {
			n++
		}
		if n > 1 {
			fmt.Fprintf(stderr, "nel: %s (%d shards)\n", failed[i], n)
		} else {
			fmt.Fprintf(stderr, "nel: %s\n", failed[i])
		}
		i += n
	}
	sums, merr := merge.Merge(merge.Options{Plan: p, OutDir: out, Logger: log})
	for _, sm := range sums {
		fmt.Fprintln(stdout, sm.Headline())
		fmt.Fprintf(stdout, "  %s\n", sm.Path)
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("run: %d of %d shards failed; fix the cause and run the same command again to finish them", len(failed), len(p.Benchmarks)*p.Shards)
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
	paths, err := writeReports(out, suite, p.Reports, nelreport.Options{Title: o.Title, Source: out})
	for _, path := range paths {
		fmt.Fprintf(stdout, "report: %s\n", path)
	}
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	fmt.Fprintf(stderr, "nel: done in %s\n", time.Since(start).Round(time.Millisecond))
	return suite, nil
}

// writeReports writes suite's reports in the formats a run writes
// (nelreport.RunFormats of the plan's Reports) into dir, and returns the
// paths written, in that order.
func writeReports(dir string, suite []*metrics.Bundle, reports []string, opts nelreport.Options) ([]string, error) {
	formats, err := nelreport.RunFormats(reports)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range formats {
		var written []string
		if f == nelreport.HTML {
			var path string
			path, err = htmlreport.WriteFile(dir, suite, opts)
			if err == nil {
				written = []string{path}
			}
		} else {
			written, err = nelreport.WriteFiles(dir, suite, []nelreport.Format{f}, opts)
		}
		paths = append(paths, written...)
		if err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// localServices checks that every service a benchmark uses can run here.
func localServices(p *plan.Plan) error {
	used := map[string]bool{}
	for _, b := range p.Benchmarks {
		used[b.Solver.Service] = true
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
		if s.Type != "api" && s.Type != "process" {
			return fmt.Errorf("service %s is a %s server: nel run starts only api and process services on this machine; compile the recipe for SLURM instead (nel compile)", s.Name, s.Type)
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
