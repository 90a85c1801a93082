//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/merge/mergetest"
	"github.com/nel-eval/nel/runtime/rundir"
)

// BenchmarkMerge1M's run: 250,000 items × 4 repeats in 16 shards.
const merge1MItems, merge1MRepeats, merge1MShards = 250_000, 4, 16

// Target (issue 23): `nel-run merge` of 1,000,000 rows in 16 shards
// (250,000 items × 4 repeats, gsm8k-like, 5% failures, ~1 KB of trajectory
// text a row: about 1 GB of text) within 2× of DuckDB doing the same work
// on the same shards, in the same run, with a peak RSS of at most 256 MB.
//
// The comparison is of equal work (testdata/duckdb/bench.mjs says what
// DuckDB runs): DuckDB computes the statistics nel's merge computes from
// the rows (per-item counts and means over the scored rows, the headline
// mean, per-category scores, latency percentiles, token sums, counts by
// finish reason, attempts and failure class), writes the merged rows
// sorted by item as zstd Parquet (nel's results.parquet) and copies the
// shards' trajectories bytes (nel copies their row groups into
// trajectories.parquet). nel's merge does more besides (completeness
// checks, bootstrap intervals, eval.json); DuckDB is not charged for that.
//
// Metrics: s/op (one merge's wall time: the nel-run process alone),
// peak-RSS-MB (the merge process's ru_maxrss, in 10^6 bytes), rows/s,
// duckdb-s (median of 3 runs on one DuckDB instance, start-up excluded)
// and ratio (merge s/op ÷ duckdb-s). The fixture is generated once per run
// (excluded from the timing).
func BenchmarkMerge1M(b *testing.B) {
	if testing.Short() {
		b.Skip("writes ~400 MB of shards")
	}
	const items, repeats, shards = merge1MItems, merge1MRepeats, merge1MShards
	bin := buildNelRun(b)
	dir := b.TempDir()
	// The fixture is written by a child process: a child's ru_maxrss
	// starts from its parent's peak RSS (Linux carries the high-water mark
	// across fork and exec), so writing it here would count in nel-run's.
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	gen := exec.Command(exe, "-test.run=^TestMergeFixture$", "-test.bench=^$")
	gen.Env = append(os.Environ(), "NEL_MERGE_FIXTURE="+dir)
	if out, err := gen.CombinedOutput(); err != nil {
		b.Fatalf("write the fixture: %v\n%s", err, out)
	}
	if plans, err := rundir.Dir(dir).Plans(); err != nil || len(plans) != 1 {
		b.Fatalf("no fixture written: plans %q, %v", plans, err)
	}
	b.Logf("fixture: %d rows in %d shards, written in %v", items*repeats, shards, time.Since(start).Round(time.Millisecond))

	var elapsed time.Duration
	var peak int64 // KiB
	runs := 0
	for b.Loop() {
		cmd := exec.Command(bin, "merge", dir)
		cmd.Env = append(os.Environ(), "NEL_RUN_LOG=warn")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		t := time.Now()
		err := cmd.Run()
		elapsed += time.Since(t)
		runs++
		if err != nil {
			b.Fatalf("nel-run merge: %v\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "250000 items × 4 repeats") {
			b.Fatalf("nel-run merge: unexpected headline:\n%s", out.String())
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss) // KiB on Linux
		}
	}
	per := elapsed.Seconds() / float64(runs)
	b.ReportMetric(per, "s/op")
	b.ReportMetric(float64(peak)*1024/1e6, "peak-RSS-MB")
	b.ReportMetric(items*repeats/per, "rows/s")

	if _, err := os.Stat(filepath.Join("..", "..", "testdata", "duckdb", "node_modules", "@duckdb", "node-api")); err != nil {
		b.Log("DuckDB reference skipped: testdata/duckdb/node_modules is absent (make testdeps)")
		return
	}
	if _, err := exec.LookPath("node"); err != nil {
		b.Log("DuckDB reference skipped: node not found")
		return
	}
	args := []string{"bench.mjs", "3", filepath.Join(b.TempDir(), "duckdb-out")}
	for i := range shards {
		args = append(args, filepath.Join(dir, mergetest.Benchmark, "shards", rundir.ShardFile(i, shards)))
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = filepath.Join("..", "..", "testdata", "duckdb")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("node bench.mjs: %v\n%s", err, stderr.String())
	}
	var duck struct {
		Runs    []float64 `json:"runs"`
		MedianS float64   `json:"median_s"`
		Count   int64     `json:"count"`
	}
	if err := json.Unmarshal(out, &duck); err != nil {
		b.Fatalf("node bench.mjs: %v: %s", err, out)
	}
	if duck.Count != items*repeats {
		b.Fatalf("DuckDB counts %d rows, want %d", duck.Count, items*repeats)
	}
	b.Logf("DuckDB: %s", strings.TrimSpace(string(out)))
	b.ReportMetric(duck.MedianS, "duckdb-s")
	b.ReportMetric(per/duck.MedianS, "ratio")
}

// TestMergeFixture writes BenchmarkMerge1M's fixture to $NEL_MERGE_FIXTURE,
// in the benchmark's child process; without it, it skips.
func TestMergeFixture(t *testing.T) {
	dir := os.Getenv("NEL_MERGE_FIXTURE")
	if dir == "" {
		t.Skip("BenchmarkMerge1M's helper")
	}
	if _, _, err := mergetest.Write(dir, mergetest.Options{Items: merge1MItems, Repeats: merge1MRepeats, Shards: merge1MShards}); err != nil {
		t.Fatal(err)
	}
}
