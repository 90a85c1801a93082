package main

import (
	"context"
	"flag"
	"fmt"
)

// The shard and merge commands are defined here with their final flags so
// that compiled scripts can already call them; their bodies arrive with the
// runtime issue.

var shardCommand = &command{
	name: "shard",
	summary: `Run shard --shard of --of of benchmark --benchmark from the compiled plan
--plan, writing its results next to the plan.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		plan := fs.String("plan", "", "compiled plan `FILE` (required)")
		benchmark := fs.String("benchmark", "", "benchmark `NAME` in the plan (required)")
		shard := fs.Int("shard", -1, "index `I` of this shard, 0 <= I < N (required)")
		of := fs.Int("of", 0, "number `N` of shards (required)")
		return func(_ context.Context, e *env) int {
			switch {
			case *plan == "":
				return usageError(e, fs, "--plan is required")
			case *benchmark == "":
				return usageError(e, fs, "--benchmark is required")
			case *of < 1:
				return usageError(e, fs, "--of must be at least 1")
			case *shard < 0 || *shard >= *of:
				return usageError(e, fs, "--shard must be in [0, --of)")
			}
			return notImplemented(e, "shard")
		}
	},
}

var mergeCommand = &command{
	name: "merge",
	summary: `Merge the shard results of the compiled plan --plan. With --if-complete,
do nothing (successfully) unless every shard has finished.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		plan := fs.String("plan", "", "compiled plan `FILE` (required)")
		fs.Bool("if-complete", false, "merge only if all shards have finished; otherwise exit 0")
		return func(_ context.Context, e *env) int {
			if *plan == "" {
				return usageError(e, fs, "--plan is required")
			}
			return notImplemented(e, "merge")
		}
	},
}

func notImplemented(e *env, name string) int {
	fmt.Fprintf(e.stderr, "nel-run %s: not implemented yet (arrives with the runtime issue)\n", name)
	return exitFailure
}

var withServicesCommand = &command{
	name: "with-services",
	args: true,
	summary: `Start the managed services of the compiled plan --plan (local runs, the
Makefile target), wait until they are ready, run the command after --, and
stop the services when it ends.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		plan := fs.String("plan", "", "compiled plan `FILE` (required)")
		return func(_ context.Context, e *env) int {
			if *plan == "" {
				return usageError(e, fs, "--plan is required")
			}
			return notImplemented(e, "with-services")
		}
	},
}
