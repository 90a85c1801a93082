package merge

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nel-eval/nel/runtime/merge/mergetest"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// sortRows orders the concatenation of shard windows like a full sort,
// whether or not each window is already sorted.
func TestSortRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sorted := range []bool{true, false} {
		var rows []results.Row
		var files []*shardFile
		for s := range 5 {
			n := rng.IntN(200) // some windows empty
			if s == 2 {
				n = 0
			}
			var w []results.Row
			for range n {
				idx := rng.Int64N(100)
				w = append(w, results.Row{ItemIdx: idx, ItemID: string(rune('a' + idx%7)), Repeat: rng.Int64N(4), Seed: rng.Int64()})
			}
			if sorted {
				slices.SortFunc(w, func(a, b results.Row) int { return compareRows(&a, &b) })
			}
			rows = append(rows, w...)
			files = append(files, &shardFile{n: n})
		}
		off := 0
		for _, f := range files {
			f.rows = rows[off : off+f.n]
			off += f.n
		}
		want := slices.Clone(rows)
		slices.SortStableFunc(want, func(a, b results.Row) int { return compareRows(&a, &b) })
		sortRows(rows, files)
		// Equal keys may come in any order: compare the keys, then the
		// multiset of rows.
		for i := range rows {
			if compareRows(&rows[i], &want[i]) != 0 {
				t.Fatalf("sorted=%v: row %d out of order", sorted, i)
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
			t.Fatalf("sorted=%v: rows lost or duplicated", sorted)
		}
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
		files = append(files, &shardFile{i: i, path: string(path), n: len(ts), failures: 1})
	}

	texts, err := errorTexts(files, rows)
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
