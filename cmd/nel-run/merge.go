package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shellquote"
	"github.com/spf13/cobra"
)

const mergeHelp = `Merge the shard results of a compiled plan into
<output>/<benchmark>/results.parquet and trajectories.parquet, after checking
that the shards are complete and consistent (same plan, every shard present,
every (item, repeat) exactly once). Prints each benchmark's headline, and
writes the suite's reports beside the results as nel run does: report.md,
and each other format of the recipe's output.report but html, which nel
renders (the command is printed).

  nel-run merge --plan <output>/.nel/plan-<id>.json
  nel-run merge <output>          (the output folder of a compiled run)

With --if-complete, do nothing (successfully) while shards are missing: the
last shard of a job array to finish does the merge. --cpuprofile and
--memprofile write pprof profiles of the merge (go tool pprof FILE).

Exits 3, as nel run does, when a benchmark is INVALID (its infrastructure
failures are above max_error_rate): every file is written, but the run did
not measure the model.`

type mergeOptions struct {
	plan, out  string
	ifComplete bool
	prof       cli.Profiles
}

func newMergeCmd(e *env) *cobra.Command {
	o := &mergeOptions{}
	c := &cobra.Command{Use: "merge [flags]", Short: "check and merge the shard results of a compiled plan", Long: mergeHelp}
	f := c.Flags()
	f.StringVar(&o.plan, "plan", "", "compiled plan `FILE` (or give the output DIR as the argument)")
	f.BoolVar(&o.ifComplete, "if-complete", false, "merge only if all shards have finished; otherwise exit 0")
	f.StringVar(&o.out, "out", "", "output `DIR` (default: the folder holding the plan's .nel folder)")
	o.prof.AddFlags(f)
	return command(e, c, true, func(_ context.Context, args []string) int {
		switch {
		case o.plan == "" && len(args) == 1:
			p, err := findPlan(args[0])
			if err != nil {
				e.errorf("merge: %v", err)
				return exitFailure
			}
			o.plan = p
		case o.plan == "" && len(args) == 0:
			return usageError(e, c, "--plan or an output directory is required")
		case len(args) > 0:
			return usageError(e, c, "give either --plan or one output directory")
		}
		return profiled(e, &o.prof, func() int { return o.run(e) })
	})
}

func (o *mergeOptions) run(e *env) int {
	p, err := readPlan(o.plan)
	if err != nil {
		e.errorf("merge: %v", err)
		return exitFailure
	}
	dir := outDir(o.plan, o.out, p)
	// A compiled script puts the plan in the run folder's .nel before any
	// shard; a pod (-t k8s) reads it elsewhere and has no script to.
	if err := keepPlan(o.plan, dir, p); err != nil {
		e.errorf("merge: %v", err)
		return exitFailure
	}
	unlock, err := merge.Lock(rundir.Dir(dir).MergeLock())
	if err != nil {
		e.errorf("merge: %v", err)
		return exitFailure
	}
	defer unlock()
	if o.ifComplete && merged(dir, p) {
		// Array tasks that finish together all get here; the lock
		// let one merge, the others have nothing left to do.
		fmt.Fprintln(e.stderr, "nel-run merge: already merged by another task")
		return exitOK
	}
	sums, err := merge.Merge(merge.Options{Plan: p, OutDir: dir, Logger: e.log})
	for _, s := range sums {
		fmt.Fprintln(e.stdout, s.Headline())
		fmt.Fprintf(e.stdout, "  %s\n", s.Path)
	}
	if errors.Is(err, merge.ErrIncomplete) && o.ifComplete {
		fmt.Fprintf(e.stderr, "nel-run merge: not merging yet: %v\n", err)
		// The compiled job keeps a copy of itself beside the plan.
		if d, ok := rundir.OfPlan(o.plan); ok {
			if job := d.Job(p.PlanHash); fileExists(job) {
				fmt.Fprintf(e.stderr, "nel-run merge: a shard whose job ended without finishing it runs again with: sbatch --array=SHARD %s\n", job)
			}
		}
		return exitOK
	}
	if err != nil {
		e.errorf("merge: %v", err)
		return exitFailure
	}
	if err := writeReports(e, dir, p, sums); err != nil {
		e.errorf("merge: %v", err)
		return exitFailure
	}
	return invalidStatus(e, sums)
}

// invalidStatus is the status of a merge that wrote every file: an INVALID
// benchmark did not measure its model, so the status must not say success
// (nel run exits 3 too), or a job's exit code would pass a failed
// measurement on as a result.
func invalidStatus(e *env, sums []merge.Summary) int {
	var invalid []string
	for _, s := range sums {
		if s.Bundle.Validity.Invalid {
			invalid = append(invalid, s.Bundle.Benchmark)
		}
	}
	if len(invalid) == 0 {
		return exitOK
	}
	e.errorf("merge: INVALID: %s did not measure the model: infrastructure failures above max_error_rate (the headline says which); every file is written", strings.Join(invalid, ", "))
	return exitInvalid
}

// writeReports writes the plan's reports (report.md always, then each
// format of output.report) beside the merged results, as nel run does, and
// prints their paths. HTML is left to nel: its charts would take nel-run
// over its size budget, so nel-run says how to make it instead.
func writeReports(e *env, dir string, p *plan.Plan, sums []merge.Summary) error {
	suite := make([]*metrics.Bundle, 0, len(sums))
	for _, s := range sums {
		suite = append(suite, s.Bundle)
	}
	opts := report.Options{Source: dir}
	if p.Recipe != "" {
		opts.Title = filepath.Base(p.Recipe)
	}
	paths, htmlSkipped, err := report.WriteRun(dir, suite, p.Reports, opts, nil)
	for _, path := range paths {
		fmt.Fprintf(e.stdout, "report: %s\n", path)
	}
	if err != nil {
		return err
	}
	if htmlSkipped {
		fmt.Fprintf(e.stderr, "nel-run merge: report.html not written (nel-run does not render HTML); make it with: nel report %s -f html -o %s\n",
			shellquote.Quote(dir), shellquote.Quote(filepath.Join(dir, report.FileName(report.HTML))))
	}
	return nil
}

// findPlan finds the plan of an output directory: its one plan file.
func findPlan(dir string) (string, error) {
	matches, err := rundir.Dir(dir).Plans()
	if err != nil {
		return "", err
	}
	switch len(matches) {
	case 0:
		if _, err := os.Stat(dir); err != nil {
			return "", err
		}
		return "", fmt.Errorf("%s has no compiled plan (%s): is it the output.dir of a run?", dir, rundir.Dir("").Plan("*"))
	case 1:
		return matches[0], nil
	}
	return "", fmt.Errorf("%s holds several plans (%v): name one with --plan", dir, matches)
}

// merged reports whether every benchmark of p already has merged results of
// this very plan in dir.
func merged(dir string, p *plan.Plan) bool {
	for _, b := range p.Benchmarks {
		meta, _, err := results.ReadMeta(rundir.Dir(dir).Benchmark(b.Dir).Results())
		if err != nil || meta[results.MetaPlanHash] != p.PlanHash {
			return false
		}
	}
	return len(p.Benchmarks) > 0
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
