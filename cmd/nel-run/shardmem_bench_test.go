//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// Issue 23, target 1: a shard's memory does not grow with its sample
// count. The same 10,000 items, once (10,000 samples) and with 8 repeats
// (80,000), each run by a real `nel-run shard` process against `nel-run
// sim-server` in another process; the figure is the shard process's peak
// RSS (ru_maxrss, in 10^6 bytes) and the ratio of the two. Target: the
// ratio at most 1.3 (goal: equal within noise). Before the shard streamed
// its samples to Parquet it was 134 MB and 508 MB.
func BenchmarkShardMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("runs 90,000 samples")
	}
	const items = 10000
	bin := buildNelRun(b)
	dir := b.TempDir()
	data := writeGSM8KData(b, dir, items)
	url := startSim(b, bin, data)
	var peak10k, peak80k int64 // KiB
	runs := 0
	for b.Loop() {
		for _, c := range []struct {
			repeats int
			peak    *int64
		}{{1, &peak10k}, {8, &peak80k}} {
			out := filepath.Join(dir, fmt.Sprintf("out-%d-%d", runs, c.repeats))
			rss := runShardProcess(b, bin, shardMemoryPlan(url, data, out, c.repeats), items*c.repeats)
			*c.peak = max(*c.peak, rss)
		}
		runs++
	}
	mb := func(kib int64) float64 { return float64(kib) * 1024 / 1e6 }
	b.ReportMetric(mb(peak10k), "peak-RSS-MB-10k")
	b.ReportMetric(mb(peak80k), "peak-RSS-MB-80k")
	b.ReportMetric(float64(peak80k)/float64(peak10k), "ratio-80k/10k")
}

// shardMemoryPlan is one gsm8k benchmark over data with repeats, 256 in
// flight, against the simulator at url, writing under out.
func shardMemoryPlan(url, data, out string, repeats int) *plan.Plan {
	return &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "bench", ScoringVersion: "1",
		RecipeHash: "sha256:r", PlanHash: "sha256:p", Shards: 1, OutputDir: out,
		Services: []plan.Service{{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: url}},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:b",
			Solver:  plan.Solver{Type: "simple", Service: "sim"},
			Repeats: repeats, MaxConcurrent: 256, Timeout: 120,
			Params: map[string]any{"data_path": data},
		}},
	}
}

// runShardProcess writes p where a job would and runs its one shard with
// bin, untimed but for the process itself; it checks that the shard file
// has want rows and returns the process's peak RSS in KiB.
func runShardProcess(b *testing.B, bin string, p *plan.Plan, want int) int64 {
	b.Helper()
	b.StopTimer()
	planPath := writePlanFile(b, p)
	cmd := exec.Command(bin, "shard", "--plan", planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1")
	cmd.Env = append(os.Environ(), "NEL_RUN_LOG=warn")
	var errb strings.Builder
	cmd.Stderr = &errb
	b.StartTimer()
	err := cmd.Run()
	b.StopTimer()
	if err != nil {
		b.Fatalf("nel-run shard: %v\n%s", err, errb.String())
	}
	n, err := countRows(filepath.Join(p.OutputDir, "gsm8k", "shards", rundir.ShardFile(0, 1)))
	if err != nil {
		b.Fatal(err)
	}
	if n != int64(want) {
		b.Fatalf("%d rows, want %d", n, want)
	}
	b.StartTimer()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no rusage for nel-run shard")
	}
	return ru.Maxrss // KiB on Linux
}

// countRows is the row count a shard file's footer holds.
func countRows(path string) (int64, error) {
	_, n, err := results.ReadMeta(path)
	return n, err
}
