package metrics

import (
	"fmt"
	"math"
	"testing"

	"github.com/nel-eval/nel/runtime/results"
)

// simpleqaRow is a row as the simpleqa benchmark writes it for grade g
// ("A" CORRECT, "B" INCORRECT, "C" NOT_ATTEMPTED; "" a judge failure,
// which carries no grades).
func simpleqaRow(item int, g string) results.Row {
	r := results.Row{Benchmark: "simpleqa", ItemID: fmt.Sprintf("q%d", item), ItemIdx: int64(item), Scores: map[string]float64{}}
	if g == "" {
		r.ErrorCategory = "judge_error"
		return r
	}
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	r.Reward = b(g == "A")
	r.Scores = map[string]float64{
		"simpleqa:correct":                     b(g == "A"),
		"simpleqa:incorrect":                   b(g == "B"),
		"simpleqa:not_attempted":               b(g == "C"),
		"simpleqa:correct_given_attempted/num": b(g == "A"),
		"simpleqa:correct_given_attempted/den": b(g != "C"),
	}
	return r
}

func metricOf(t *testing.T, b *Bundle, name string) Score {
	t.Helper()
	for _, m := range b.Metrics {
		if m.Metric == name {
			return m
		}
	}
	t.Fatalf("no metric %s in %v", name, b.Metrics)
	return Score{}
}

// TestSimpleQAFScore checks the F-score on a table worked by hand, with
// simple-evals' formulas: 10 graded items, 4 CORRECT, 2 INCORRECT, 4
// NOT_ATTEMPTED, and one judge failure. correct = 4/10 = 0.4,
// correct_given_attempted = 4/6, F = 2·0.4·(2/3)/(0.4+2/3) = 0.5.
func TestSimpleQAFScore(t *testing.T) {
	grades := []string{"A", "C", "B", "A", "C", "A", "", "B", "C", "A", "C"}
	var rows []results.Row
	for i, g := range grades {
		rows = append(rows, simpleqaRow(i, g))
	}
	b := Compute(Input{Rows: rows, Meta: map[string]string{results.MetaBenchmark: "simpleqa"}, Resamples: 2000})
	want := map[string]float64{
		"simpleqa:correct":                 0.4,
		"simpleqa:incorrect":               0.2,
		"simpleqa:not_attempted":           0.4,
		"simpleqa:correct_given_attempted": 4.0 / 6,
		"simpleqa:f_score":                 0.5,
	}
	for name, w := range want {
		m := metricOf(t, b, name)
		if m.Value == nil || math.Abs(*m.Value-w) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, m.Value, w)
		}
		if m.N != 10 {
			t.Errorf("%s over %d items, want the 10 graded ones", name, m.N)
		}
	}
	f := metricOf(t, b, "simpleqa:f_score")
	if f.Bootstrap == nil || f.Bootstrap.Lo > 0.5 || f.Bootstrap.Hi < 0.5 || f.Bootstrap.Lo < 0 || f.Bootstrap.Hi > 1 || f.Bootstrap.Lo == f.Bootstrap.Hi {
		t.Errorf("f_score interval %+v: want a non-degenerate interval in [0,1] around 0.5", f.Bootstrap)
	}
	if f.Bootstrap != nil && (f.Bootstrap.Seed != 42 || f.Bootstrap.Resamples != 2000) {
		t.Errorf("f_score interval seed %d × %d resamples, want the bundle's 42 × 2000", f.Bootstrap.Seed, f.Bootstrap.Resamples)
	}
	again := metricOf(t, Compute(Input{Rows: rows, Meta: map[string]string{results.MetaBenchmark: "simpleqa"}, Resamples: 2000}), "simpleqa:f_score")
	if *again.Bootstrap != *f.Bootstrap {
		t.Errorf("f_score interval not reproducible: %+v then %+v", f.Bootstrap, again.Bootstrap)
	}
	// The judge failure is the infrastructure's, not the model's: never
	// scored, and 1 of 11 samples (9.09%) is above the default
	// max_error_rate of 5%.
	v := b.Validity
	if v.InfraErrors != 1 || len(v.Classes) != 1 || v.Classes[0].Category != "judge_error" || !v.Invalid {
		t.Errorf("validity %+v, want the one judge_error, INVALID", v)
	}
	if b.Failures.Failed != 0 || b.ScoredSamples != 10 {
		t.Errorf("failures %+v over %d scored samples, want none over 10", b.Failures, b.ScoredSamples)
	}
}

// TestFScoreEdges: nothing attempted gives 0 (simple-evals' guard), and
// rows without SimpleQA grades get no F-score.
func TestFScoreEdges(t *testing.T) {
	rows := []results.Row{simpleqaRow(0, "C"), simpleqaRow(1, "C")}
	f := metricOf(t, Compute(Input{Rows: rows, Resamples: 100}), "simpleqa:f_score")
	if f.Value == nil || *f.Value != 0 {
		t.Errorf("all NOT_ATTEMPTED: f_score %v, want 0", f.Value)
	}
	all := []results.Row{simpleqaRow(0, "A"), simpleqaRow(1, "A")}
	f = metricOf(t, Compute(Input{Rows: all, Resamples: 100}), "simpleqa:f_score")
	if f.Value == nil || *f.Value != 1 {
		t.Errorf("all CORRECT: f_score %v, want 1", f.Value)
	}
	plain := []results.Row{{ItemID: "a", Reward: 1}, {ItemID: "b"}}
	for _, m := range Compute(Input{Rows: plain, Resamples: 100}).Metrics {
		if m.Metric == "simpleqa:f_score" {
			t.Error("an F-score on rows without SimpleQA grades")
		}
	}
}
