package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Coverage simulations: a nominal 95% interval must contain the true mean
// in 95 ± 1% of simulated evals. They are seeded, so they are
// deterministic; the run counts keep the Monte Carlo standard error of a
// coverage estimate at 0.22–0.35 points, so ±1 point is a fair bound and a
// real under-coverage (the naive CLT under clustering) is far outside it.
//
// The bootstrap runs use 2,000 resamples instead of 10,000 to keep the test
// fast: coverage is a property of the percentile method and of n, and the
// resample count only adds a little Monte Carlo noise to the endpoints.

const coverageLevel = 0.95

// coverage counts how often lo ≤ truth ≤ hi.
type coverage struct {
	name    string
	hit, of int
}

func (c *coverage) add(lo, hi, truth float64) {
	c.of++
	if lo <= truth && truth <= hi {
		c.hit++
	}
}

func (c *coverage) pct() float64 { return 100 * float64(c.hit) / float64(c.of) }

// expectNominal fails unless the coverage is within ±tol points of 95%.
func (c *coverage) expectNominal(t *testing.T, tol float64) {
	t.Helper()
	t.Logf("%s: %.2f%% of %d", c.name, c.pct(), c.of)
	if math.Abs(c.pct()-100*coverageLevel) > tol {
		t.Errorf("%s covers %.2f%% of %d runs; want 95 ± %g", c.name, c.pct(), c.of, tol)
	}
}

// TestCoverageBinary: n = 200 binary items with p = 0.7, the plain
// accuracy eval.
func TestCoverageBinary(t *testing.T) {
	const (
		runs = 10000
		n    = 200
		p    = 0.7
	)
	r := rand.New(rand.NewPCG(1, 2))
	clt := coverage{name: "CLT"}
	boot := coverage{name: "bootstrap"}
	xs := make([]float64, n)
	for run := range runs {
		for i := range xs {
			xs[i] = 0
			if r.Float64() < p {
				xs[i] = 1
			}
		}
		_, _, lo, hi := CLT(xs, coverageLevel)
		clt.add(lo, hi, p)
		lo, hi = Bootstrap(xs, 2000, uint64(run), coverageLevel)
		boot.add(lo, hi, p)
	}
	clt.expectNominal(t, 1)
	boot.expectNominal(t, 1)
	// The CLT interval depends only on the number of successes k, so its
	// exact coverage is Σ_k P[k]·[p in interval(k)]; the simulation must
	// agree with it within Monte Carlo error (4 standard errors).
	exact := 0.0
	for k := 0; k <= n; k++ {
		for i := range xs {
			xs[i] = 0
			if i < k {
				xs[i] = 1
			}
		}
		if _, _, lo, hi := CLT(xs, coverageLevel); lo <= p && p <= hi {
			exact += binomPMF(k, n, p, 1-p)
		}
	}
	mcse := 100 * math.Sqrt(exact*(1-exact)/runs)
	if math.Abs(clt.pct()-100*exact) > 4*mcse {
		t.Errorf("simulated CLT coverage %.2f%%, exact %.2f%% (MC s.e. %.2f)", clt.pct(), 100*exact, mcse)
	}
}

// betaOrder draws Beta(a, b) for integers a, b ≥ 1 as the a-th smallest of
// a+b−1 uniforms (an order statistic), which needs no gamma variates.
func betaOrder(r *rand.Rand, a, b int) float64 {
	u := make([]float64, a+b-1)
	for i := range u {
		u[i] = r.Float64()
	}
	// Partial selection sort up to the a-th smallest.
	for i := 0; i < a; i++ {
		m := i
		for j := i + 1; j < len(u); j++ {
			if u[j] < u[m] {
				m = j
			}
		}
		u[i], u[m] = u[m], u[i]
	}
	return u[a-1]
}

// TestCoverageRepeats: n = 200 items with K = 4 repeats each; item
// difficulty p_i ~ Beta(3, 2), so the population mean is 3/5, and each
// item's mean over its repeats is the unit of analysis (NeMo's mean_reward
// and pass@1).
func TestCoverageRepeats(t *testing.T) {
	const (
		runs = 4000
		n    = 200
		k    = 4
	)
	truth := 3.0 / 5
	r := rand.New(rand.NewPCG(3, 4))
	clt := coverage{name: "CLT over item means"}
	boot := coverage{name: "bootstrap over item means"}
	means := make([]float64, n)
	for run := range runs {
		for i := range means {
			pi := betaOrder(r, 3, 2)
			c := 0
			for range k {
				if r.Float64() < pi {
					c++
				}
			}
			means[i] = float64(c) / k
		}
		_, _, lo, hi := CLT(means, coverageLevel)
		clt.add(lo, hi, truth)
		lo, hi = Bootstrap(means, 2000, uint64(run), coverageLevel)
		boot.add(lo, hi, truth)
	}
	clt.expectNominal(t, 1)
	boot.expectNominal(t, 1)
}

// TestCoverageClustered: 50 clusters of 8 items (questions on one passage)
// with a shared cluster effect as large as the item noise (intra-class
// correlation ½). The naive CLT interval treats the 400 items as
// independent and must under-cover badly (below 90%; theory ≈ 64%); the
// clustered standard error restores nominal coverage. With G = 50 clusters
// the clustered statistic is t-distributed with G−1 degrees of freedom, so
// the interval with t_{0.975, 49} is held to 95 ± 1; NeMo's z interval
// over the same SE is expected at ≈ 94.4% (P[|t₄₉| < 1.96]) and is held to
// 95 ± 1.5.
func TestCoverageClustered(t *testing.T) {
	const (
		runs     = 10000
		clusters = 50
		size     = 8
		mu       = 0.5
		sdC      = 1.0 // cluster effect
		sdE      = 1.0 // item noise
	)
	r := rand.New(rand.NewPCG(5, 6))
	naive := coverage{name: "naive CLT"}
	clz := coverage{name: "clustered SE, z"}
	clt := coverage{name: "clustered SE, t(G-1)"}
	xs := make([]float64, clusters*size)
	ids := make([]int, len(xs))
	z := NormalQuantile((1 + coverageLevel) / 2)
	tq := TQuantile((1+coverageLevel)/2, clusters-1)
	for range runs {
		for g := range clusters {
			u := sdC * r.NormFloat64()
			for j := range size {
				i := g*size + j
				xs[i] = mu + u + sdE*r.NormFloat64()
				ids[i] = g
			}
		}
		m, _, lo, hi := CLT(xs, coverageLevel)
		naive.add(lo, hi, mu)
		se, groups := ClusteredSE(xs, ids)
		if groups != clusters {
			t.Fatalf("ClusteredSE found %d clusters, want %d", groups, clusters)
		}
		clz.add(m-z*se, m+z*se, mu)
		clt.add(m-tq*se, m+tq*se, mu)
	}
	t.Logf("%s: %.2f%% of %d", naive.name, naive.pct(), naive.of)
	if naive.pct() >= 90 {
		t.Errorf("naive CLT covers %.2f%% under strong clustering; want < 90%% (the clustered SE would be unnecessary)", naive.pct())
	}
	clt.expectNominal(t, 1)
	clz.expectNominal(t, 1.5)
}
