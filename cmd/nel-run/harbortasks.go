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

type harborTasksOptions struct{ planBenchFlags }

func newHarborTasksCmd(e *env) *cobra.Command {
	o := &harborTasksOptions{}
	c := &cobra.Command{Use: "harbor-tasks [flags]", Short: "fetch and convert a benchmark's git-sourced tasks to Harbor's format; print their folder", Long: harborTasksHelp}
	o.add(c.Flags())
	return command(e, c, false, func(ctx context.Context, _ []string) int {
		if msg := o.missing(); msg != "" {
			return usageError(e, c, msg)
		}
		return o.run(ctx, e)
	})
}

func (o *harborTasksOptions) run(ctx context.Context, e *env) int {
	p, b, err := o.load()
	if err == nil && (b.Harbor == nil || b.Harbor.Git == nil) {
		err = fmt.Errorf("benchmark %s: its tasks come from no git repository", b.Key)
	}
	if err != nil {
		e.errorf("harbor-tasks: %v", err)
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
