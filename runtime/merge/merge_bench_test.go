package merge_test

import (
	"os"
	"testing"

	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/merge/mergetest"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
)

// BenchmarkMergeInProcess is BenchmarkMerge1M (cmd/nel-run) in this
// process, for profiling (-cpuprofile, -memprofile): merge.Merge of
// 1,000,000 rows in 16 shards with ~1 KB of trajectory text a row. Its
// fixture is written once per run, outside the timing.
func BenchmarkMergeInProcess(b *testing.B) {
	if testing.Short() {
		b.Skip("writes ~400 MB of shards")
	}
	dir, p := fixture(b)
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

// fixture is the benchmark's shards: those under $NEL_MERGE_FIXTURE when
// set (written once by cmd/nel-run's TestMergeFixture, so that profiling
// runs do not rewrite 400 MB each time), else a fresh set.
func fixture(b *testing.B) (string, *plan.Plan) {
	if dir := os.Getenv("NEL_MERGE_FIXTURE"); dir != "" {
		plans, err := rundir.Dir(dir).Plans()
		if err != nil || len(plans) != 1 {
			b.Fatalf("%s: plans %q, %v", dir, plans, err)
		}
		p, err := plan.Read(plans[0])
		if err != nil {
			b.Fatal(err)
		}
		return dir, p
	}
	dir := b.TempDir()
	p, _, err := mergetest.Write(dir, mergetest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return dir, p
}
