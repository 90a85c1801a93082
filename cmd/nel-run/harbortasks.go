package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/nel-eval/nel/runtime/harbor/tbench"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/spf13/cobra"
)

const harborTasksHelp = `Make the Harbor tasks of a benchmark built from a git repository (NeMo
Evaluator's terminal-bench-v1, terminal-bench-hard, terminal-bench-hard-aa-split):
fetch the repository at the plan's pinned commit and convert its Terminal-Bench v1
tasks to Harbor's format, under <output>/.nel/sources/, once per run folder; print
the tasks' folder. The compiled job runs it before the Harbor CLI (solver type
harbor), which runs that folder; a shard of nel's own loop does the same itself.

A repository that cannot be fetched, or a commit it does not have, is an
infrastructure error naming the URL and the revision.`

type harborTasksOptions struct {
	plan, benchmark, out string
}

func newHarborTasksCmd(e *env) *cobra.Command {
	o := &harborTasksOptions{}
	c := &cobra.Command{Use: "harbor-tasks [flags]", Short: "fetch and convert a benchmark's git-sourced tasks to Harbor's format; print their folder", Long: harborTasksHelp}
	f := c.Flags()
	f.StringVar(&o.plan, "plan", "", "compiled plan `FILE` (required)")
	f.StringVar(&o.benchmark, "benchmark", "", "benchmark `NAME` in the plan (required)")
	f.StringVar(&o.out, "out", "", "output `DIR` (default: the folder holding the plan's .nel folder)")
	return command(e, c, false, func(ctx context.Context, _ []string) int {
		switch {
		case o.plan == "":
			return usageError(e, c, "--plan is required")
		case o.benchmark == "":
			return usageError(e, c, "--benchmark is required")
		}
		return o.run(ctx, e)
	})
}

func (o *harborTasksOptions) run(ctx context.Context, e *env) int {
	p, err := readPlan(o.plan)
	if err != nil {
		e.errorf("harbor-tasks: %v", err)
		return exitFailure
	}
	b, ok := p.Benchmark(o.benchmark)
	if !ok || b.Harbor == nil || b.Harbor.Git == nil {
		e.errorf("harbor-tasks: benchmark %q is not in the plan, or its tasks come from no git repository", o.benchmark)
		return exitFailure
	}
	// Absolute: the job mounts the folder at the path printed.
	sources, err := filepath.Abs(rundir.Dir(outDir(o.plan, o.out, p)).Sources())
	if err == nil {
		sources, err = tbench.Prepare(ctx, b.Harbor.Dataset, *b.Harbor.Git, sources, e.log)
	}
	if err != nil {
		e.errorf("harbor-tasks: benchmark %s: %v", b.Key, err)
		return exitFailure
	}
	fmt.Fprintln(e.stdout, sources)
	return exitOK
}
