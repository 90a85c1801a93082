package stats

import (
	"fmt"
	"math"
)

// BetaBinomial is a model of how items differ: each item's success
// probability q is drawn from a Beta with mean Mean and intra-item
// correlation ICC = 1/(α+β+1), and its c successes of n samples are
// Binomial(n, q) given q. ICC 0 is every item alike (c binomial); ICC 1
// is every item all right or all wrong.
type BetaBinomial struct {
	Mean, ICC float64
}

// FitBetaBinomial fits the model to items' success counts c[i] of n[i]
// samples by moments: Mean is the pooled share Σc/Σn, and ICC the ANOVA
// estimator for clustered binary data (Fleiss, Levin & Paik 2003, §15.4),
//
//	ρ = (MSB − MSW)/(MSB + (n₀−1)·MSW),
//
// MSB = Σ nᵢ(pᵢ−p)²/(N−1), MSW = Σ cᵢ(1−pᵢ)/(Σn − N), n₀ = (Σn − Σn²/Σn)/(N−1),
// which takes items of unequal size (a repeat lost to infrastructure).
// A negative ρ (items vary less than binomial sampling does, which is
// noise) becomes 0; with no variation at all (MSB = MSW = 0) ρ is 0 too,
// and with none within items (every item all right or all wrong) 1.
// Requires at least two items, n[i] ≥ 1 and 0 ≤ c[i] ≤ n[i].
func FitBetaBinomial(n, c []int) BetaBinomial {
	if len(n) != len(c) || len(n) < 2 {
		panic(fmt.Sprintf("stats: FitBetaBinomial: %d sizes and %d counts, need at least 2 items", len(n), len(c)))
	}
	var sn, sc, sn2 float64
	for i := range n {
		if n[i] < 1 || c[i] < 0 || c[i] > n[i] {
			panic(fmt.Sprintf("stats: FitBetaBinomial: item %d has %d of %d", i, c[i], n[i]))
		}
		sn, sc, sn2 = sn+float64(n[i]), sc+float64(c[i]), sn2+float64(n[i]*n[i])
	}
	p, items := sc/sn, float64(len(n))
	var between, within float64
	for i := range n {
		pi := float64(c[i]) / float64(n[i])
		between += float64(n[i]) * (pi - p) * (pi - p)
		within += float64(c[i]) * (1 - pi)
	}
	msb := between / (items - 1)
	msw := 0.0
	if sn > items {
		msw = within / (sn - items)
	}
	n0 := (sn - sn2/sn) / (items - 1)
	fit := BetaBinomial{Mean: p}
	switch den := msb + (n0-1)*msw; {
	case den <= 0: // no variation at all
	case msw == 0:
		fit.ICC = 1
	default:
		fit.ICC = min(max((msb-msw)/den, 0), 1)
	}
	return fit
}

// PMF is P(c) for c = 0…n successes of n samples under the model.
func (b BetaBinomial) PMF(n int) []float64 {
	pmf := make([]float64, n+1)
	switch {
	case b.Mean <= 0:
		pmf[0] = 1
	case b.Mean >= 1:
		pmf[n] = 1
	case b.ICC >= 1:
		pmf[0], pmf[n] = 1-b.Mean, b.Mean
	case b.ICC <= 0:
		for c := range pmf {
			pmf[c] = math.Exp(lchoose(n, c) + float64(c)*math.Log(b.Mean) + float64(n-c)*math.Log1p(-b.Mean))
		}
	default:
		s := (1 - b.ICC) / b.ICC // α + β
		a, bb := b.Mean*s, (1-b.Mean)*s
		lb := lbeta(a, bb)
		for c := range pmf {
			pmf[c] = math.Exp(lchoose(n, c) + lbeta(a+float64(c), bb+float64(n-c)) - lb)
		}
	}
	return pmf
}

// PassAtK is the mean and variance of one item's pass@k estimate
// (PassAtK over its n samples) under the model: sums over the
// Beta-binomial distribution of its count. The variance is that of an
// item drawn at random, the between-item spread of the true pass@k and
// the U-statistic's own variance together. Requires 1 ≤ k ≤ n.
func (b BetaBinomial) PassAtK(n, k int) (mean, variance float64) {
	checkPassK("BetaBinomial.PassAtK", n, 0, k)
	var m2 float64
	for c, w := range b.PMF(n) {
		v := PassAtK(n, c, k)
		mean += w * v
		m2 += w * v * v
	}
	return mean, max(m2-mean*mean, 0)
}

// PassAtKModelTrials is the effective sample size of pass@k's mean over
// items with n[i] samples under the model: m(1−m)/Var, m the model's mean
// pass@k and Var the variance of the items' mean estimate, Σ Varᵢ/N². It
// is the size docs/statistics.md's "pass@k" puts Jeffreys' interval on
// in place of one from the items' sample SE, which near 1 is skewed low.
// 0 when the model has no variance (Mean 0 or 1).
func (b BetaBinomial) PassAtKModelTrials(n []int, k int) float64 {
	type mv struct{ m, v float64 }
	memo := map[int]mv{}
	var sm, sv float64
	for _, ni := range n {
		r, ok := memo[ni]
		if !ok {
			r.m, r.v = b.PassAtK(ni, k)
			memo[ni] = r
		}
		sm, sv = sm+r.m, sv+r.v
	}
	items := float64(len(n))
	m := sm / items
	if sv <= 0 || m <= 0 || m >= 1 {
		return 0
	}
	return m * (1 - m) * items * items / sv
}

// lbeta is log B(a, b).
func lbeta(a, b float64) float64 {
	x, _ := math.Lgamma(a)
	y, _ := math.Lgamma(b)
	z, _ := math.Lgamma(a + b)
	return x + y - z
}
