package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
)

var mergeCommand = &command{
	name: "merge",
	args: true,
	summary: `Merge the shard results of a compiled plan into
<output>/<benchmark>/results.parquet and trajectories.parquet, after checking
that the shards are complete and consistent (same plan, every shard present,
every (item, repeat) exactly once). Prints each benchmark's headline, and
writes the suite's reports beside the results as nel run does: report.md,
and each other format of the recipe's output.report but html, which nel
renders (the command is printed).

  nel-run merge --plan <output>/.nel/plan-<id>.json
  nel-run merge <output>          (the output folder of a compiled run)

With --if-complete, do nothing (successfully) while shards are missing: the
last shard of a job array to finish does the merge.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		planPath := fs.String("plan", "", "compiled plan `FILE` (or give the output DIR as the argument)")
		ifComplete := fs.Bool("if-complete", false, "merge only if all shards have finished; otherwise exit 0")
		out := fs.String("out", "", "output `DIR` (default: the folder holding the plan's .nel folder)")
		return func(_ context.Context, e *env) int {
			path := *planPath
			switch {
			case path == "" && fs.NArg() == 1:
				p, err := findPlan(fs.Arg(0))
				if err != nil {
					e.errorf("merge: %v", err)
					return exitFailure
				}
				path = p
			case path == "" && fs.NArg() == 0:
				return usageError(e, fs, "--plan or an output directory is required")
			case fs.NArg() > 0:
				return usageError(e, fs, "give either --plan or one output directory")
			}
			p, err := readPlan(path)
			if err != nil {
				e.errorf("merge: %v", err)
				return exitFailure
			}
			dir := outDir(path, *out, p)
			unlock, err := merge.Lock(filepath.Join(dir, ".nel", "merge.lock"))
			if err != nil {
				e.errorf("merge: %v", err)
				return exitFailure
			}
			defer unlock()
			if *ifComplete && merged(dir, p) {
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
			if errors.Is(err, merge.ErrIncomplete) && *ifComplete {
				fmt.Fprintf(e.stderr, "nel-run merge: not merging yet: %v\n", err)
				// The compiled job keeps a copy of itself beside the plan.
				job := filepath.Join(filepath.Dir(path), "job-"+strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "plan-"), ".json")+".sbatch")
				if _, serr := os.Stat(job); serr == nil {
					fmt.Fprintf(e.stderr, "nel-run merge: a shard whose job ended without finishing it runs again with: sbatch --array=SHARD %s\n", job)
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
			return exitOK
		}
	},
}

// writeReports writes the plan's reports (report.md always, then each
// format of output.report) beside the merged results, as nel run does, and
// prints their paths. HTML is left to nel: its charts would take nel-run
// over its size budget, so nel-run says how to make it instead.
func writeReports(e *env, dir string, p *plan.Plan, sums []merge.Summary) error {
	formats, err := report.RunFormats(p.Reports)
	if err != nil {
		return err
	}
	html := slices.Contains(formats, report.HTML)
	formats = slices.DeleteFunc(formats, func(f report.Format) bool { return f == report.HTML })
	suite := make([]*metrics.Bundle, 0, len(sums))
	for _, s := range sums {
		suite = append(suite, s.Bundle)
	}
	opts := report.Options{Source: dir}
	if p.Recipe != "" {
		opts.Title = filepath.Base(p.Recipe)
	}
	paths, err := report.WriteFiles(dir, suite, formats, opts)
	for _, path := range paths {
		fmt.Fprintf(e.stdout, "report: %s\n", path)
	}
	if err != nil {
		return err
	}
	if html {
		fmt.Fprintf(e.stderr, "nel-run merge: report.html not written (nel-run does not render HTML); make it with: nel report %s -f html -o %s\n",
			shellWord(dir), shellWord(filepath.Join(dir, report.FileName(report.HTML))))
	}
	return nil
}

// shellWord quotes s for a POSIX shell when it needs quoting.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// findPlan finds the plan of an output directory: the one file
// <dir>/.nel/plan-*.json.
func findPlan(dir string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, ".nel", "plan-*.json"))
	if err != nil {
		return "", err
	}
	switch len(matches) {
	case 0:
		if _, err := os.Stat(dir); err != nil {
			return "", err
		}
		return "", fmt.Errorf("%s has no compiled plan (.nel/plan-*.json): is it the output.dir of a run?", dir)
	case 1:
		return matches[0], nil
	}
	sort.Strings(matches)
	return "", fmt.Errorf("%s holds several plans (%v): name one with --plan", dir, matches)
}

// merged reports whether every benchmark of p already has merged results of
// this very plan in dir.
func merged(dir string, p *plan.Plan) bool {
	for _, b := range p.Benchmarks {
		meta, _, err := results.ReadMeta(filepath.Join(dir, b.Dir, "results.parquet"))
		if err != nil || meta[results.MetaPlanHash] != p.PlanHash {
			return false
		}
	}
	return len(p.Benchmarks) > 0
}
