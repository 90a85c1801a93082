package sim

import (
	"github.com/nel-eval/nel/internal/sharedtest"

	"context"
	"testing"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
)

// TestRealBenchmarks runs real benchmark data through the simulator and the
// model client and scores the answers with the benchmarks' own scorers: at
// accuracy 1 every answer must score correct, at accuracy ≈ 0 none. The
// data is the shared test datasets (../shared/datasets from the project
// root); the test skips without them.
func TestRealBenchmarks(t *testing.T) {
	root := sharedtest.Datasets(t)
	cases := map[string]string{
		"gsm8k":    "gsm8k/test.jsonl",
		"math500":  "math500/test.jsonl",
		"mgsm":     "mgsm/mgsm_en.tsv",
		"mmlu_pro": "mmlu_pro/test.jsonl",
		"simpleqa": "simpleqa/simple_qa_test_set.csv",
		"xstest":   "xstest/xstest_prompts.csv",
	}
	loader := dataset.NewLoader(dataset.Options{BaseDir: root, Offline: true})
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			b, ok := bench.Lookup(name)
			if !ok {
				t.Skipf("benchmark %s not built in", name)
			}
			set, err := b.Load(context.Background(), loader, map[string]any{"data_path": path})
			if err != nil {
				t.Fatalf("load %s: %v", path, err)
			}
			items := set.Items
			if len(items) > 200 {
				items = items[:200]
			}
			for _, acc := range []float64{1, 1e-12} {
				s, err := New(Config{Accuracy: acc}, Dataset{Benchmark: b, Items: items})
				if err != nil {
					t.Fatal(err)
				}
				f := &fixture{sim: s, b: b, items: items}
				f.srv = newServer(t, s)
				rs := runAll(t, f.client(t), items, 5)
				bad := 0
				for i, r := range rs {
					sc := b.Score(&items[i], r.Content)
					if sc.NeedsJudge {
						t.Skipf("%s needs a judge", name)
					}
					if sc.Correct != (acc == 1) {
						if bad++; bad <= 3 {
							t.Errorf("accuracy %g: item %d (%s) scored correct=%v: response %.200q", acc, i, items[i].ID, sc.Correct, r.Content)
						}
					}
				}
				if bad > 0 {
					t.Errorf("accuracy %g: %d of %d items scored wrongly", acc, bad, len(items))
				}
			}
		})
	}
}
