package coverage

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// The item shapes other than the Beta (Case.Shape).
const (
	// ShapeTwoPoint: most items at q = twoPointHigh, the rest at
	// twoPointLow, in the share that gives the case's mean: strong
	// models on a set with a few hard items.
	ShapeTwoPoint = "two-point"
	// ShapeUniform: q uniform on [2·mean − 1, 1].
	ShapeUniform = "uniform"
)

const twoPointLow, twoPointHigh = 0.4, 0.995

// shapeCases are pass@k's cases whose items are not Beta-distributed:
// a Beta-binomial model of the counts (docs/statistics.md, "pass@k") is
// misspecified there, as it may be on a real benchmark.
func shapeCases() []Case {
	var cs []Case
	for _, shape := range []string{ShapeTwoPoint, ShapeUniform} {
		for _, n := range []int{50, 400} {
			for _, m := range []float64{0.9, 0.98} {
				cs = append(cs, Case{Name: fmt.Sprintf("n=%d k=4 p=%g items %s", n, m, shape), Items: n, Repeats: 4,
					Mean: m, Shape: shape})
			}
		}
	}
	return cs
}

// twoPointShare is the share of items at twoPointLow for a mean.
func twoPointShare(mean float64) float64 {
	return min(max((twoPointHigh-mean)/(twoPointHigh-twoPointLow), 0), 1)
}

// shapeProbs draws c.Items probabilities of c.Shape with mean c.Mean.
func shapeProbs(c Case, r *rand.Rand) []float64 {
	p := make([]float64, c.Items)
	w, a := twoPointShare(c.Mean), max(2*c.Mean-1, 0)
	for i := range p {
		switch c.Shape {
		case ShapeTwoPoint:
			p[i] = twoPointHigh
			if r.Float64() < w {
				p[i] = twoPointLow
			}
		default:
			p[i] = a + (1-a)*r.Float64()
		}
	}
	return p
}

// shapePassAtK is pass@k's truth for c.Shape: 1 − E[(1−q)^k]; on the
// uniform over [a, 1] E[(1−q)^k] = (1−a)^k/(k+1).
func shapePassAtK(c Case, k int) float64 {
	kf := float64(k)
	if c.Shape == ShapeTwoPoint {
		w := twoPointShare(c.Mean)
		return 1 - w*math.Pow(1-twoPointLow, kf) - (1-w)*math.Pow(1-twoPointHigh, kf)
	}
	a := max(2*c.Mean-1, 0)
	return 1 - math.Pow(1-a, kf)/(kf+1)
}
