package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

func ingestPlan(kind, task string, metrics ...string) *plan.Plan {
	p := &plan.Plan{
		PlanVersion: plan.Version, ScoringVersion: "3", RecipeHash: "sha256:r", PlanHash: "sha256:p", Shards: 1,
		Services: []plan.Service{{Name: "nemotron", Type: "api", Model: "nvidia/nemotron"}},
		Benchmarks: []plan.Benchmark{{
			Key: kind + "://" + task, Name: kind + "://" + task, Dir: "bench", Hash: "sha256:b", Repeats: 1,
			MaxErrorRate: plan.DefaultMaxErrorRate,
			Solver:       plan.Solver{Type: "simple", Service: "nemotron"},
			Harness:      &plan.Harness{Kind: kind, Task: task, Image: "img"},
		}},
	}
	for _, m := range metrics {
		p.Benchmarks[0].Scoring.Metrics = append(p.Benchmarks[0].Scoring.Metrics, plan.Metric{Type: "scorer", Name: m})
	}
	return p
}

// ingestAndMerge puts fixture as the benchmark's harness output, ingests
// it and merges the shard as the job does.
func ingestAndMerge(t *testing.T, p *plan.Plan, fixture string) (*Ingested, merge.Summary) {
	t.Helper()
	out := t.TempDir()
	copyTree(t, fixture, rundir.Dir(out).Benchmark("bench").Harness())
	res, err := Ingest(context.Background(), IngestOptions{Plan: p, Benchmark: &p.Benchmarks[0], OutDir: out, NelVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	sums, err := merge.Merge(merge.Options{Plan: p, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	return res, sums[0]
}

// mergedOutcomes reads the merged rows' outcome/error_category by item.
func mergedOutcomes(t *testing.T, sum merge.Summary) map[string]string {
	t.Helper()
	rows, _, err := results.ReadRows(sum.Path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.ItemID] = r.Outcome + "/" + r.ErrorCategory
	}
	return out
}

// TestIngestLMEvalWithScorer: the recipe's mcq_extract scores the
// harness's responses and is the reward; lm-eval's own exact_match is kept.
func TestIngestLMEvalWithScorer(t *testing.T) {
	p := ingestPlan(LMEval, "mmlu_generative", "mcq_extract")
	res, sum := ingestAndMerge(t, p, "testdata/lmeval-mmlu")
	if res.Rows != 3 || res.AggregateOnly {
		t.Fatalf("ingested %+v", res)
	}
	rows, meta, err := results.ReadRows(sum.Path)
	if err != nil {
		t.Fatal(err)
	}
	correct := 0
	for _, r := range rows {
		if r.Scores["scorer:mcq_extract"] != r.Reward || r.Scores["harness:exact_match,get_response"] != r.Reward {
			t.Errorf("%s: reward %v scores %v: mcq_extract and exact_match agree on these answers", r.ItemID, r.Reward, r.Scores)
		}
		if r.Category == "" || r.Outcome != "scored" {
			t.Errorf("%s: category %q outcome %q", r.ItemID, r.Category, r.Outcome)
		}
		correct += int(r.Reward)
	}
	if correct != 2 {
		t.Errorf("%d correct, want 2 of 3", correct)
	}
	bd := sum.Bundle
	if bd.Harness == nil || bd.Harness.AggregateOnly || bd.Harness.Kind != LMEval || len(bd.Harness.Files) != 3 {
		t.Errorf("bundle harness %+v", bd.Harness)
	}
	if bd.Headline.Metric != "pass@1" || bd.Headline.Value == nil || *bd.Headline.Value != 2.0/3 || bd.Headline.CLT == nil {
		t.Errorf("headline %+v, want pass@1 2/3 with an interval", bd.Headline)
	}
	if bd.Provenance.Build == nil || bd.Provenance.Build.NelVersion != "test" || len(bd.Provenance.Hosts) != 1 {
		t.Errorf("provenance %+v: want the ingesting build and host", bd.Provenance)
	}
	if !strings.Contains(strings.Join(bd.Notes, "\n"), "shuffle_seed does not apply") {
		t.Errorf("notes %q: a harness picks its items itself, which the bundle must say", bd.Notes)
	}
	if meta[results.MetaAggregateOnly] != "false" || !strings.Contains(meta[results.MetaHarness], `"kind":"lm-eval"`) {
		t.Errorf("metadata %v", meta)
	}
}

// TestIngestAggregateOnly: no rows are invented; the headline is the
// harness's own score, with no interval, and the bundle says why.
func TestIngestAggregateOnly(t *testing.T) {
	p := ingestPlan(Container, "simple_evals.mmlu")
	res, sum := ingestAndMerge(t, p, "testdata/evalfactory-aggregate")
	if res.Rows != 0 || !res.AggregateOnly {
		t.Fatalf("ingested %+v", res)
	}
	rows, meta, err := results.ReadRows(sum.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 || meta[results.MetaAggregateOnly] != "true" {
		t.Errorf("%d rows, aggregate_only %q", len(rows), meta[results.MetaAggregateOnly])
	}
	bd := sum.Bundle
	if bd.Harness == nil || !bd.Harness.AggregateOnly {
		t.Fatalf("bundle harness %+v", bd.Harness)
	}
	h := bd.Headline
	if h.Metric != "harness:mmlu/score/macro" || h.Value == nil || *h.Value != 0.8011 || h.CLT != nil || h.Bootstrap != nil {
		t.Errorf("headline %+v, want the harness's primary score without intervals", h)
	}
	if len(bd.Metrics) != 2 || bd.Variance != nil || bd.Correct != nil {
		t.Errorf("metrics %+v variance %v correct %v", bd.Metrics, bd.Variance, bd.Correct)
	}
	joined := strings.Join(bd.Notes, "\n")
	if !strings.Contains(joined, "aggregate-only") || strings.Contains(joined, "no rows") {
		t.Errorf("notes %q", bd.Notes)
	}
	if want := "container://simple_evals.mmlu  harness:mmlu/score/macro 0.8011 · aggregate-only: container wrote no per-item results, so there is no interval"; sum.Headline() != want {
		t.Errorf("headline line\n%q, want\n%q", sum.Headline(), want)
	}
}

func TestIngestRefuses(t *testing.T) {
	p := ingestPlan(Skills, "math")
	p.Shards = 2
	_, err := Ingest(context.Background(), IngestOptions{Plan: p, Benchmark: &p.Benchmarks[0], OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "one shard") {
		t.Errorf("err = %v, want several shards refused", err)
	}
	p = ingestPlan(Skills, "math")
	p.Benchmarks[0].Scoring.Metrics = []plan.Metric{{Type: "judge", Name: "j"}}
	out := t.TempDir()
	copyTree(t, "testdata/skills-math", rundir.Dir(out).Benchmark("bench").Harness())
	_, err = Ingest(context.Background(), IngestOptions{Plan: p, Benchmark: &p.Benchmarks[0], OutDir: out})
	if err == nil || !strings.Contains(err.Error(), "scorer metrics only") {
		t.Errorf("err = %v, want a judge metric refused", err)
	}
}
