package main

import (
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/runctl"
	"github.com/spf13/cobra"
)

const statusHelp = `Says where a run stands. RUN is a run folder (a recipe's output.dir): per
benchmark, the samples done of the total (known once a shard has finished),
the shards finished and those started (running, or interrupted when
nothing runs), the samples in flight and those that failed (model or
infrastructure errors, and how many of them were infrastructure failures,
which are never scored), read from its shard files and journals without
touching them; while its nel run runs here and the totals are known, an ETA
at the rate since it started; and whether it still runs: the nel run recorded in the
folder (its pid, on this host) or the SLURM jobs its job scripts recorded
there (squeue, then sacct). JOBID is a SLURM job id (123, or an array task
123_4): its state.

The state is running, finished (every benchmark merged), stopped (nothing
runs and the run is not finished: nel run --resume RUN, or resubmitting its
job script, continues it) or unknown (its nel run is on another host).

Exit status: 0 success, 1 failure (an unreadable folder, squeue missing for
a job), 2 usage error (neither a run folder nor a job id).`

func newStatusCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status RUN|JOBID [--json]",
		Short: "where a run stands: progress per benchmark, and whether it still runs",
		Long:  statusHelp,
		RunE: func(c *cobra.Command, args []string) error {
			t, err := target(e, c, args)
			if err != nil {
				return err
			}
			st, err := t.Status(c.Context(), runctl.Slurm{})
			if err != nil {
				return err
			}
			return st.Render(e.stdout, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return c
}

// target reads the one argument of nel status, logs and stop: a run folder
// or a SLURM job id.
func target(e *env, c *cobra.Command, args []string) (runctl.Target, error) {
	if len(args) != 1 {
		return runctl.Target{}, usageError(e, c, "%s: expected one run folder or job id", c.Name())
	}
	t, err := runctl.Resolve(args[0])
	if err != nil {
		return runctl.Target{}, exitcode.Usagef("%s: %v", c.Name(), err)
	}
	return t, nil
}
