package metrics

import (
	"math/rand/v2"
	"slices"

	"github.com/nel-eval/nel/runtime/stats"
)

// SimpleQA's row scores (runtime/bench simpleqa.go) and the metric derived
// from them.
const (
	simpleqaCorrect = "simpleqa:correct"
	simpleqaCGADen  = "simpleqa:correct_given_attempted" + ratioDen
	SimpleQAFScore  = "simpleqa:f_score"
)

// derived adds the metrics that are functions of other metrics, keyed on
// the presence of their inputs in the rows, not on the benchmark's name.
func (c *computer) derived() []Score {
	var out []Score
	if s, ok := c.simpleqaFScore(); ok {
		out = append(out, s)
	}
	return out
}

// simpleqaFScore is simple-evals' SimpleQA "f1": the harmonic mean of the
// overall correct rate and correct-given-attempted,
//
//	F = 2·c·g / (c + g),  c = Σcorrect / Σgraded,  g = Σcorrect / Σattempted
//
// (0 when c + g = 0), pooled over the rows that carry SimpleQA grades.
// Its interval is the percentile bootstrap over items (an item's repeats
// move together) with the bundle's seed and resample count; there is no
// CLT interval (F is not a mean).
func (c *computer) simpleqaFScore() (Score, bool) {
	var cor, graded, att []float64
	for _, it := range c.items {
		cs := it.scores[simpleqaCorrect]
		if len(cs) == 0 {
			continue
		}
		var k, a float64
		for _, v := range cs {
			k += v
		}
		for _, v := range it.scores[simpleqaCGADen] {
			a += v
		}
		cor, graded, att = append(cor, k), append(graded, float64(len(cs))), append(att, a)
	}
	if len(cor) == 0 {
		return Score{}, false
	}
	s := Score{Metric: SimpleQAFScore, N: len(cor)}
	f := fScore(cor, graded, att, nil)
	s.Value = &f
	if len(cor) < 2 {
		return s, true
	}
	seed := c.in.Seed
	r := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	fs := make([]float64, c.in.Resamples)
	idx := make([]int, len(cor))
	for i := range fs {
		for j := range idx {
			idx[j] = r.IntN(len(cor))
		}
		fs[i] = fScore(cor, graded, att, idx)
	}
	slices.Sort(fs)
	alpha := 1 - c.in.Level
	lo, hi := stats.Percentile(fs, 100*alpha/2), stats.Percentile(fs, 100*(1-alpha/2))
	s.Bootstrap = &Interval{Method: MethodBootstrapPercentile, Level: c.in.Level, Lo: lo, Hi: hi, Resamples: c.in.Resamples, Seed: seed, Parity: true}
	return s, true
}

// fScore is F over the items idx (all items when idx is nil).
func fScore(cor, graded, att []float64, idx []int) float64 {
	var k, n, a float64
	add := func(j int) { k, n, a = k+cor[j], n+graded[j], a+att[j] }
	if idx == nil {
		for j := range cor {
			add(j)
		}
	} else {
		for _, j := range idx {
			add(j)
		}
	}
	if n == 0 || a == 0 {
		return 0
	}
	c, g := k/n, k/a
	if c+g == 0 {
		return 0
	}
	return 2 * c * g / (c + g)
}
