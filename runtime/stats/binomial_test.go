package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// chiSquareZ draws `draws` variates from d and returns the Wilson–Hilferty
// normal score of Pearson's χ² statistic against the exact Binomial(n, p)
// density (bins with an expected count below 20 are pooled into their
// neighbours). Under a correct sampler it is approximately N(0, 1).
func chiSquareZ(r *rand.Rand, d binomialDist, n int, p float64, draws int) float64 {
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	lo := max(0, int(mean-12*sd-2))
	hi := min(n, int(mean+12*sd+2))
	obs := make([]float64, hi-lo+1)
	for range draws {
		k := d.draw(r)
		if k < 0 || k > n {
			return math.Inf(1)
		}
		k = max(lo, min(hi, k)) // the tails beyond 12 s.d. are pooled
		obs[k-lo]++
	}
	exp := make([]float64, len(obs))
	for k := lo; k <= hi; k++ {
		exp[k-lo] = float64(draws) * binomPMF(k, n, p, 1-p)
	}
	exp[0] = float64(draws) * (1 - BinomGreater(lo+1, n, p))
	exp[len(exp)-1] = float64(draws) * BinomGreater(hi, n, p)
	var chi2 float64
	bins := 0
	var o, e float64
	for i := range obs {
		o += obs[i]
		e += exp[i]
		if e >= 20 || i == len(obs)-1 {
			chi2 += (o - e) * (o - e) / e
			bins++
			o, e = 0, 0
		}
	}
	df := float64(bins - 1)
	// Wilson–Hilferty: (χ²/df)^(1/3) is nearly normal.
	return (math.Cbrt(chi2/df) - (1 - 2/(9*df))) / math.Sqrt(2/(9*df))
}

// TestBinomialSamplerExact checks the sampler against the exact binomial
// density for both methods (inversion below np = 10, BTRS above, p > ½ by
// symmetry, huge n with tiny p), and checks that the same test detects a
// sampler whose p is off by 2%, so passing it means something.
func TestBinomialSamplerExact(t *testing.T) {
	const draws = 200000
	cases := []struct {
		n int
		p float64
	}{
		{1, 0.5}, {10, 0.5}, {999, 0.01}, {1000, 0.01}, {30, 0.4}, {100, 0.5},
		{50, 0.97}, {250000, 0.7}, {2000000, 0.3}, {1000000000, 3e-9}, {400, 0.125},
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range cases {
		t.Run(fmt.Sprintf("n=%d,p=%g", c.n, c.p), func(t *testing.T) {
			z := chiSquareZ(r, newBinomial(c.n, c.p), c.n, c.p, draws)
			t.Logf("χ² normal score %.2f", z)
			if z > 4.5 {
				t.Errorf("χ² normal score %.2f; the draws do not follow Binomial(%d, %g)", z, c.n, c.p)
			}
			if c.n < 10 {
				return
			}
			off := newBinomial(c.n, c.p*1.02)
			if z := chiSquareZ(r, off, c.n, c.p, draws); z < 10 {
				t.Errorf("a sampler with p·1.02 scores only %.2f; the test has no power", z)
			}
		})
	}
}

func TestBinomialEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		n    int
		p    float64
		want int
	}{{0, 0.5, 0}, {10, 0, 0}, {10, 1, 10}, {-1, 0.5, 0}} {
		if got := binomial(r, c.n, c.p); got != c.want {
			t.Errorf("binomial(%d, %g) = %d, want %d", c.n, c.p, got, c.want)
		}
	}
}

// TestBinomGreaterComplement: the two tail sums meet: P[X ≥ k] + P[X < k]
// = 1 and P[X ≥ k] − P[X ≥ k+1] = P[X = k], across the switch between
// summing the upper and the lower tail.
func TestBinomGreaterComplement(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{10, 0.5}, {57, 0.3}, {1000, 0.5}, {5000, 0.01}} {
		for k := 0; k <= c.n; k++ {
			ge, gt := BinomGreater(k, c.n, c.p), BinomGreater(k+1, c.n, c.p)
			pmf := binomPMF(k, c.n, c.p, 1-c.p)
			if math.Abs(ge-gt-pmf) > 1e-13 || ge < gt || ge > 1 || gt < 0 {
				t.Fatalf("n=%d p=%g k=%d: P[X≥k]=%g, P[X≥k+1]=%g, P[X=k]=%g", c.n, c.p, k, ge, gt, pmf)
			}
		}
	}
	if BinomGreater(0, 5, 0.3) != 1 || BinomGreater(6, 5, 0.3) != 0 || BinomGreater(1, 5, 0) != 0 || BinomGreater(5, 5, 1) != 1 {
		t.Error("BinomGreater edge cases")
	}
	if !math.IsNaN(BinomGreater(1, 5, 1.5)) || !math.IsNaN(BinomGreater(1, -1, 0.5)) {
		t.Error("BinomGreater accepts p outside [0, 1] or n < 0")
	}
}
