package stats

import (
	"fmt"
	"math"
)

// Wilson returns the Wilson score interval (Wilson 1927) for a proportion
// p̂ observed on n trials, with critical value crit (z, or a t quantile
// for a design with few independent units): the p with
// (p̂ − p)² = crit²·p(1−p)/n,
//
//	(p̂ + c²/2n ± c·√(p̂(1−p̂)/n + c²/4n²)) / (1 + c²/n).
//
// Unlike p̂ ± c·√(p̂(1−p̂)/n) it never has zero width for finite n (at
// p̂ = 1 it is [n/(n+c²), 1]), stays inside [0, 1], and holds its coverage
// near 0 and 1 where the Wald interval collapses (Brown, Cai & DasGupta
// 2001). n need not be an integer: an effective sample size (Kish's
// n/deff) stands in for n when the trials are correlated (repeats of one
// item, items of one cluster), as Korn & Graubard (1998) do for survey
// proportions. p̂ must be in [0, 1], n > 0 and crit ≥ 0.
func Wilson(phat, n, crit float64) (lo, hi float64) {
	if !(phat >= 0 && phat <= 1) || !(n > 0) || !(crit >= 0) {
		panic(fmt.Sprintf("stats: Wilson(%v, %v, %v): need p̂ in [0, 1], n > 0, crit ≥ 0", phat, n, crit))
	}
	c2 := crit * crit
	den := 1 + c2/n
	center := (phat + c2/(2*n)) / den
	half := crit / den * math.Sqrt(phat*(1-phat)/n+c2/(4*n*n))
	// The exact ends at p̂ = 0 and 1 are 0 and 1; rounding can miss them
	// by an ulp.
	lo, hi = math.Max(0, center-half), math.Min(1, center+half)
	if phat == 0 {
		lo = 0
	}
	if phat == 1 {
		hi = 1
	}
	return lo, hi
}

// EffectiveN is the effective sample size of a mean p̂ of values in
// [0, 1] estimated with standard error se: the number of independent
// Bernoulli trials that would give the same variance, p̂(1−p̂)/se²
// (Kish's design effect; Korn & Graubard 1998), capped at maxN, the
// number of trials observed (+Inf: no cap), since a design effect below 1
// is an accident of sampling. With se = 0 (every value 0, or every value
// 1) the variance cannot be estimated and it returns units, the number of
// independent units (items) — the most conservative count the data
// supports: it assumes the repeats of an item tell nothing more.
func EffectiveN(phat, se, maxN float64, units int) float64 {
	if se == 0 || phat <= 0 || phat >= 1 {
		return float64(units)
	}
	return math.Min(maxN, phat*(1-phat)/(se*se))
}
