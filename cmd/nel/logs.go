package main

import (
	"github.com/nel-eval/nel/runctl"
	"github.com/spf13/cobra"
)

const logsHelp = `Prints a run's log files, each after a "==> FILE <==" line: for a run folder
RUN, everything in RUN/logs/ (nel run's own log run.log, the logs of servers,
sandboxes and shards) and the output files of its SLURM jobs while SLURM
still knows them (scontrol); for a SLURM job id, that job's output file.

--shard N shows shard N only: its own log files (a heterogeneous SLURM job's
logs/shard-<benchmark>-N-<job>.log) whole, and of every other file the lines
that name it (shard=N/…: what nel run -v and nel-run log of a shard, and a
shard's warnings and errors at any verbosity); a file with none is left out.

--tail N prints the last N lines of each file. --follow then keeps printing
what is appended, and files that appear, until the run ends (its nel run
exits, or none of its jobs is queued or running) or you press Ctrl-C.

Exit status: 0 success, 1 failure (no log files yet), 2 usage error.`

func newLogsCmd(e *env) *cobra.Command {
	o := runctl.LogOptions{Tail: -1}
	var shard int
	c := &cobra.Command{
		Use:   "logs RUN|JOBID [--follow] [--tail N] [--shard N]",
		Short: "print (and follow) a run's log files",
		Long:  logsHelp,
		RunE: func(c *cobra.Command, args []string) error {
			t, err := target(e, c, args)
			if err != nil {
				return err
			}
			if c.Flags().Changed("shard") {
				o.Shard = &shard
			}
			return t.Logs(c.Context(), runctl.Slurm{}, e.stdout, o)
		},
	}
	f := c.Flags()
	f.BoolVarP(&o.Follow, "follow", "f", false, "keep printing what is appended until the run ends")
	f.IntVarP(&o.Tail, "tail", "n", -1, "print only the last `N` lines of each file (default: all)")
	f.IntVar(&shard, "shard", 0, "show shard `N` only: its own logs, and the lines of the others that name it")
	return c
}
