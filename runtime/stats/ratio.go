package stats

import (
	"math"
	"slices"
)

// Ratio is the ratio estimator Σnum/Σden over units (items): a metric whose
// value pools counts across items rather than averaging per-item ratios —
// IFEval's instruction-level accuracy is instructions followed over
// instructions given, so a prompt with four instructions weighs four times
// one with one. It returns NaN when Σden is 0.
func Ratio(num, den []float64) float64 {
	var n, d float64
	for i := range num {
		n += num[i]
		d += den[i]
	}
	if d == 0 {
		return math.NaN()
	}
	return n / d
}

// RatioCLT returns the ratio and its delta-method (linearised) standard
// error and normal interval at level: with R = Σn/Σd and d̄ the mean
// denominator, the per-unit values z_i = (n_i − R·d_i)/d̄ have mean 0 and
// SE(R) = sd(z)/√m over m units. num and den have equal length ≥ 2 and a
// positive Σden.
func RatioCLT(num, den []float64, level float64) (r, se, lo, hi float64) {
	checkLevel(level)
	m := len(num)
	r = Ratio(num, den)
	var dsum float64
	for _, d := range den {
		dsum += d
	}
	dbar := dsum / float64(m)
	z := make([]float64, m)
	for i := range num {
		z[i] = (num[i] - r*den[i]) / dbar
	}
	se = math.Sqrt(Variance(z) / float64(m))
	q := NormalQuantile((1 + level) / 2)
	return r, se, r - q*se, r + q*se
}

// BootstrapRatio is the seeded percentile bootstrap of the ratio: units
// are resampled with replacement (num and den together) and Σn/Σd taken
// for each resample; a resample whose Σd is 0 counts as the full-sample
// ratio. Same percentile convention as Bootstrap.
func BootstrapRatio(num, den []float64, resamples int, seed uint64, level float64) (lo, hi float64) {
	checkLevel(level)
	checkResamples(resamples)
	full := Ratio(num, den)
	m := len(num)
	if m < 2 {
		return full, full
	}
	r := newRand(seed)
	rs := make([]float64, resamples)
	for i := range rs {
		var n, d float64
		for range m {
			j := r.IntN(m)
			n += num[j]
			d += den[j]
		}
		if d == 0 {
			rs[i] = full
			continue
		}
		rs[i] = n / d
	}
	slices.Sort(rs)
	return bootstrapEnds(rs, level)
}
