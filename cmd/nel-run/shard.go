package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/shardmetrics"
	"github.com/spf13/cobra"
)

const shardHelp = `Run shard --shard of --of of benchmark --benchmark from the compiled plan
--plan: every (item, repeat) of the shard is sent to the model, scored and
written to <output>/<benchmark>/shards/shard-I-of-N.parquet (and its
.trajectories.parquet).

Crash-safe: finished samples are journaled as they finish; after a crash or
kill, run the same command again and it finishes the shard, re-running only
the samples that were in flight. A shard that is already complete is left
alone (exit 0); with --resume its samples that ended in infra_error (the
endpoint, network, sandbox or a judge failed) run again, and its scored
samples and model errors are kept.

Progress: on a terminal, one line redrawn in place (samples done, samples/s,
ETA, failures so far); otherwise a line every --progress (the plan's
output.progress_interval by default), the form that reads well in a log.
With --metrics-addr, the same counters, the model requests in flight and
their latency are served in Prometheus' text format on http://ADDR/metrics
while the shard runs. --cpuprofile and --memprofile write pprof profiles of
the run (go tool pprof FILE).`

type shardOptions struct {
	plan, benchmark, out string
	shard, of            int
	every                time.Duration
	resume               bool
	prof                 cli.Profiles
	metricsAddr          string
}

func newShardCmd(e *env) *cobra.Command {
	o := &shardOptions{}
	c := &cobra.Command{Use: "shard [flags]", Short: "run one shard of a benchmark from a compiled plan (crash-safe, resumable)", Long: shardHelp}
	f := c.Flags()
	f.StringVar(&o.plan, "plan", "", "compiled plan `FILE` (required)")
	f.StringVar(&o.benchmark, "benchmark", "", "benchmark `NAME` in the plan (required)")
	f.IntVar(&o.shard, "shard", -1, "index `I` of this shard, 0 <= I < N (required)")
	f.IntVar(&o.of, "of", 0, "number `N` of shards (required)")
	f.StringVar(&o.out, "out", "", "output `DIR` (default: the folder holding the plan's .nel folder)")
	f.DurationVar(&o.every, "progress", 0, "log a progress line this often (default: the plan's progress_interval)")
	f.BoolVar(&o.resume, "resume", false, "also run again the samples that ended in infra_error, in a complete shard too")
	o.prof.AddFlags(f)
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on http://`ADDR`/metrics while the shard runs (HOST:PORT, e.g. :9400)")
	return command(e, c, false, func(ctx context.Context, _ []string) int {
		switch {
		case o.plan == "":
			return usageError(e, c, "--plan is required")
		case o.benchmark == "":
			return usageError(e, c, "--benchmark is required")
		case o.of < 1:
			return usageError(e, c, "--of must be at least 1")
		case o.shard < 0 || o.shard >= o.of:
			return usageError(e, c, "--shard must be in [0, --of)")
		}
		return profiled(e, &o.prof, func() int { return o.run(ctx, e) })
	})
}

func (o *shardOptions) run(ctx context.Context, e *env) int {
	p, err := readPlan(o.plan)
	if err != nil {
		e.errorf("shard: %v", err)
		return exitFailure
	}
	interval := o.every
	if interval == 0 {
		interval = time.Duration(p.ProgressInterval * float64(time.Second))
	}
	if interval <= 0 {
		interval = 30 * time.Second
	}
	if o.out != "" {
		// nel status finds the run by its plan, in the run folder.
		if err := keepPlan(o.plan, o.out, p); err != nil {
			e.errorf("shard: %v", err)
			return exitFailure
		}
	}
	prog := newProgressLog(e, interval)
	defer prog.stop()
	opts := shard.Options{
		Plan: p, Benchmark: o.benchmark, Shard: o.shard, Of: o.of,
		OutDir:     outDir(o.plan, o.out, p),
		NelVersion: version,
		Logger:     e.log,
		Progress:   prog.update,
		RetryInfra: o.resume,
		// One shard a process: the limit is this process's.
		Memory: new(shard.MemoryLimit),
	}
	if o.metricsAddr != "" {
		stop, err := serveMetrics(ctx, e, o.metricsAddr, &opts)
		if err != nil {
			e.errorf("shard: %v", err)
			return exitFailure
		}
		defer stop()
	}
	res, err := shard.Run(ctx, opts)
	if err != nil {
		prog.stop() // ends a terminal's progress line before the error
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

// serveMetrics serves the shard's counters on addr's /metrics, fed by the
// shard's progress and its model transport, until stop.
func serveMetrics(ctx context.Context, e *env, addr string, opts *shard.Options) (stop func(), err error) {
	m := shardmetrics.New()
	bound, stop, err := shardmetrics.Serve(ctx, addr, m, e.log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "nel-run shard: metrics on http://%s/metrics\n", bound)
	progress := opts.Progress
	opts.Progress = func(p shard.Progress) {
		progress(p)
		m.Update(p)
	}
	opts.ModelTransport = m.Wrap
	return stop, nil
}
