package stats

import (
	"fmt"
	"math"
)

// Mean returns the arithmetic mean of xs; 0 for empty xs.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Variance returns the sample variance of xs (ddof=1, as numpy.var(xs,
// ddof=1)); 0 when len(xs) < 2, where it is undefined.
func Variance(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	// Two passes: the one-pass sum-of-squares formula cancels badly for
	// scores near 1 with a small spread.
	m := Mean(xs)
	var ss float64
	for _, x := range xs {
		d := x - m
		ss += d * d
	}
	return ss / float64(len(xs)-1)
}

// Percentile returns the q-th percentile (q in [0, 100]) of sorted, which
// must be sorted ascending, with numpy's default "linear" interpolation:
// the value at virtual index (len−1)·q/100. q outside [0, 100] is clamped;
// an empty slice gives 0.
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	q = math.Max(0, math.Min(100, q))
	// Same operation order as numpy (q/100 first, then times n−1) so that
	// the virtual index rounds identically.
	h := q / 100 * float64(n-1)
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return sorted[n-1]
	}
	return lerp(sorted[i], sorted[i+1], h-lo)
}

// lerp interpolates between a and b at t in [0, 1] as numpy's _lerp does:
// from b backwards when t ≥ 0.5, which keeps the result monotone in t and
// exact at both ends.
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

// checkLevel panics unless level is a confidence level in (0, 1).
func checkLevel(level float64) {
	if !(level > 0 && level < 1) {
		panic(fmt.Sprintf("stats: confidence level %v not in (0, 1)", level))
	}
}

// CLT returns the mean of xs, its CLT standard error s/√n (s with ddof=1)
// and the interval mean ± z·se with z = Φ⁻¹((1+level)/2). With fewer than
// two values the standard error is 0 and lo = hi = mean (an interval cannot
// be estimated from one value; the caller reports it as degenerate).
// level must be in (0, 1).
func CLT(xs []float64, level float64) (mean, se, lo, hi float64) {
	checkLevel(level)
	return interval(xs, NormalQuantile((1+level)/2))
}

// TInterval is CLT with the Student t critical value t_{(1+level)/2, n−1}
// in place of z, which keeps the coverage nominal for small n (the gate's
// paired deltas). Degenerate cases are as in CLT.
func TInterval(xs []float64, level float64) (mean, se, lo, hi float64) {
	checkLevel(level)
	if len(xs) < 2 {
		return interval(xs, 0)
	}
	return interval(xs, TQuantile((1+level)/2, float64(len(xs)-1)))
}

// interval returns mean, s/√n and mean ± crit·se, degenerate below n = 2.
func interval(xs []float64, crit float64) (mean, se, lo, hi float64) {
	mean = Mean(xs)
	if len(xs) < 2 {
		return mean, 0, mean, mean
	}
	se = math.Sqrt(Variance(xs) / float64(len(xs)))
	return mean, se, mean - crit*se, mean + crit*se
}

// ClusteredSE returns the cluster-robust standard error of the mean of xs
// (Miller 2024; NeMo Evaluator's clustered_ci) and the number of clusters
// G. cluster[i] is the cluster id of xs[i]. The residuals e = x − mean are
// summed per cluster and Var = G/(G−1) · Σ_g e_g² / N²; the G/(G−1) factor
// removes the downward bias from estimating the mean. Correlated items in a
// cluster (questions on one passage) make this larger than the CLT error,
// which would otherwise overstate the evidence.
//
// With G < 2 the clustered variance is undefined and it returns the plain
// CLT standard error (0 for fewer than two values) and G. len(cluster) must
// equal len(xs).
func ClusteredSE(xs []float64, cluster []int) (se float64, groups int) {
	if len(cluster) != len(xs) {
		panic(fmt.Sprintf("stats: ClusteredSE: %d cluster ids for %d values", len(cluster), len(xs)))
	}
	m := Mean(xs)
	// Sums in order of first appearance, not map order, so that the result
	// does not vary in its last bits from run to run.
	index := make(map[int]int)
	var sums []float64
	for i, x := range xs {
		j, ok := index[cluster[i]]
		if !ok {
			j = len(sums)
			index[cluster[i]] = j
			sums = append(sums, 0)
		}
		sums[j] += x - m
	}
	g := len(sums)
	if g < 2 {
		_, se, _, _ := interval(xs, 0)
		return se, g
	}
	var ss float64
	for _, e := range sums {
		ss += e * e
	}
	n := float64(len(xs))
	v := float64(g) / float64(g-1) * ss / (n * n)
	return math.Sqrt(v), g
}
