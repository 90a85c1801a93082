package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/nel-eval/nel/runtime/shard"
)

var shardCommand = &command{
	name: "shard",
	summary: `Run shard --shard of --of of benchmark --benchmark from the compiled plan
--plan: every (item, repeat) of the shard is sent to the model, scored and
written to <output>/<benchmark>/shards/shard-I-of-N.parquet (and its
.trajectories.parquet).

Crash-safe: finished samples are journaled as they finish; after a crash or
kill, run the same command again and it finishes the shard, re-running only
the samples that were in flight. A shard that is already complete is left
alone (exit 0); with --resume its samples that ended in infra_error (the
endpoint, network, sandbox or a judge failed) run again, and its scored
samples and model errors are kept.

Progress is logged every --progress (the plan's output.progress_interval by
default).`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		planPath := fs.String("plan", "", "compiled plan `FILE` (required)")
		benchmark := fs.String("benchmark", "", "benchmark `NAME` in the plan (required)")
		idx := fs.Int("shard", -1, "index `I` of this shard, 0 <= I < N (required)")
		of := fs.Int("of", 0, "number `N` of shards (required)")
		out := fs.String("out", "", "output `DIR` (default: the folder holding the plan's .nel folder)")
		every := fs.Duration("progress", 0, "log a progress line this often (default: the plan's progress_interval)")
		resume := fs.Bool("resume", false, "also run again the samples that ended in infra_error, in a complete shard too")
		return func(ctx context.Context, e *env) int {
			switch {
			case *planPath == "":
				return usageError(e, fs, "--plan is required")
			case *benchmark == "":
				return usageError(e, fs, "--benchmark is required")
			case *of < 1:
				return usageError(e, fs, "--of must be at least 1")
			case *idx < 0 || *idx >= *of:
				return usageError(e, fs, "--shard must be in [0, --of)")
			}
			p, err := readPlan(*planPath)
			if err != nil {
				e.errorf("shard: %v", err)
				return exitFailure
			}
			interval := *every
			if interval == 0 {
				interval = time.Duration(p.ProgressInterval * float64(time.Second))
			}
			if interval <= 0 {
				interval = 30 * time.Second
			}
			prog := newProgressLog(e, interval)
			defer prog.stop()
			res, err := shard.Run(ctx, shard.Options{
				Plan: p, Benchmark: *benchmark, Shard: *idx, Of: *of,
				OutDir:     outDir(*planPath, *out, p),
				NelVersion: version,
				Logger:     e.log,
				Progress:   prog.update,
				RetryInfra: *resume,
			})
			if err != nil {
				e.errorf("shard: %v", err)
				return exitFailure
			}
			prog.stop()
			switch {
			case res.AlreadyComplete:
				fmt.Fprintf(e.stderr, "nel-run shard: %s is already complete (%d rows)\n", res.Path, res.Rows)
			default:
				fmt.Fprintf(e.stderr, "nel-run shard: wrote %s (%d rows, %d resumed from the journal)\n", res.Path, res.Rows, res.Resumed)
			}
			return exitOK
		}
	},
}
