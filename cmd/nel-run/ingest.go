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
	planBenchFlags
	started string
}

func newIngestCmd(e *env) *cobra.Command {
	o := &ingestOptions{}
	c := &cobra.Command{Use: "ingest [flags]", Short: "read a peer harness's output into a benchmark's shard", Long: ingestHelp}
	f := c.Flags()
	o.add(f)
	f.StringVar(&o.started, "started", "", "when the harness started, RFC 3339 `TIME` (default: now)")
	return command(e, c, false, func(ctx context.Context, _ []string) int {
		if msg := o.missing(); msg != "" {
			return usageError(e, c, msg)
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
	p, b, err := o.load()
	if err != nil {
		e.errorf("ingest: %v", err)
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
