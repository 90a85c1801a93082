package stats

import (
	"math"
	"testing"
)

// The adjusted interval's numbers, worked by hand.
func TestAdjustedPaired(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n, m, v, h float64
		center, se float64
	}{
		// 300 items, every difference 0: centre 0, var_pop(d') = 2/302,
		// SE = √(2/302/302) = √2/302 = 0.0046828.
		{"identical", 300, 0, 0, 1, 0, math.Sqrt2 / 302},
		// k = 4 repeats: pseudo-differences ±1/4, SE = √2·0.25/302.
		{"identical, 4 repeats", 300, 0, 0, 0.25, 0, math.Sqrt2 * 0.25 / 302},
		// 10 pairs, n12 = 3 (d = −1), n21 = 1 (d = +1): m = −0.2, Σd² = 4,
		// v = 4/10 − 0.04 = 0.36. p̃12 = 4/12, p̃21 = 2/12: centre −1/6,
		// var = 6/12 − 1/36 = 17/36, SE = √(17/36/12) = 0.198375.
		{"Bonett-Price", 10, -0.2, 0.36, 1, -1.0 / 6, math.Sqrt(17.0 / 36 / 12)},
	} {
		c, se := AdjustedPaired(tc.n, tc.m, tc.v, tc.h)
		if math.Abs(c-tc.center) > 1e-12 || math.Abs(se-tc.se) > 1e-12 {
			t.Errorf("%s: AdjustedPaired = (%v, %v), want (%v, %v)", tc.name, c, se, tc.center, tc.se)
		}
	}
}
