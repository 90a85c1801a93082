package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nel-eval/nel/runtime/harness"
	"github.com/spf13/cobra"
)

const ingestHelp = `Read what a peer harness (lm-evaluation-harness, NeMo-Skills, an
eval-factory container, VLMEvalKit) wrote under <output>/<benchmark>/harness/ into the
benchmark's one shard, <output>/<benchmark>/shards/shard-00000-of-00001.parquet,
which nel-run merge then checks and merges like any other. The compiled job
runs it after the harness's container exits.

Where the harness logs its samples there is one row per (item, repeat);
where it writes aggregate scores only, the shard holds no rows and is
marked aggregate-only, and the bundle's headline is the harness's own score.`

type ingestOptions struct {
	plan, benchmark, out, started string
}

func newIngestCmd(e *env) *cobra.Command {
	o := &ingestOptions{}
	c := &cobra.Command{Use: "ingest [flags]", Short: "read a peer harness's output into a benchmark's shard", Long: ingestHelp}
	f := c.Flags()
	f.StringVar(&o.plan, "plan", "", "compiled plan `FILE` (required)")
	f.StringVar(&o.benchmark, "benchmark", "", "benchmark `NAME` in the plan (required)")
	f.StringVar(&o.out, "out", "", "output `DIR` (default: the folder holding the plan's .nel folder)")
	f.StringVar(&o.started, "started", "", "when the harness started, RFC 3339 `TIME` (default: now)")
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

func (o *ingestOptions) run(ctx context.Context, e *env) int {
	var started time.Time
	if o.started != "" {
		t, err := time.Parse(time.RFC3339, o.started)
		if err != nil {
			e.errorf("ingest: --started: %v", err)
			return exitUsage
		}
		started = t
	}
	p, err := readPlan(o.plan)
	if err != nil {
		e.errorf("ingest: %v", err)
		return exitFailure
	}
	b, ok := p.Benchmark(o.benchmark)
	if !ok {
		e.errorf("ingest: benchmark %q is not in the plan", o.benchmark)
		return exitFailure
	}
	res, err := harness.Ingest(ctx, harness.IngestOptions{
		Plan: p, Benchmark: b, OutDir: outDir(o.plan, o.out, p), NelVersion: version, Started: started,
	})
	if err != nil {
		e.errorf("ingest: %v", err)
		return exitFailure
	}
	what := fmt.Sprintf("%d rows", res.Rows)
	if res.AggregateOnly {
		what = "aggregate scores only (no per-item results)"
	}
	fmt.Fprintf(e.stderr, "nel-run ingest: %s: %s → %s\n", b.Key, what, res.Path)
	return exitOK
}
