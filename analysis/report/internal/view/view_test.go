package view

import (
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
			"pass@1 0.8120 [95% CI clt 0.7911–0.8329; bootstrap 0.7905–0.8324]"},
		{Headline(metrics.Score{Metric: "pass@1", Value: reporttest.F(1)}), "pass@1 1.0000 (no interval: fewer than two items)"},
		{Headline(metrics.Score{Metric: "mean_reward"}), "mean_reward n/a"},
		{Headline(metrics.Score{Metric: "harness:mmlu/score/macro", Value: reporttest.F(0.8011)}), "harness:mmlu/score/macro 0.8011 (aggregate-only: the harness's own score, no items to compute an interval from)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	iv := Intervals(metrics.Score{CLT: &metrics.Interval{Method: "clt_clustered", Level: 0.9, Lo: 0.1, Hi: 0.2, Clusters: 7}, Bootstrap: reporttest.Boot(0.1, 0.3)})
	if want := "[90% CI clt clustered (7 clusters) 0.1000–0.2000; 95% CI bootstrap 0.1000–0.3000]"; iv != want {
		t.Errorf("intervals = %q, want %q", iv, want)
	}
}
