package reproduce

import (
	"math"

	"github.com/nel-eval/nel/runtime/stats"
)

// maxItems caps ItemsNeeded and maxRepeats RepeatsNeeded: past them the
// answer is "not by adding items (repeats)".
const (
	maxItems   = 10_000_000
	maxRepeats = 1000
)

// adjusted is the centre and standard error of the adjusted paired
// interval on mean(d) (the interval is centre ± z·SE):
// stats.AdjustedPaired with pseudo-items ±1, which for binary rewards with
// one repeat is Bonett & Price's (2012) adjusted Wald interval for paired
// proportions. The adjustment keeps two runs that agree on every item from
// an interval of [0, 0].
func adjusted(d []float64) (center, se float64) {
	var s, q float64
	for _, x := range d {
		s += x
	}
	m := s / float64(len(d))
	for _, x := range d {
		q += (x - m) * (x - m)
	}
	v := 0.0
	if len(d) > 0 {
		v = q / float64(len(d))
	}
	return stats.AdjustedPaired(float64(len(d)), m, v, 1)
}

// within reports whether the adjusted interval at z of n differences of
// mean m and population variance v lies strictly inside ±margin: with
// z = z₁₋α, whether the equivalence test (TOST) would reject at α, as
// tost's p < α does.
func within(n, m, v, z, margin float64) bool {
	c, se := stats.AdjustedPaired(n, m, v, 1)
	return math.Abs(c)+z*se < margin
}

// itemsNeeded is the smallest number of paired items whose adjusted
// interval at z would lie within ±margin (with z = z₁₋α, the equivalence
// test would reject at α), if the per-item differences kept
// their observed mean and spread (and the pseudo-items their weight): 0
// when no number does (the observed mean difference is itself at or past
// the margin) or more than maxItems would be needed.
func itemsNeeded(d []float64, z, margin float64) int {
	m, v := moments(d)
	return smallest(len(d), maxItems, func(n int) bool { return within(float64(n), m, v, z, margin) })
}

// repeatsNeeded is the smallest number of repeats per item, on the same
// items, whose adjusted interval would lie within ±margin, assuming the
// per-item differences are sampling noise around their mean (both runs
// measure the same thing), whose variance falls as 1/repeats. 0 when no
// number up to maxRepeats does, or when more repeats cannot help (no item
// differs).
func repeatsNeeded(d []float64, repeats int, z, margin float64) int {
	m, v := moments(d)
	if v == 0 || repeats < 1 {
		return 0
	}
	n := float64(len(d))
	return smallest(repeats, maxRepeats, func(k int) bool {
		return within(n, m, v*float64(repeats)/float64(k), z, margin)
	})
}

// smallest is the least x in (from, limit] with ok(x), assuming ok stays
// true once true; 0 when ok(limit) is false.
func smallest(from, limit int, ok func(int) bool) int {
	if !ok(limit) {
		return 0
	}
	lo, hi := from, limit // ok(hi), and lo is below the answer
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// moments are the mean and population variance of xs.
func moments(xs []float64) (m, v float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	m = stats.Mean(xs)
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, v / float64(len(xs))
}

// mcnemarTwoSided is the exact two-sided McNemar test on the discordant
// pairs: min(1, 2·P[X ≤ min(b, c)]) for X ~ Bin(b+c, ½); 1 with no
// discordant pair. By symmetry P[X ≤ k] = P[X ≥ n−k].
func mcnemarTwoSided(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	return min(1, 2*stats.BinomGreater(n-min(b, c), n, 0.5))
}

// signFlipTwoSided is the two-sided paired sign-flip permutation test of
// mean(d) = 0: stats.SignFlip is one-sided (mean(d) > 0), so twice the
// smaller of the two one-sided p-values, capped at 1.
func signFlipTwoSided(d []float64, resamples int, seed uint64) float64 {
	neg := make([]float64, len(d))
	for i, x := range d {
		neg[i] = -x
	}
	return min(1, 2*min(stats.SignFlip(d, resamples, seed), stats.SignFlip(neg, resamples, seed)))
}
