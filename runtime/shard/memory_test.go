package shard_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// lateLiveHeap runs one shard of items × repeats samples against an
// in-process simulator and returns the median live heap (bytes in use
// right after a collection) over the last quarter of the run, measured at
// every 100th finished sample. A median, not a peak: a part being encoded
// at the moment of a measurement (a few MB of compressor state, freed
// once the part is written) is not what the shard holds. The dataset is
// the same whatever repeats is, so only the sample count differs between
// two calls.
func lateLiveHeap(t *testing.T, data string, items, repeats int) uint64 {
	t.Helper()
	dir := t.TempDir()
	srv := simServer(t, sim.Config{Accuracy: 0.7, Seed: 1}, "gsm8k", data)
	p := testPlan(srv.URL, data, 1, repeats, nil, nil)
	p.Benchmarks[0].MaxConcurrent = 32
	samples := items * repeats
	var mu sync.Mutex
	var live []uint64
	progress := func(pr shard.Progress) {
		if pr.Done%100 != 0 || pr.Done < samples*3/4 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		// Twice: what sync.Pool's victim caches and objects with
		// finalizers hold outlives the first collection.
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		live = append(live, ms.HeapAlloc)
	}
	res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: dir, NelVersion: "test", Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != items*repeats {
		t.Fatalf("%d rows, want %d", res.Rows, items*repeats)
	}
	rows, _, err := results.ReadRows(filepath.Join(dir, "gsm8k", "shards", rundir.ShardFile(0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != items*repeats {
		t.Fatalf("the shard file has %d rows, want %d", len(rows), items*repeats)
	}
	slices.Sort(live)
	return live[len(live)/2]
}

// A shard streams its finished samples to Parquet: the heap it holds does
// not grow with its sample count. 2,000 and 24,000 samples of the same
// 1,000 items. A shard that kept every finished sample until the end (as
// nel-run did before) measured 8.2 → 37.8 MB; the bound allows 12 MB: what
// the spool may hold beyond a 2,000-sample shard's (up to three parts of
// 2,048 samples: one filling, one queued, one being written), and GC
// noise (measured with the spool: 7.3 → 13.5 MB).
func TestShardMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 26,000 samples")
	}
	data := writeGSM8K(t, t.TempDir(), 1000)
	small := lateLiveHeap(t, data, 1000, 2)
	large := lateLiveHeap(t, data, 1000, 24)
	t.Logf("live heap near the end: %.1f MB at 2,000 samples, %.1f MB at 24,000", float64(small)/1e6, float64(large)/1e6)
	const slack = 12 << 20
	if large > small+slack {
		t.Errorf("live heap near the end grew from %.1f MB at 2,000 samples to %.1f MB at 24,000 (bound: +%d MB): the shard holds its finished samples", float64(small)/1e6, float64(large)/1e6, slack>>20)
	}
}

// A shard stopped after some of its parts were written, one of them then
// damaged (as a crash in the middle of writing it would leave it), runs
// again from its journal: the parts are not trusted, and its files are
// those of an uninterrupted run, in the same order.
func TestResumeAfterPartsWritten(t *testing.T) {
	const items, repeats = 3000, 2
	dir := t.TempDir()
	data := writeGSM8K(t, dir, items)
	srv := simServer(t, sim.Config{Accuracy: 0.7, Seed: 1}, "gsm8k", data)
	p := testPlan(srv.URL, data, 1, repeats, nil, nil)
	p.Benchmarks[0].MaxConcurrent = 32
	o := shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: filepath.Join(dir, "whole"), NelVersion: "test"}
	if _, err := shard.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cut := o
	cut.OutDir = filepath.Join(dir, "cut")
	cut.Progress = func(pr shard.Progress) {
		if pr.Done >= 4500 {
			cancel()
		}
	}
	if _, err := shard.Run(ctx, cut); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("stopped shard: %v, want it interrupted", err)
	}
	files := rundir.Dir(cut.OutDir).Benchmark("gsm8k").Shard(0, 1)
	parts, _ := filepath.Glob(filepath.Join(files.Spool(), "part-??????.parquet"))
	if len(parts) < 2 {
		t.Fatalf("the stopped shard wrote %d parts, want at least 2 (4,500 samples at 2,048 a part): %v", len(parts), parts)
	}
	if err := os.Truncate(parts[1], 100); err != nil {
		t.Fatal(err)
	}

	cut.Progress = nil
	res, err := shard.Run(context.Background(), cut)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed < 4500 || res.Rows != items*repeats {
		t.Errorf("resumed %d samples and wrote %d rows, want at least 4,500 and %d", res.Resumed, res.Rows, items*repeats)
	}
	if _, err := os.Stat(files.Spool()); !os.IsNotExist(err) {
		t.Errorf("the spool is still there once the shard is complete: %v", err)
	}
	for _, kind := range []func(string) ([]any, error){readRowsAny, readTrajectoriesAny} {
		want, err := kind(string(rundir.Dir(o.OutDir).Benchmark("gsm8k").Shard(0, 1)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := kind(string(files))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d rows after the resumed run, %d after an uninterrupted one", len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("row %d differs from an uninterrupted run's:\n%+v\n%+v", i, got[i], want[i])
			}
		}
	}
}

// readRowsAny reads a shard's rows without what differs between two runs
// of the same samples (latency, attempts).
func readRowsAny(shardFile string) ([]any, error) {
	rows, _, err := results.ReadRows(shardFile)
	out := make([]any, len(rows))
	for i, r := range normalize(rows) {
		out[i] = r
	}
	return out, err
}

// readTrajectoriesAny reads a shard's trajectories the same way.
func readTrajectoriesAny(shardFile string) ([]any, error) {
	ts, _, err := results.ReadTrajectories(rundir.Shard(shardFile).Trajectories())
	out := make([]any, len(ts))
	for i, tr := range ts {
		tr.LatencyMS, tr.Retries = 0, 0
		out[i] = tr
	}
	return out, err
}
