package view

import (
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/report/internal/reporttest"
	"github.com/nel-eval/nel/runtime/metrics"
)

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Num(nil), "n/a"},
		{Num(reporttest.F(0.812)), "0.8120"},
		{Fix(-0.00001, 4), "0.0000"},
		{Count(1234567), "1,234,567"},
		{Count(-1234), "-1,234"},
		{Count(12), "12"},
		{MS(1830.5), "1.83 s"},
		{MS(14020), "14.0 s"},
		{MS(840), "840 ms"},
		{MS(5), "5.0 ms"},
		{duration(2533), "42 min 13 s"},
		{duration(7300), "2 h 01 min"},
		{duration(0), "n/a"},
		{Headline(metrics.Score{Metric: "pass@1", Value: reporttest.F(0.812), CLT: reporttest.CLT(0.7911, 0.8329, 0), Bootstrap: reporttest.Boot(0.7905, 0.8324)}),
			"pass@1 0.8120 [95% CI clt 0.7911–0.8329] (NeMo's bootstrap, parity only: 0.7905–0.8324)"},
		{Headline(metrics.Score{Metric: "pass@1", Value: reporttest.F(1)}), "pass@1 1.0000 (no interval: fewer than two items)"},
		{Headline(metrics.Score{Metric: "mean_reward"}), "mean_reward n/a"},
		{Headline(metrics.Score{Metric: "harness:mmlu/score/macro", Value: reporttest.F(0.8011)}), "harness:mmlu/score/macro 0.8011 (aggregate-only: the harness's own score, no items to compute an interval from)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	iv := Intervals(metrics.Score{CLT: &metrics.Interval{Method: "clt_clustered", Level: 0.9, Lo: 0.1, Hi: 0.2, Clusters: 7}, Bootstrap: reporttest.Boot(0.1, 0.3)})
	if want := "[90% CI clt clustered (7 clusters) 0.1000–0.2000] (NeMo's bootstrap, parity only: 0.1000–0.3000)"; iv != want {
		t.Errorf("intervals = %q, want %q", iv, want)
	}
}

// Under the scorer metrics a report says where the headline comes from
// (a built-in benchmark's scorer by name) and why numeric_match may read
// below it; a benchmark the recipe declares gets no scorer name it does
// not have, and one without scorer metrics no notes.
func TestScorerNotes(t *testing.T) {
	v := 0.7
	scored := []metrics.Score{{Metric: "pass@1", Value: &v}, {Metric: "scorer:numeric_match", Value: &v}, {Metric: "scorer:exact_match", Value: &v}}
	gsm := &metrics.Bundle{Name: "gsm8k", Binary: true, Headline: scored[0], Metrics: scored, Methodology: map[string]any{"name": "gsm8k"}}
	notes := ScorerNotes(gsm)
	if len(notes) != 2 ||
		notes[0] != "The headline pass@1 is scored by gsm8k's own scorer, answer_line; each scorer: metric scores the same answers again with the scorer it names and does not change the headline." ||
		!strings.HasPrefix(notes[1], `scorer:numeric_match is NeMo Evaluator's numeric_match, kept as it is so that its numbers match NeMo's: `) {
		t.Errorf("gsm8k's notes = %q", notes)
	}
	byob := &metrics.Bundle{Name: "gsm8k", Binary: true, Headline: scored[0], Metrics: scored, Methodology: map[string]any{"byob": map[string]any{}}}
	if notes := ScorerNotes(byob); len(notes) != 2 || !strings.HasPrefix(notes[0], "The headline pass@1 is scored by the benchmark's own scorer;") {
		t.Errorf("a recipe's own benchmark named gsm8k: notes = %q", notes)
	}
	if notes := ScorerNotes(&metrics.Bundle{Name: "gsm8k", Headline: scored[0], Metrics: scored[:1]}); notes != nil {
		t.Errorf("no scorer metrics: notes = %q", notes)
	}
}

// An interval column's header names the methods it holds, each once, in
// the order met; a column with none keeps the generic name.
func TestIntervalHeads(t *testing.T) {
	iv := func(m metrics.Method) *metrics.Interval { return &metrics.Interval{Method: m, Level: 0.95} }
	scores := []metrics.Score{
		{CLT: iv("wilson"), Bootstrap: iv("bootstrap_percentile")},
		{CLT: iv("t"), Bootstrap: iv("bootstrap_percentile")},
		{CLT: iv("wilson"), Bootstrap: iv("bootstrap_cluster")},
	}
	a, b := IntervalHeads("95% CI", scores)
	if a != "95% CI (wilson, t)" || b != "NeMo's bootstrap, parity only (bootstrap_percentile, bootstrap_cluster)" {
		t.Errorf("heads %q, %q", a, b)
	}
	a, b = IntervalHeads("90% CI", []metrics.Score{{}})
	if a != "90% CI (clt)" || b != "NeMo's bootstrap, parity only (bootstrap)" {
		t.Errorf("heads with no interval %q, %q", a, b)
	}
}
