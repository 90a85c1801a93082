package coverage

import "math"

// tango is Tango's (1998) score interval for the difference of two paired
// proportions, the literature's reference for paired 0/1 outcomes, against
// which the table compares the width of compare's adjusted Wald interval:
// with n pairs, u of them where only the candidate is right and v where
// only the baseline is, it is the set of Δ = πu − πv whose score
// statistic (u − v − nΔ)/√(n(πu + πv − Δ²)), the π the likelihood's
// maximum under Δ, is within ±z.
func tango(u, v, n int, z float64) (lo, hi float64) {
	est := float64(u-v) / float64(n)
	// The statistic falls as Δ grows: the lower end is where it is z,
	// the upper where it is −z.
	lo = bisect(-1, est, func(d float64) bool { return tangoScore(u, v, n, d) > z })
	hi = bisect(est, 1, func(d float64) bool { return tangoScore(u, v, n, d) > -z })
	return lo, hi
}

// bisect returns the point in [a, b] where above turns from true to false.
func bisect(a, b float64, above func(float64) bool) float64 {
	for range 100 {
		m := (a + b) / 2
		if above(m) {
			a = m
		} else {
			b = m
		}
	}
	return (a + b) / 2
}

// tangoScore is the score statistic at Δ = d.
func tangoScore(u, v, n int, d float64) float64 {
	t := tangoMLE(u, v, n, d)
	num := float64(u-v) - float64(n)*d
	den := math.Sqrt(float64(n) * (2*t + d - d*d))
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Copysign(math.Inf(1), num)
	}
	return num / den
}

// tangoMLE is πv at the likelihood's maximum under πu − πv = d: the
// likelihood u·log(πv+d) + v·log πv + (n−u−v)·log(1 − 2πv − d) has a
// derivative that falls in πv over max(0, −d) < πv < (1−d)/2, so its zero
// is found by bisection (the end of the range when it has none).
func tangoMLE(u, v, n int, d float64) float64 {
	slope := func(t float64) float64 {
		s := -2 * float64(n-u-v) / (1 - 2*t - d)
		if u > 0 {
			s += float64(u) / (t + d)
		}
		if v > 0 {
			s += float64(v) / t
		}
		return s
	}
	return bisect(math.Max(0, -d), (1-d)/2, func(t float64) bool { return slope(t) > 0 })
}
