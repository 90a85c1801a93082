package stats

import (
	"math"
	"math/rand/v2"
)

// newRand returns the package's seeded generator.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
}

// binomialProb holds what the binomial samplers derive from p alone, so
// that a sequence of draws with one p and varying n (the multinomial's
// later values) computes it once.
type binomialProb struct {
	p    float64 // ≤ ½ after the flip
	flip bool    // count failures: the methods assume p ≤ ½
	logq float64 // log(1−p), for inversion
	lpq  float64 // log(p/(1−p)), for BTRS
}

func newBinomialProb(p float64) binomialProb {
	bp := binomialProb{p: p}
	if p <= 0 || p >= 1 {
		return bp
	}
	if p > 0.5 {
		bp.p, bp.flip = 1-p, true
	}
	bp.logq = math.Log1p(-bp.p)
	bp.lpq = math.Log(bp.p / (1 - bp.p))
	return bp
}

// binomialDist draws exactly from Binomial(n, p). Small means use the
// waiting-time (inversion) method, O(np) uniforms; larger ones Hörmann's
// BTRS transformed rejection (Hörmann 1993, "The generation of binomial
// random variates"), O(1) expected with about 2.3 uniforms per draw. The
// set-up is kept so that repeated draws with the same n and p (one per
// bootstrap resample) do not redo it.
type binomialDist struct {
	binomialProb
	n int
	// BTRS
	btrs                  bool
	a, b, c, vr, alpha, m float64
	h0                    float64 // the terms of log f(k)/f(m) free of k
}

func newBinomial(n int, p float64) binomialDist {
	return newBinomialProb(p).with(n)
}

// with returns the sampler for n trials.
func (bp binomialProb) with(n int) binomialDist {
	d := binomialDist{binomialProb: bp, n: n}
	fn := float64(n)
	if n <= 0 || d.p <= 0 || d.p >= 1 || fn*d.p < 10 {
		return d
	}
	d.btrs = true
	spq := math.Sqrt(fn * d.p * (1 - d.p))
	d.b = 1.15 + 2.53*spq
	d.a = -0.0873 + 0.0248*d.b + 0.01*d.p
	d.c = fn*d.p + 0.5
	d.vr = 0.92 - 4.2/d.b
	d.alpha = (2.83 + 5.1/d.b) * spq
	m := math.Floor((fn + 1) * d.p)
	d.m = m
	d.h0 = (m+0.5)*(math.Log((m+1)/(fn-m+1))-d.lpq) + (fn+1)*math.Log(fn-m+1) +
		stirlingCorrInt(m+1) + stirlingCorrInt(fn-m+1)
	return d
}

// binomial draws one variate from Binomial(n, p).
func binomial(r *rand.Rand, n int, p float64) int {
	d := newBinomial(n, p)
	return d.draw(r)
}

func (d *binomialDist) draw(r *rand.Rand) int {
	switch {
	case d.n <= 0 || d.p <= 0:
		if d.flip { // p was 1
			return d.n
		}
		return 0
	case d.p >= 1:
		return d.n
	}
	var k int
	if d.btrs {
		k = d.drawBTRS(r)
	} else {
		k = d.drawInversion(r)
	}
	if d.flip {
		return d.n - k
	}
	return k
}

// drawInversion counts the successes among n trials by summing geometric
// waiting times (the trial index of the next success) until they pass n.
// Exact for any n and p; expected np+1 iterations.
func (d *binomialDist) drawInversion(r *rand.Rand) int {
	var trials float64 // float: waits can be astronomically long for tiny p
	x := 0
	for {
		u := 1 - r.Float64() // (0, 1]
		// P[wait > g] = (1−p)^g; ceil(log u / log(1−p)) ≥ 1 has exactly
		// that law (u = 1, probability 2⁻⁵³, maps to the minimum, 1).
		wait := math.Max(1, math.Ceil(math.Log(u)/d.logq))
		trials += wait
		if trials > float64(d.n) {
			return x
		}
		x++
	}
}

// drawBTRS is Hörmann's BTRS algorithm for np ≥ 10 and p ≤ ½: a
// transformed-rejection hat with a squeeze that accepts about 86% of
// proposals without evaluating the density, and an exact log-density-ratio
// test (through Stirling corrections) for the rest.
func (d *binomialDist) drawBTRS(r *rand.Rand) int {
	fn := float64(d.n)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*d.a/us+d.b)*u + d.c)
		if k < 0 || k > fn {
			continue
		}
		if us >= 0.07 && v <= d.vr {
			return int(k)
		}
		v = math.Log(v * d.alpha / (d.a/(us*us) + d.b))
		// log f(k)/f(m) for the binomial density f, with log j! written
		// as (j+½)·log(j+1) − (j+1) + log√(2π) + stirlingCorr(j+1)
		// (Hörmann's step 3.2); h0 holds the terms free of k.
		lnk := math.Log(fn - k + 1)
		h := d.h0 - (fn+1)*lnk + (k+0.5)*(d.lpq+lnk-math.Log(k+1)) -
			stirlingCorrInt(k+1) - stirlingCorrInt(fn-k+1)
		if v <= h {
			return int(k)
		}
	}
}

// stirlingSmall[j] is stirlingCorr(j) for j = 1…15, which the BTRS
// rejection step needs often and stirlingCorr computes slowly there
// (through Lgamma). Read-only.
var stirlingSmall = func() (t [16]float64) {
	for j := 1; j < len(t); j++ {
		t[j] = stirlingCorr(float64(j))
	}
	return t
}()

// stirlingCorrInt is stirlingCorr for a positive integer-valued x.
func stirlingCorrInt(x float64) float64 {
	if x < float64(len(stirlingSmall)) {
		return stirlingSmall[int(x)]
	}
	return stirlingCorr(x)
}
