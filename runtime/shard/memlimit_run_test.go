package shard_test

import (
	"context"
	"math"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// unlimited is a plan of items in shards against an in-process simulator,
// in a process with no memory limit until the test ends.
func unlimited(t *testing.T, items, shards int) *plan.Plan {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	data := writeGSM8K(t, t.TempDir(), items)
	srv := simServer(t, sim.Config{Accuracy: 0.7, Seed: 1}, "gsm8k", data)
	return testPlan(srv.URL, data, shards, 1, nil, nil)
}

// A shard leaves the process's memory settings alone unless its caller
// gives it a limit: a library that set one for its own requests would
// govern every other shard and server of the process.
func TestShardLeavesMemoryLimitAlone(t *testing.T) {
	p := unlimited(t, 50, 1)
	var mu sync.Mutex
	var seen []int64
	progress := func(pr shard.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if pr.Done > 0 {
			seen = append(seen, debug.SetMemoryLimit(-1))
		}
	}
	if _, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: t.TempDir(), NelVersion: "test", Progress: progress}); err != nil {
		t.Fatal(err)
	}
	for _, l := range seen {
		if l != math.MaxInt64 {
			t.Fatalf("a memory limit of %d while the shard ran, want none", l)
		}
	}
	if len(seen) != 50 {
		t.Fatalf("%d progress reports, want 50", len(seen))
	}
}

// Two shards of one process share its limit: it counts both shards'
// requests in flight, and the first to end does not lift it under the
// other. Each shard waits, at its first finished sample, until the other
// has one too; shard 1 then looks at the limit, waits until shard 0 has
// ended, and looks again.
func TestShardsShareMemoryLimit(t *testing.T) {
	p := unlimited(t, 200, 2)
	p.Benchmarks[0].MaxConcurrent = 4000 // 47 MiB of requests a shard: more than the base
	var mem shard.MemoryLimit
	out := t.TempDir()
	run := func(i int, progress func(shard.Progress)) error {
		_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: i, Of: 2,
			OutDir: out, NelVersion: "test", Progress: progress, Memory: &mem})
		return err
	}
	first := make(chan struct{})
	started := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var both, after int64
	var once [2]sync.Once
	meet := func(i int, then func()) func(shard.Progress) {
		return func(pr shard.Progress) {
			if pr.Done == 0 {
				return
			}
			once[i].Do(func() {
				close(started[i])
				<-started[1-i]
				then()
			})
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		errs[1] = run(1, meet(1, func() {
			both = mem.Limit()
			<-first
			after = debug.SetMemoryLimit(-1)
		}))
	})
	wg.Go(func() {
		defer close(first)
		errs[0] = run(0, meet(0, func() {}))
	})
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	// Each shard's 4,000 requests are 4000 × 12 KiB = 46.9 MiB of the
	// limit; with both running it is at least 48 + 93.75 MiB.
	const perShard = 4000 * 12 << 10
	if both < 48<<20+2*perShard {
		t.Errorf("limit with both shards running: %d, want at least %d (both shards' requests)", both, 48<<20+2*perShard)
	}
	if after == math.MaxInt64 || after < 48<<20+perShard {
		t.Errorf("limit after shard 0 ended, shard 1 running: %d, want at least %d", after, 48<<20+perShard)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after both ended: %d, want none", got)
	}
}
