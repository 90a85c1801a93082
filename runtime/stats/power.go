package stats

import (
	"fmt"
	"math"
)

// maxRepeats caps OptimalRepeats: beyond it the within-item noise is
// negligible and more repeats buy nothing a planner should act on.
const maxRepeats = 100

// Decompose splits the variance of per-item scores by the law of total
// variance (Miller 2024, §3): items[i] holds item i's rewards over its
// repeats. within is the mean over items with at least two repeats of the
// item's sample variance (ddof=1), the model-sampling noise E[σᵢ²];
// withinOK is false (and within 0) when no item has two repeats. between
// is the variance of the items' expected scores,
// max(0, Variance(item means) − within/K̄): an item mean carries within/Kᵢ
// of sampling noise, and K̄ is the harmonic mean of the repeats per item
// (their plain mean when all are equal), which makes the subtraction
// unbiased for unequal repeats. It is clamped at 0 because the difference
// of two noisy estimates can be negative. Items with no rewards are
// ignored.
func Decompose(items [][]float64) (between, within float64, withinOK bool) {
	var means []float64
	var sumW float64
	nW := 0
	var invK float64
	for _, it := range items {
		if len(it) == 0 {
			continue
		}
		means = append(means, Mean(it))
		invK += 1 / float64(len(it))
		if len(it) >= 2 {
			sumW += Variance(it)
			nW++
		}
	}
	if nW > 0 {
		within = sumW / float64(nW)
		withinOK = true
	}
	if len(means) == 0 {
		return 0, within, withinOK
	}
	harmonicK := float64(len(means)) / invK
	between = math.Max(0, Variance(means)-within/harmonicK)
	return between, within, withinOK
}

// SEFromDecomposition returns the standard error of an eval score over n
// items with k repeats each, sqrt((between + within/k)/n) (Miller 2024,
// §3). n and k must be ≥ 1.
func SEFromDecomposition(between, within float64, n, k int) float64 {
	if n < 1 || k < 1 {
		panic(fmt.Sprintf("stats: SEFromDecomposition(n=%d, k=%d): need n, k ≥ 1", n, k))
	}
	return math.Sqrt((between + within/float64(k)) / float64(n))
}

// OptimalRepeats returns the number of repeats per item that minimises the
// standard error for a fixed budget, when one sample costs 1 and adding an
// item costs itemCost more (prompt construction, a sandbox): minimising
// (itemCost + K)·(between + within/K) gives K* = sqrt(within/between ·
// itemCost), rounded to the nearest integer and clamped to [1, 100]. With
// between = 0 and within > 0 repeats are the only lever and it returns the
// cap, 100; with within = 0 repeats are useless and it returns 1. Negative
// arguments are treated as 0.
func OptimalRepeats(between, within, itemCost float64) int {
	between, within, itemCost = math.Max(0, between), math.Max(0, within), math.Max(0, itemCost)
	if within == 0 {
		return 1
	}
	if between == 0 {
		return maxRepeats
	}
	k := math.Round(math.Sqrt(within / between * itemCost))
	return int(math.Max(1, math.Min(maxRepeats, k)))
}

// MDE returns the minimum detectable effect of a two-sided test at level
// alpha with the given power, for an estimate with standard error se:
// (z_{1−α/2} + z_{power})·se; 2.80·se at α = 0.05 and 80% power. alpha and
// power must be in (0, 1).
func MDE(se, alpha, power float64) float64 {
	if !(alpha > 0 && alpha < 1) || !(power > 0 && power < 1) {
		panic(fmt.Sprintf("stats: MDE(alpha=%v, power=%v): need both in (0, 1)", alpha, power))
	}
	return (NormalQuantile(1-alpha/2) + NormalQuantile(power)) * se
}
