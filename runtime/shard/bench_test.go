//go:build unix

package shard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// The throughput targets, measured on whole shards: every sample is
// requested from the simulated endpoint over loopback, scored, journaled
// (fsync'd) and written to the shard's Parquet files. `make bench` prints
// the figures; see the Makefile.

// benchShard runs one shard of items × repeats samples at conc in flight
// against an in-process simulator with the given latency ± jitter, a fresh
// output directory per iteration (a finished shard would be "already
// complete"). It reports samples/s, CPU time per sample, and, with a
// latency, the steady-state rate over the ideal rate (conc / latency).
func benchShard(b *testing.B, items, repeats, conc int, latency, jitter time.Duration) {
	dir := b.TempDir()
	data := writeGSM8K(b, dir, items)
	srv := simServer(b, sim.Config{Accuracy: 0.7, Latency: latency, LatencyJitter: jitter, Seed: 1}, "gsm8k", data)
	p := testPlan(srv.URL, data, 1, repeats, nil, nil)
	p.Benchmarks[0].MaxConcurrent = conc
	p.Benchmarks[0].Timeout = 60
	samples := items * repeats

	// done[i] is when the i-th sample finished (Progress reports each
	// finished sample once, with a distinct Done count).
	done := make([]time.Duration, samples+1)
	var start time.Time
	progress := func(pr shard.Progress) {
		if pr.Done > 0 && pr.Done <= samples {
			done[pr.Done] = time.Since(start)
		}
	}
	if latency == 0 {
		// One run untimed: the first one also pays for growing the heap.
		_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: filepath.Join(dir, "warm-up"), NelVersion: "bench"})
		if err != nil {
			b.Fatal(err)
		}
	}
	var elapsed, middle time.Duration
	runs := 0
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		out := filepath.Join(dir, fmt.Sprint("out", runs))
		start = time.Now()
		res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out, NelVersion: "bench", Progress: progress})
		elapsed += time.Since(start)
		runs++
		if err != nil {
			b.Fatal(err)
		}
		if res.Rows != samples {
			b.Fatalf("%d rows, want %d", res.Rows, samples)
		}
		middle += done[samples*4/5] - done[samples/5]
		// NEL_BENCH_TRACE=1 logs when each 5% of the samples had finished:
		// with a fixed latency the rounds show as steps.
		if os.Getenv("NEL_BENCH_TRACE") != "" {
			for k := 1; k <= 20; k++ {
				b.Logf("%3d%%: %v", k*5, done[samples*k/20])
			}
		}
	}
	cpu := cpuTime() - cpu0
	per := elapsed.Seconds() / float64(runs)
	b.ReportMetric(float64(samples)/per, "samples/s")
	// CPU time of the process (client and simulator) per sample: what
	// bounds samples/s on a machine that is busy with other work too.
	b.ReportMetric(float64(cpu.Microseconds())/float64(runs*samples), "cpu-us/sample")
	if latency > 0 {
		// The same for the steady state alone: the rate at which the
		// middle 60% of the samples finished over the ideal rate.
		rate := float64(samples*3/5) / (middle.Seconds() / float64(runs))
		b.ReportMetric(100*rate/(float64(conc)/latency.Seconds()), "%steady")
	}
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Target: ≥ 5,000 samples/s end to end against a zero-latency endpoint.
// 2,000 items × 2 repeats at 128 in flight.
func BenchmarkShardThroughput(b *testing.B) {
	benchShard(b, 2000, 2, 128, 0, 0)
}

// 2,000 in flight at a latency of 1 s ± 300 ms (uniform), as real
// endpoints vary: 20,000 samples, shard and simulator in this process.
// (The fixed-latency rows measure a nel-run shard process against a
// nel-run sim-server process: BenchmarkNelRunEfficiency2000 in
// cmd/nel-run.)
func BenchmarkShardEfficiency2000Jitter(b *testing.B) {
	if testing.Short() {
		b.Skip("takes 11 s an iteration")
	}
	benchShard(b, 5000, 4, 2000, time.Second, 300*time.Millisecond)
}
