package merge

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/nel-eval/nel/runtime/merge/mergetest"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// source gives the shards' rows in merged order, whether each shard is
// in that order already (streamed) or not (read whole and sorted), with
// shards of no rows and shards of more rows than one batch; past maxFanIn
// shards through sorted runs, which it then removes.
func TestSource(t *testing.T) {
	for _, shards := range []int{6, maxFanIn + 5} {
		t.Run(fmt.Sprint(shards), func(t *testing.T) { testSource(t, shards) })
	}
}

func testSource(t *testing.T, shards int) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	var all []results.Row
	var files []*shardFile
	for s := range shards {
		n := rng.IntN(3 * sourceBatch * 6 / shards)
		if s == 2 {
			n = 0
		}
		var w []results.Row
		for range n {
			idx := rng.Int64N(1000)
			w = append(w, results.Row{ItemIdx: idx, ItemID: string(rune('a' + idx%7)), Repeat: rng.Int64N(4), Seed: rng.Int64()})
		}
		sorted := s%2 == 0
		if sorted {
			slices.SortFunc(w, func(a, b results.Row) int { return compareRows(&a, &b) })
		}
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.parquet", s))
		if err := results.WriteRows(path, w, nil); err != nil {
			t.Fatal(err)
		}
		all = append(all, w...)
		files = append(files, &shardFile{i: s, path: path, n: n, sorted: sorted})
	}
	src, cleanup, err := openSource(t.Context(), files, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	rows := make([]results.Row, len(all))
	// In uneven slices, as the writer asks.
	for lo := 0; lo < len(rows); {
		hi := min(lo+1+rng.IntN(700), len(rows))
		if err := src.read(rows[lo:hi]); err != nil {
			t.Fatal(err)
		}
		lo = hi
	}
	if err := src.read(make([]results.Row, 1)); err == nil {
		t.Error("a read past the shards' rows succeeded")
	}
	cleanup()
	if left, _ := filepath.Glob(filepath.Join(dir, ".merge-runs-*")); len(left) > 0 {
		t.Errorf("runs left behind: %q", left)
	}
	want := slices.Clone(all)
	slices.SortStableFunc(want, func(a, b results.Row) int { return compareRows(&a, &b) })
	// Equal keys may come in any order: compare the keys, then the
	// multiset of rows.
	for i := range rows {
		if compareRows(&rows[i], &want[i]) != 0 {
			t.Fatalf("row %d out of order", i)
		}
	}
	seeds := func(rs []results.Row) []int64 {
		var s []int64
		for _, r := range rs {
			s = append(s, r.Seed)
		}
		slices.Sort(s)
		return s
	}
	if !slices.Equal(seeds(rows), seeds(want)) {
		t.Fatal("rows lost or duplicated")
	}
}

// A merge of a small realistic run: results sorted, trajectories in shard
// order, every failure's error text found.
func TestMergeSmall(t *testing.T) {
	dir := t.TempDir()
	const items, repeats, shards = 300, 3, 4
	p, _, err := mergetest.Write(dir, mergetest.Options{Items: items, Repeats: repeats, Shards: shards, TextBytes: 200, FailRate: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	sums, err := Merge(Options{Plan: p, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].Bundle.Samples != items*repeats || sums[0].Bundle.Items != items {
		t.Fatalf("summaries %+v", sums)
	}
	bdir := filepath.Join(dir, mergetest.Benchmark)
	rows, _, err := results.ReadRows(filepath.Join(bdir, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(rows, func(a, b results.Row) int { return compareRows(&a, &b) }) {
		t.Error("results.parquet is not sorted by item_idx, item_id, repeat")
	}
	// The bundle recomputed from the merged file says what merge said.
	bundle, err := metrics.FromParquet(bdir)
	if err != nil {
		t.Fatal(err)
	}
	merged := sums[0].Bundle
	if bundle.Items != merged.Items || bundle.Samples != merged.Samples || *bundle.Headline.Value != *merged.Headline.Value ||
		bundle.Failures.Failed != merged.Failures.Failed || bundle.Validity.InfraErrors != merged.Validity.InfraErrors {
		t.Errorf("bundle of results.parquet: %d items, %d samples, %v, %d model errors, %d infra errors; merge said %d, %d, %v, %d, %d",
			bundle.Items, bundle.Samples, *bundle.Headline.Value, bundle.Failures.Failed, bundle.Validity.InfraErrors,
			merged.Items, merged.Samples, *merged.Headline.Value, merged.Failures.Failed, merged.Validity.InfraErrors)
	}
	// The failure classes and their exemplars' texts (read by merge for
	// the exemplars alone) are those computed from every failed row's.
	if !reflect.DeepEqual(bundle.Validity.Classes, merged.Validity.Classes) || !reflect.DeepEqual(bundle.Failures, merged.Failures) {
		t.Errorf("merge's failure classes differ from those of results.parquet:\n%+v\n%+v\nvs\n%+v\n%+v",
			merged.Validity.Classes, merged.Failures, bundle.Validity.Classes, bundle.Failures)
	}
	for _, fc := range append(merged.Validity.Classes, merged.Failures.Categories...) {
		for _, e := range fc.Exemplars {
			if e.Error == "" {
				t.Errorf("exemplar %+v of %s has no error text", e, fc.Category)
			}
		}
	}
	// The fixture fails 20% of its samples, half of them for
	// infrastructure reasons (timeout, http_5xx): about 10% of all,
	// above the plan's max_error_rate of 5%.
	if v := merged.Validity; !v.Invalid || v.MaxErrorRate != plan.DefaultMaxErrorRate || v.MaxErrorRateFrom != "plan" || v.InfraErrors == 0 || merged.Failures.Failed == 0 {
		t.Errorf("validity %+v, model errors %d: want INVALID against the plan's max_error_rate, with both kinds of failure", v, merged.Failures.Failed)
	}

	trajs, meta, err := results.ReadTrajectories(filepath.Join(bdir, "trajectories.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if meta[results.MetaShard] != "merged/4" || len(trajs) != len(rows) {
		t.Fatalf("trajectories.parquet: %d rows, shard %q", len(trajs), meta[results.MetaShard])
	}
	// Shard order, each shard's in its own (dataset) order.
	var files []*shardFile
	off := 0
	for i := range shards {
		path := rundir.Bench(bdir).Shard(i, shards)
		ts, _, err := results.ReadTrajectories(path.Trajectories())
		if err != nil {
			t.Fatal(err)
		}
		for j := range ts {
			if trajs[off+j] != ts[j] {
				t.Fatalf("trajectories.parquet row %d is not shard %d's row %d", off+j, i, j)
			}
		}
		off += len(ts)
		files = append(files, &shardFile{i: i, path: string(path), n: len(ts)})
	}

	// Every failed sample's text is found in its shard's trajectories.
	var keys []metrics.RowKey
	for _, r := range rows {
		if r.ErrorCategory != "" {
			keys = append(keys, metrics.RowKey{ItemID: r.ItemID, Repeat: r.Repeat})
		}
	}
	texts, err := errorTexts(files, shards, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[metrics.RowKey]string{}
	byKey := map[metrics.RowKey]string{}
	for _, tr := range trajs {
		byKey[metrics.RowKey{ItemID: tr.ItemID, Repeat: tr.Repeat}] = tr.Error
	}
	for _, r := range rows {
		if r.ErrorCategory != "" {
			k := metrics.RowKey{ItemID: r.ItemID, Repeat: r.Repeat}
			want[k] = byKey[k]
		}
	}
	if len(want) == 0 || len(texts) != len(want) {
		t.Fatalf("%d error texts, want %d", len(texts), len(want))
	}
	for k, v := range want {
		if texts[k] != v || v == "" {
			t.Errorf("error text of %v = %q, want %q", k, texts[k], v)
		}
	}
}

// A merge's memory grows with its items and rows by what the statistics
// keep of each (an item's rewards, a row's latency: tens of bytes), not
// by the rows themselves (hundreds of bytes each, as when merge held
// them all): the live heap (as the GC marked it), sampled at forced
// collections while two merges of different sizes run, grows by less than
// 200 bytes a row.
func TestMergeMemoryPerRow(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and merges 320,000 rows")
	}
	peak := func(items int) uint64 {
		dir := t.TempDir()
		p, _, err := mergetest.Write(dir, mergetest.Options{Items: items, Repeats: 4, Shards: 2, TextBytes: 50})
		if err != nil {
			t.Fatal(err)
		}
		debug.FreeOSMemory()
		done := make(chan struct{})
		sampled := make(chan uint64)
		go func() {
			var max uint64
			live := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
			for {
				runtime.GC()
				rtmetrics.Read(live)
				if v := live[0].Value.Uint64(); v > max {
					max = v
				}
				select {
				case <-done:
					sampled <- max
					return
				default:
				}
			}
		}()
		_, err = Merge(Options{Plan: p, OutDir: dir})
		close(done)
		if err != nil {
			t.Fatal(err)
		}
		return <-sampled
	}
	// Both sizes past where the fixed costs stop growing (a page per
	// column, the writer's row groups, the compressors' windows).
	const small, large = 15_000, 65_000 // items, of 4 rows each
	a, b := peak(small), peak(large)
	perRow := (float64(b) - float64(a)) / (4 * (large - small))
	t.Logf("live heap %.1f MB at %d rows, %.1f MB at %d rows: %.0f bytes a row", float64(a)/1e6, 4*small, float64(b)/1e6, 4*large, perRow)
	if perRow > 200 {
		t.Errorf("a merge's live heap grows by %.0f bytes a row, want < 200 (rows held?)", perRow)
	}
}

// The shards' batches together stay within sourceBudget, however many
// shards (down to 16 rows a batch), and are full size for a few shards.
func TestBatchRows(t *testing.T) {
	if got := batchRows(16); got != sourceBatch {
		t.Errorf("batchRows(16) = %d, want %d", got, sourceBatch)
	}
	row := int(unsafe.Sizeof(results.Row{}))
	for _, shards := range []int{1, 64, 1000, 10_000} {
		got := batchRows(shards)
		if got < 16 || got > sourceBatch || (got > 16 && 3*got*row*shards > sourceBudget) {
			t.Errorf("batchRows(%d) = %d: %d bytes held", shards, got, 3*got*row*shards)
		}
	}
}

// A shard that cannot be read fails openSource past maxFanIn too, and the
// sorted runs written before it are removed.
func TestSourceRunsRemovedOnError(t *testing.T) {
	dir := t.TempDir()
	var files []*shardFile
	for s := range maxFanIn + 2 {
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.parquet", s))
		w := []results.Row{{ItemIdx: int64(s), ItemID: fmt.Sprint(s)}}
		if err := results.WriteRows(path, w, nil); err != nil {
			t.Fatal(err)
		}
		files = append(files, &shardFile{i: s, path: path, n: 1, sorted: true})
	}
	// The last group's second shard is not a Parquet file.
	if err := os.WriteFile(files[maxFanIn+1].path, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openSource(t.Context(), files, dir); err == nil {
		t.Fatal("openSource read a shard that is not Parquet")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".merge-runs-*")); len(left) > 0 {
		t.Errorf("runs left behind: %q", left)
	}
}

// A merge killed while it wrote sorted runs leaves them under the shards'
// folder, a copy of every row. The next merge that writes runs removes the
// folders no live merge owns, and keeps one whose owner lock is held.
func TestStaleRunsRemoved(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, lock bool) string {
		d := filepath.Join(dir, runsPrefix+name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "run-0.parquet"), []byte("rows"), 0o644); err != nil {
			t.Fatal(err)
		}
		if lock {
			if err := os.WriteFile(filepath.Join(d, runsOwner), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	dead := mk("dead", true)      // its merge died: the lock is free
	live := mk("live", true)      // a merge still running holds it
	fresh := mk("fresh", false)   // just made, its lock not yet taken
	oldNoLock := mk("old", false) // left by a merge without owner locks
	old := time.Now().Add(-2 * staleAfter)
	if err := os.Chtimes(oldNoLock, old, old); err != nil {
		t.Fatal(err)
	}
	unlock, ok := tryLock(filepath.Join(live, runsOwner))
	if !ok {
		t.Fatal("cannot lock the live folder's owner lock")
	}
	defer unlock()

	var files []*shardFile
	for s := range maxFanIn + 1 {
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.parquet", s))
		if err := results.WriteRows(path, []results.Row{{ItemIdx: int64(s), ItemID: fmt.Sprint(s)}}, nil); err != nil {
			t.Fatal(err)
		}
		files = append(files, &shardFile{i: s, path: path, n: 1, sorted: true})
	}
	src, cleanup, err := openSource(t.Context(), files, dir)
	if err != nil {
		t.Fatal(err)
	}
	src.close()
	cleanup()
	for _, d := range []string{dead, oldNoLock} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s: stale runs kept", filepath.Base(d))
		}
	}
	for _, d := range []string{live, fresh} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: runs in use removed: %v", filepath.Base(d), err)
		}
	}
}
