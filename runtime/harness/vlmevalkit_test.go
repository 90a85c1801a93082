package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/rundir"
)

// TestReadVLMEvalKitMMBench: a row per item from the per-item results
// (the links beside the run folder are not read twice), the hit as the
// verdict, an item the API gave up on as an infrastructure failure, and
// the accuracy table as aggregates.
func TestReadVLMEvalKitMMBench(t *testing.T) {
	o, err := ReadTask(VLMEvalKit, "MMBench_DEV_EN", "testdata/vlmevalkit-mmbench")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 4 || o.AggregateOnly() {
		t.Fatalf("%d samples, want 4", len(o.Samples))
	}
	want := []struct {
		id, task, expected string
		reward             float64
		err                failure.Category
	}{
		{"MMBench_DEV_EN/0", "image_scene", "A", 1, ""},
		{"MMBench_DEV_EN/1", "image_emotion", "B", 0, ""},
		{"MMBench_DEV_EN/2", "attribute_recognition", "B", 1, ""},
		{"MMBench_DEV_EN/3", "physical_relation", "B", 0, failure.APIError},
	}
	for i, w := range want {
		s := o.Samples[i]
		if s.ItemID != w.id || s.ItemIdx != int64(i) || s.Task != w.task || s.Expected != w.expected || s.Reward != w.reward || s.Error != w.err {
			t.Errorf("sample %d: %s idx %d task %q expected %q reward %v error %q, want %+v", i, s.ItemID, s.ItemIdx, s.Task, s.Expected, s.Reward, s.Error, w)
		}
		if s.Correct == nil || *s.Correct != (w.reward == 1) || s.Scores["hit"] != w.reward {
			t.Errorf("sample %d: correct %v scores %v", i, s.Correct, s.Scores)
		}
	}
	// A prediction over two lines, with quotes, survives the TSV quoting.
	if got := o.Samples[1].Response; got != "The answer is C.\nThe person looks \"down\"." {
		t.Errorf("response %q", got)
	}
	if !strings.Contains(o.Samples[1].Record, `"log":"Failed in Prefetching Rolling 0`) || o.Samples[1].Prompt != "Which emotion does the person in the image show?" {
		t.Errorf("record %s prompt %q", o.Samples[1].Record, o.Samples[1].Prompt)
	}
	if o.Primary != "acc/dev/Overall" || o.Aggregate["acc/dev/Overall"] != 0.5 || o.Aggregate["acc/dev/FP-S"] != 1 || len(o.Aggregate) != 8 {
		t.Errorf("primary %q aggregates %v", o.Primary, o.Aggregate)
	}
	if len(o.Files) != 3 || !strings.HasPrefix(o.Files[0], "nel/T20261125-101112/") {
		t.Errorf("files %v, want the run folder's three", o.Files)
	}
}

// TestReadVLMEvalKitAggregateOnly: MME's per-item file has no hit (its
// score pairs the two questions of an image), so its scores are
// aggregate-only; no rows are made up.
func TestReadVLMEvalKitAggregateOnly(t *testing.T) {
	o, err := ReadTask(VLMEvalKit, "MME", "testdata/vlmevalkit-mme")
	if err != nil {
		t.Fatal(err)
	}
	if !o.AggregateOnly() {
		t.Fatalf("%d samples, want aggregate-only", len(o.Samples))
	}
	if o.Primary != "score/existence" || o.Aggregate["score/perception"] != 200 || len(o.Aggregate) != 3 {
		t.Errorf("primary %q aggregates %v", o.Primary, o.Aggregate)
	}
}

func TestReadVLMEvalKitErrors(t *testing.T) {
	if _, err := ReadTask(VLMEvalKit, "MMBench_DEV_CN", "testdata/vlmevalkit-mmbench"); err == nil || !strings.Contains(err.Error(), "no predictions nel_MMBench_DEV_CN.tsv") {
		t.Errorf("another dataset: err = %v", err)
	}
	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, "nel_MME.xlsx"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTask(VLMEvalKit, "MME", old); err == nil || !strings.Contains(err.Error(), "predates PRED_FORMAT") {
		t.Errorf(".xlsx only: err = %v", err)
	}
	// Two runs in one folder are refused, not mixed.
	two := t.TempDir()
	copyTree(t, "testdata/vlmevalkit-mme/nel/T20261125-101112", filepath.Join(two, "T1"))
	copyTree(t, "testdata/vlmevalkit-mme/nel/T20261125-101112", filepath.Join(two, "T2"))
	if _, err := ReadTask(VLMEvalKit, "MME", two); err == nil || !strings.Contains(err.Error(), "more than one VLMEvalKit run") {
		t.Errorf("two runs: err = %v", err)
	}
	// Predictions without any scores: VLMEvalKit did not evaluate.
	noScore := t.TempDir()
	copyTree(t, "testdata/vlmevalkit-mme/nel/T20261125-101112", noScore)
	if err := os.Remove(filepath.Join(noScore, "nel_MME_score.csv")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTask(VLMEvalKit, "MME", noScore); err == nil || !strings.Contains(err.Error(), "did not evaluate MME") {
		t.Errorf("no scores: err = %v", err)
	}
}

// TestIngestVLMEvalKit: the rows merge like any shard's; the item the API
// gave up on is an infra_error, left out of the headline (2 of the 3
// scored items), while VLMEvalKit's own 0.5 is kept as its score.
func TestIngestVLMEvalKit(t *testing.T) {
	p := ingestPlan(VLMEvalKit, "MMBench_DEV_EN")
	p.Benchmarks[0].MaxErrorRate = 0.5
	res, sum := ingestAndMerge(t, p, "testdata/vlmevalkit-mmbench")
	if res.Rows != 4 || res.AggregateOnly {
		t.Fatalf("ingested %+v", res)
	}
	outcomes := mergedOutcomes(t, sum)
	if outcomes["MMBench_DEV_EN/3"] != "infra_error/api_error" || outcomes["MMBench_DEV_EN/1"] != "scored/" {
		t.Errorf("outcomes %v", outcomes)
	}
	bd := sum.Bundle
	if bd.Headline.Value == nil || *bd.Headline.Value != 2.0/3 {
		t.Errorf("headline %+v, want 2/3 of the scored items", bd.Headline)
	}
	if bd.Harness == nil || bd.Harness.Kind != VLMEvalKit || bd.Harness.Scores["acc/dev/Overall"] != 0.5 {
		t.Errorf("bundle harness %+v", bd.Harness)
	}
}

// TestIngestVLMEvalKitLimit: more items than max_problems means the limit
// did not reach the dataset; the result is refused, not kept.
func TestIngestVLMEvalKitLimit(t *testing.T) {
	p := ingestPlan(VLMEvalKit, "MMBench_DEV_EN")
	limit := 3
	p.Benchmarks[0].MaxProblems = &limit
	out := t.TempDir()
	copyTree(t, "testdata/vlmevalkit-mmbench", rundir.Dir(out).Benchmark("bench").Harness())
	_, err := Ingest(context.Background(), IngestOptions{Plan: p, Benchmark: &p.Benchmarks[0], OutDir: out, NelVersion: "test"})
	if err == nil || !strings.Contains(err.Error(), "VLMEvalKit ran 4 items, max_problems is 3") {
		t.Errorf("err = %v", err)
	}
	limit = 4
	if _, err := Ingest(context.Background(), IngestOptions{Plan: p, Benchmark: &p.Benchmarks[0], OutDir: out, NelVersion: "test"}); err != nil {
		t.Errorf("4 items with max_problems 4: %v", err)
	}
}
