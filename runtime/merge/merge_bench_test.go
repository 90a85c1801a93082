package merge_test

import (
	"testing"

	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/merge/mergetest"
)

// BenchmarkMergeInProcess is BenchmarkMerge1M (cmd/nel-run) in this
// process, for profiling (-cpuprofile, -memprofile): merge.Merge of
// 1,000,000 rows in 16 shards with ~1 KB of trajectory text a row. Its
// fixture is written once per run, outside the timing.
func BenchmarkMergeInProcess(b *testing.B) {
	if testing.Short() {
		b.Skip("writes ~400 MB of shards")
	}
	dir := b.TempDir()
	p, _, err := mergetest.Write(dir, mergetest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sums, err := merge.Merge(merge.Options{Plan: p, OutDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if len(sums) != 1 || sums[0].Bundle.Samples != 1_000_000 {
			b.Fatalf("summaries %+v", sums)
		}
	}
	b.ReportMetric(1e6*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
