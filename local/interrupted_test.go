package local

import (
	"errors"
	"syscall"
	"testing"

	"github.com/nel-eval/nel/internal/interrupt"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shard"
)

// An interrupted run says what the whole run keeps, across shards and
// benchmarks, not one shard's part (issue 27: a shard's "144 of 300" was
// read as the run's, which had 288 of 600). Two benchmarks of 300
// samples, each in two shards of 150.
func TestInterruptedTotals(t *testing.T) {
	sig := &interrupt.Signal{Sig: syscall.SIGINT}
	p := &plan.Plan{Benchmarks: []plan.Benchmark{{Key: "gsm8k"}, {Key: "math500"}, {Key: "lm-eval://x", Harness: &plan.Harness{}}}}
	stopped := func(key string, shardNo, safe, total int) error {
		return &shard.Interrupted{Benchmark: key, Shard: shardNo, Safe: safe, Total: total, Cause: sig}
	}

	all := newTally(p)
	all.add("gsm8k", nil, stopped("gsm8k", 0, 70, 150))
	all.add("gsm8k", nil, stopped("gsm8k", 1, 74, 150))
	all.add("math500", &shard.Result{Rows: 150}, nil) // finished: all 150 kept
	all.add("math500", nil, stopped("math500", 1, 0, 150))
	// 70 + 74 + 150 + 0 = 294 of 4 × 150 = 600; the harness benchmark
	// keeps no journal and is not listed.
	e := all.interrupted(sig)
	want := "run: interrupted (SIGINT received): 294 of 600 samples are safe (gsm8k 144 of 300, math500 150 of 300); run the same command again to finish"
	if e.Error() != want {
		t.Errorf("got  %q\nwant %q", e.Error(), want)
	}
	var got *interrupt.Signal
	if !errors.As(e, &got) || got.Status() != 130 {
		t.Errorf("the error does not carry SIGINT (exit 130): %v", got)
	}

	// A shard stopped before it knew its samples (still loading its data,
	// probing its endpoint) makes the total a lower bound.
	some := newTally(p)
	some.add("gsm8k", nil, stopped("gsm8k", 0, 70, 150))
	some.add("gsm8k", nil, stopped("gsm8k", 1, 0, 0))
	some.add("math500", nil, errors.New("benchmark math500: probe: context canceled"))
	some.add("math500", nil, stopped("math500", 1, 3, 150))
	want = "run: interrupted (SIGTERM received): 73 of at least 300 samples are safe (gsm8k 70 of at least 150, math500 3 of at least 150); run the same command again to finish"
	if got := some.interrupted(&interrupt.Signal{Sig: syscall.SIGTERM}).Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}

	// No shard knew its samples: no "of at least 0", just what is safe.
	none := newTally(p)
	none.add("gsm8k", nil, errors.New("benchmark gsm8k: load: context canceled"))
	none.add("math500", nil, errors.New("benchmark math500: load: context canceled"))
	want = "run: interrupted (SIGTERM received): 0 samples are safe (gsm8k 0, math500 0); run the same command again to finish"
	if got := none.interrupted(&interrupt.Signal{Sig: syscall.SIGTERM}).Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
