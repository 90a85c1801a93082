package main

import (
	"fmt"
	"time"

	"github.com/nel-eval/nel/runctl"
	"github.com/spf13/cobra"
)

const stopHelp = `Stops a run. For a run folder RUN run by nel run on this host: SIGTERM to that
nel run, which stops its shards and servers; every finished sample stays in
the shards' journals, and nel run --resume RUN continues where it stopped.
For a run submitted to SLURM: scancel of every job of the run that is
queued or running (the jobs its job scripts recorded in RUN, auto-resume
successors included); resubmitting the job script continues it. For a SLURM
job id: scancel of that job.

Exit status: 0 stopped, 1 failure (nothing of the run is running, scancel
failed), 2 usage error.`

func newStopCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "stop RUN|JOBID",
		Short: "stop a running run (nel run, or its SLURM jobs)",
		Long:  stopHelp,
		RunE: func(c *cobra.Command, args []string) error {
			t, err := target(e, c, args)
			if err != nil {
				return err
			}
			msg, err := t.Stop(c.Context(), runctl.Slurm{}, 30*time.Second)
			if err != nil {
				return fmt.Errorf("stop: %w", err)
			}
			fmt.Fprintf(e.stdout, "nel: %s\n", msg)
			return nil
		},
	}
	return c
}
