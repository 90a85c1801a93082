//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// The process-level targets for nel-run, measured on the real
// binary, built as `make build` builds it (static, -trimpath, stripped):
// its size, the wall time of `nel-run --version`, and the peak memory of
// `nel-run shard` with 10,000 samples in flight against a simulator that
// runs in a separate process (`nel-run sim-server`), so that the memory
// measured is the client's alone. `make bench` prints the figures.

// buildNelRun returns the nel-run to measure: $NEL_RUN_BIN when set (`make
// bench` sets it to the bin/nel-run that `make build` built), else one built
// here the same way (static, the Makefile's NELRUN_TAGS, -trimpath, stripped).
func buildNelRun(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("NEL_RUN_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "nel-run")
	cmd := exec.Command("go", "build", "-tags", "noasm,arrow_json_stdlib", "-trimpath", "-ldflags", "-s -w -X main.version=bench", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build nel-run: %v\n%s", err, out)
	}
	return bin
}

// Targets: the binary is at most 33 MB (30 MB until the caching
// interceptor's SQLite, issue 21, which costs 4.2 MB: 28.38 → 32.58 MB with the interceptors);
// `nel-run --version` takes at most
// 20 ms (median of the runs; one run an iteration).
func BenchmarkNelRunVersion(b *testing.B) {
	bin := buildNelRun(b)
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		out, err := exec.Command(bin, "--version").Output()
		times = append(times, time.Since(start))
		if err != nil || !strings.HasPrefix(string(out), "nel-run ") {
			b.Fatalf("nel-run --version: %q, %v", out, err)
		}
	}
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(fi.Size())/1e6, "binary-MB")
	b.ReportMetric(ms(times[len(times)/2]), "median-ms")
	b.ReportMetric(ms(times[len(times)*9/10]), "p90-ms")
	b.ReportMetric(float64(len(times)), "runs")
}

// Target: 10,000 samples in flight from one nel-run process with a peak RSS
// of at most 1 GB (peak-RSS-MB: the shard process's ru_maxrss, in 10^6
// bytes; the simulator's memory is not in it). 10,000 items × 2 repeats at max_concurrent 10,000 and a
// simulated latency of 1 s (ideal: 2 s).
func BenchmarkNelRunInFlight10k(b *testing.B) {
	if testing.Short() {
		b.Skip("opens 20,000 sockets")
	}
	const items, repeats, conc = 10000, 2, 10000
	bin := buildNelRun(b)
	dir := b.TempDir()

	dataPath := writeGSM8KData(b, dir, items)
	// The simulator, in its own process.
	url := startSimServer(b, bin, dataPath, "--latency", "1s")

	p := &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "bench", ScoringVersion: "1",
		RecipeHash: "sha256:r", PlanHash: "sha256:p", Shards: 1,
		Services: []plan.Service{{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: url}},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:b",
			Solver:  plan.Solver{Type: "simple", Service: "sim"},
			Repeats: repeats, MaxConcurrent: conc, Timeout: 120,
			Params: map[string]any{"data_path": dataPath},
		}},
	}

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	var elapsed, cpu time.Duration
	var peak int64 // KiB
	runs := 0
	b.ResetTimer()
	for b.Loop() {
		out := filepath.Join(dir, fmt.Sprint("out", runs))
		p.OutputDir = out
		planPath := writePlanFile(b, p)
		cmd := exec.Command(bin, "shard", "--plan", planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1")
		cmd.Env = append(os.Environ(), "NEL_RUN_LOG=warn")
		var errb strings.Builder
		cmd.Stderr = &errb
		start := time.Now()
		err := cmd.Run()
		elapsed += time.Since(start)
		runs++
		if err != nil {
			b.Fatalf("nel-run shard: %v\n%s", err, errb.String())
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss) // KiB on Linux
		}
		b.StopTimer()
		rows, _, err := results.ReadRows(filepath.Join(out, "gsm8k", "shards", rundir.ShardFile(0, 1)))
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) != items*repeats {
			b.Fatalf("%d rows, want %d", len(rows), items*repeats)
		}
		for _, r := range rows {
			switch r.ErrorCategory {
			case "", "format_error", "refusal", "truncated":
			default:
				b.Fatalf("sample %s/%d failed: %s\n%s", r.ItemID, r.Repeat, r.ErrorCategory, errb.String())
			}
		}
		b.StartTimer()
	}
	per := elapsed.Seconds() / float64(runs)
	samples := float64(items * repeats)
	b.ReportMetric(float64(peak)*1024/1e6, "peak-RSS-MB")
	b.ReportMetric(samples/per, "samples/s")
	b.ReportMetric(100*(samples/conc)/per, "%efficiency")
	b.ReportMetric(float64(cpu.Microseconds())/(samples*float64(runs)), "client-cpu-us/sample")
	b.ReportMetric(float64(lim.Max), "nofile-hard")
}
