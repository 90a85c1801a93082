package metrics_test

import (
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
)

// passKRows are items of 4 repeats with the given counts right (the first
// c of each item's repeats), categories cats[i] when cats is not nil.
func passKRows(counts []int, cats []string) []results.Row {
	var rows []results.Row
	for i, c := range counts {
		cat := ""
		if cats != nil {
			cat = cats[i]
		}
		for r := range 4 {
			reward := 0.0
			if r < c {
				reward = 1
			}
			rows = append(rows, row(string(rune('a'+i)), int64(i), int64(r), reward, cat))
		}
	}
	return rows
}

// TestPassAtKBetaBinomial works pass@2's interval by hand on four items
// of four repeats, right 4, 4, 3 and 1 times. pass@2 per item is 1, 1, 1
// and 1 − C(3,2)/C(4,2) = ½: mean ⅞, sample SE ⅛ (variance of the values
// 1/16), so the sample's effective size is (⅞·⅛)/(1/64) = 7. The counts'
// Beta-binomial fit (stats.TestFitBetaBinomial) has mean ¾ and ICC 3/7:
// α = 1, β = ⅓, P(c = 0…4) = 1/13, 6/65, 54/455, 81/455, 243/455 (rising
// factorials, exact fractions outside the code), pass@2 given c 0, ½, ⅚,
// 1, 1: model mean 6/7, variance 264/3185, and 4·m(1−m)/V = 65/11 ≈ 5.91
// items' worth, below 7, so the model's size is the one taken. With
// t(0.975, 3) = 3.18245 the df-adjusted size is 2.2413 and x = 1.9611;
// both counts lie within 2 of their end, so each bound is
// Clopper–Pearson's, further out than Jeffreys' [0.2583, 0.9966]:
// 0.1275765972 and 0.9999994966 (mpmath, regularized incomplete beta).
func TestPassAtKBetaBinomial(t *testing.T) {
	b := metrics.Compute(metrics.Input{Rows: passKRows([]int{4, 4, 3, 1}, nil), Meta: meta, Resamples: 200})
	s := b.Metrics[1]
	if s.Metric != "pass@2" || s.CLT == nil {
		t.Fatalf("metrics[1] = %+v", s)
	}
	near(t, "pass@2", *s.Value, 0.875)
	ci := s.CLT
	if ci.Method != "jeffreys_betabinomial" || ci.DF != 3 {
		t.Errorf("method %s, df %d", ci.Method, ci.DF)
	}
	near(t, "SE", ci.SE, 0.125)
	near(t, "effective n", ci.EffectiveN, 65.0/11)
	near(t, "lo", ci.Lo, 0.127576597171408)
	near(t, "hi", ci.Hi, 0.999999496627466)

	// All right: p̂ = 1, the size is the items (no variance to estimate),
	// and the lower bound Clopper–Pearson's (α/2)^(1/n*).
	all := metrics.Compute(metrics.Input{Rows: passKRows([]int{4, 4, 4, 4}, nil), Meta: meta, Resamples: 200}).Metrics[1].CLT
	if all.Method != "jeffreys_betabinomial" || all.EffectiveN != 4 || all.Hi != 1 || !(all.Lo > 0 && all.Lo < 0.6) {
		t.Errorf("all right: %+v", all)
	}

	// Over categories pass@2 keeps the clustered interval, capped at the
	// disjoint blocks (2 per item): the model is of items, not clusters.
	cl := metrics.Compute(metrics.Input{Rows: passKRows([]int{4, 4, 3, 1, 2, 4}, []string{"x", "x", "y", "y", "z", "z"}), Meta: meta, Resamples: 200}).Metrics[1].CLT
	if cl.Method != "korn_graubard_clustered" || cl.Clusters != 3 || cl.EffectiveN > 12 {
		t.Errorf("clustered: %+v", cl)
	}
}
