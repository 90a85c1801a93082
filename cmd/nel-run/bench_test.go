//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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

// Targets: the binary is at most 40 MB (30 MB until the caching
// interceptor's SQLite, issue 21, which costs 4.2 MB: 28.38 → 32.58 MB with
// the interceptors; 33 MB until the ECS Fargate sandbox's aws-sdk-go-v2,
// issue 22, which costs 4.40 MB: 33.19 → 37.59 MB, and its SSM client 1.22 MB
// more; the generated SSM, CloudWatch Logs and ECS clients have since given
// way to a small signed JSON client: 36.84 MB with the apptainer builds);
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

// Target (issue 23): 10,000 samples in flight from one nel-run process
// with a peak RSS of at most 256 MB (peak-RSS-MB: the shard process's
// ru_maxrss, in 10^6 bytes; the simulator's memory is not in it), beside
// the asyncio peer sending the same bodies at the same concurrency
// (asyncio-peak-RSS-MB). 10,000 items × 2 repeats at max_concurrent
// 10,000 and a simulated latency of 1 s (ideal: 2 s).
func BenchmarkNelRunInFlight10k(b *testing.B) {
	if testing.Short() {
		b.Skip("opens 20,000 sockets")
	}
	const items, repeats, conc = 10000, 2, 10000
	bin := buildNelRun(b)
	dir := b.TempDir()
	data := writeGSM8KData(b, dir, items)
	url := startSim(b, bin, data, "--latency", "1s")
	p := benchPlan(url, data, repeats, conc)
	py := peer(b)
	var bodies string
	if py != "" {
		bodies = recordBodies(b, bin, data, *p, dir)
	}

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	var nel procCost
	var asyncPeak int64
	runs := runShards(b, bin, p, dir, items*repeats, func(c procCost) {
		nel.wall, nel.cpu, nel.peakKiB = nel.wall+c.wall, nel.cpu+c.cpu, max(nel.peakKiB, c.peakKiB)
		if py != "" {
			asyncPeak = max(asyncPeak, runPeer(b, py, url, bodies, conc, items*repeats).peakKiB)
		}
	})
	per := nel.wall.Seconds() / float64(runs)
	samples := float64(items * repeats)
	b.ReportMetric(nel.peakMB(), "peak-RSS-MB")
	if py != "" {
		b.ReportMetric(procCost{peakKiB: asyncPeak}.peakMB(), "asyncio-peak-RSS-MB")
	}
	b.ReportMetric(samples/per, "samples/s")
	b.ReportMetric(100*(samples/conc)/per, "%efficiency")
	b.ReportMetric(float64(nel.cpu.Microseconds())/(samples*float64(runs)), "client-cpu-us/sample")
	b.ReportMetric(float64(lim.Max), "nofile-hard")
}
