package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveMeans is an independent, direct bootstrap: each resample picks
// len(xs) indices with r.IntN.
func naiveMeans(xs []float64, resamples int, r *rand.Rand) []float64 {
	out := make([]float64, resamples)
	for i := range out {
		var s float64
		for range xs {
			s += xs[r.IntN(len(xs))]
		}
		out[i] = s / float64(len(xs))
	}
	return out
}

// refPercentile is the textbook linear-interpolation percentile (numpy's
// "linear"), written independently of Percentile.
func refPercentile(sorted []float64, q float64) float64 {
	h := float64(len(sorted)-1) * q / 100
	i := int(h)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

// TestBootstrapMatchesNaive: with more than 1,024 distinct values Bootstrap
// resamples element by element, and must give exactly what a direct
// implementation with the same seeded stream gives; and on small inputs
// the percentile step applied to the same resample means must agree with
// the textbook formula.
func TestBootstrapMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	xs := make([]float64, 1500)
	for i := range xs {
		xs[i] = r.NormFloat64()
	}
	const seed, resamples = 99, 500
	ref := naiveMeans(xs, resamples, newRand(seed))
	slices.Sort(ref)
	for _, level := range []float64{0.9, 0.95} {
		lo, hi := Bootstrap(xs, resamples, seed, level)
		a := (1 - level) / 2
		wlo, whi := refPercentile(ref, 100*a), refPercentile(ref, 100*(1-a))
		if math.Abs(lo-wlo) > 1e-15 || math.Abs(hi-whi) > 1e-15 {
			t.Errorf("level %g: Bootstrap [%.17g, %.17g], direct [%.17g, %.17g]", level, lo, hi, wlo, whi)
		}
	}
	for _, small := range [][]float64{{0, 1}, {0.2, 0.5, 0.5, 0.9}, {1, 0, 1, 1, 0, 1, 1}} {
		means := naiveMeans(small, 1001, newRand(5))
		slices.Sort(means)
		for _, level := range []float64{0.8, 0.95, 0.99} {
			lo, hi := bootstrapEnds(means, level)
			a := (1 - level) / 2
			if lo != refPercentile(means, 100*a) || hi != refPercentile(means, 100*(1-a)) {
				t.Errorf("%v level %g: ends [%v, %v], textbook [%v, %v]", small, level, lo, hi, refPercentile(means, 100*a), refPercentile(means, 100*(1-a)))
			}
		}
	}
}

// TestBootstrapFastPathExact: for xs = {0.2, 0.5, 0.5, 0.9} the exact
// distribution of a resample mean follows from the 4⁴ index tuples; the
// multinomial fast path and the naive path must both match it (χ² over the
// distinct means).
func TestBootstrapFastPathExact(t *testing.T) {
	xs := []float64{0.2, 0.5, 0.5, 0.9}
	exact := map[float64]float64{}
	for a := range 4 {
		for b := range 4 {
			for c := range 4 {
				for d := range 4 {
					s := xs[a] + xs[b] + xs[c] + xs[d]
					exact[math.Round(s*1e9)/1e9] += 1.0 / 256
				}
			}
		}
	}
	const draws = 200000
	for _, naive := range []bool{false, true} {
		means := bootstrapMeans(xs, draws, newRand(3), naive)
		obs := map[float64]float64{}
		for _, m := range means {
			key := math.Round(m*4*1e9) / 1e9
			if _, ok := exact[key]; !ok {
				t.Fatalf("naive=%v: impossible resample sum %v", naive, key)
			}
			obs[key]++
		}
		var chi2 float64
		for k, p := range exact {
			e := p * draws
			chi2 += (obs[k] - e) * (obs[k] - e) / e
		}
		df := float64(len(exact) - 1)
		// 99.99th percentile of χ² with df ≈ 10 is about 34.
		if chi2 > df+8*math.Sqrt(2*df) {
			t.Errorf("naive=%v: χ² = %.1f on %g df; resample means do not follow the exact law", naive, chi2, df)
		}
	}
}

// TestBootstrapFastVsNaive: binary rewards (n = 2,000) through the
// multinomial fast path and through element-wise resampling give the same
// interval within 0.002 (each end's Monte Carlo error is about 0.0003), and
// so do rewards with five levels (pass@1 over four repeats).
func TestBootstrapFastVsNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	binary := make([]float64, 2000)
	levels := make([]float64, 2000)
	for i := range binary {
		if r.Float64() < 0.7 {
			binary[i] = 1
		}
		levels[i] = float64(r.IntN(5)) / 4
	}
	for _, xs := range [][]float64{binary, levels} {
		fast := bootstrapMeans(xs, DefaultResamples, newRand(1), false)
		naive := bootstrapMeans(xs, DefaultResamples, newRand(2), true)
		slices.Sort(fast)
		slices.Sort(naive)
		flo, fhi := bootstrapEnds(fast, 0.95)
		nlo, nhi := bootstrapEnds(naive, 0.95)
		t.Logf("fast [%.5f, %.5f] naive [%.5f, %.5f]", flo, fhi, nlo, nhi)
		if math.Abs(flo-nlo) > 0.002 || math.Abs(fhi-nhi) > 0.002 {
			t.Errorf("fast [%.5f, %.5f], naive [%.5f, %.5f]: differ by more than 0.002", flo, fhi, nlo, nhi)
		}
		// The spread of the resample means is the standard error s/√n
		// (ddof=0) whichever path drew them.
		m := Mean(xs)
		var ss float64
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		want := math.Sqrt(ss / float64(len(xs)) / float64(len(xs)))
		for name, means := range map[string][]float64{"fast": fast, "naive": naive} {
			if sd := math.Sqrt(Variance(means)); math.Abs(sd/want-1) > 0.04 {
				t.Errorf("%s: s.d. of resample means %.5f, want %.5f", name, sd, want)
			}
		}
	}
	// Fast path with every value distinct up to the limit still agrees.
	if _, _, ok := distinct(levels); !ok {
		t.Fatal("five levels not taken by the fast path")
	}
}

func TestBootstrapDegenerate(t *testing.T) {
	if lo, hi := Bootstrap(nil, 100, 1, 0.95); lo != 0 || hi != 0 {
		t.Errorf("empty: [%v, %v]", lo, hi)
	}
	if lo, hi := Bootstrap([]float64{0.25}, 100, 1, 0.95); lo != 0.25 || hi != 0.25 {
		t.Errorf("one value: [%v, %v]", lo, hi)
	}
	if lo, hi := Bootstrap([]float64{0.5, 0.5, 0.5}, 100, 1, 0.95); lo != 0.5 || hi != 0.5 {
		t.Errorf("constant: [%v, %v]", lo, hi)
	}
	// Same seed, same answer; another seed, another draw.
	xs := []float64{0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0.5}
	a1, b1 := Bootstrap(xs, 1000, 7, 0.95)
	a2, b2 := Bootstrap(xs, 1000, 7, 0.95)
	if a1 != a2 || b1 != b2 {
		t.Error("Bootstrap is not deterministic for a seed")
	}
	mustPanic(t, "resamples 0", func() { Bootstrap(xs, 0, 1, 0.95) })
	mustPanic(t, "level 1", func() { Bootstrap(xs, 10, 1, 1) })
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

// exactSignFlip enumerates all 2ⁿ sign patterns: the exact permutation
// p-value P[Σ sᵢdᵢ ≥ Σ dᵢ] with the same tie tolerance as SignFlip.
func exactSignFlip(d []float64) float64 {
	var obs, abs float64
	for _, x := range d {
		obs += x
		abs += math.Abs(x)
	}
	ge := 0
	for mask := 0; mask < 1<<len(d); mask++ {
		var s float64
		for i, x := range d {
			if mask>>i&1 == 1 {
				s += x
			} else {
				s -= x
			}
		}
		if s >= obs-1e-9*abs {
			ge++
		}
	}
	return float64(ge) / float64(int(1)<<len(d))
}

// TestSignFlipExact compares both sampling paths with the exact
// enumeration over 2¹² sign patterns, for deltas with repeated magnitudes
// (many exact ties, as with reward differences) and with distinct ones.
func TestSignFlipExact(t *testing.T) {
	const resamples = 100000
	for _, d := range [][]float64{
		{0.3, -0.1, 0.5, 0.2, 0, -0.4, 0.3, 0.1, 0.2, -0.2, 0.5, 0.1},
		{1, 1, -1, 1, 0, 1, 1, -1, 1, 1, 0, 1},
		{0.91, -0.37, 1.52, 0.08, -0.66, 0.24, 1.13, -0.05, 0.47, 0.71, -0.29, 0.33},
		{-0.2, -0.1, 0.05, -0.3, 0.1, -0.25, 0, -0.15, 0.2, -0.05, -0.1, 0.1},
	} {
		exact := exactSignFlip(d)
		se := math.Sqrt(exact * (1 - exact) / resamples)
		for _, naive := range []bool{false, true} {
			ge := signFlipCount(d, resamples, newRand(17), naive)
			p := float64(ge+1) / float64(resamples+1)
			if math.Abs(p-exact) > 4*se+2.0/resamples {
				t.Errorf("%v naive=%v: p = %.5f, exact %.5f (MC s.e. %.5f)", d, naive, p, exact, se)
			}
		}
		if p := SignFlip(d, resamples, DefaultSeed); math.Abs(p-exact) > 4*se+2.0/resamples {
			t.Errorf("SignFlip(%v) = %.5f, exact %.5f", d, p, exact)
		}
	}
}

// TestSignFlipFastVsNaive: on 500 reward differences in {−1, −½, 0, ½, 1}
// the per-magnitude binomial path and the per-delta path estimate the same
// p-value.
func TestSignFlipFastVsNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	d := make([]float64, 500)
	for i := range d {
		d[i] = float64(r.IntN(5)-2) / 2
	}
	d[0], d[1], d[2] = 1, 1, 0.5 // a small positive shift
	const resamples = 50000
	fast := float64(signFlipCount(d, resamples, newRand(1), false)) / resamples
	naive := float64(signFlipCount(d, resamples, newRand(2), true)) / resamples
	se := math.Sqrt(fast * (1 - fast) / resamples)
	t.Logf("fast %.4f naive %.4f", fast, naive)
	if math.Abs(fast-naive) > 4*math.Sqrt2*se+1e-4 {
		t.Errorf("fast %.4f, naive %.4f (MC s.e. %.4f each)", fast, naive, se)
	}
}

func TestSignFlipDegenerate(t *testing.T) {
	if p := SignFlip(nil, 100, 1); p != 1 {
		t.Errorf("empty: %v", p)
	}
	if p := SignFlip([]float64{0, 0, 0}, 100, 1); p != 1 {
		t.Errorf("all zero: %v", p)
	}
	// All positive: only the identity pattern reaches the observed sum,
	// which 2⁻²⁰ of flips hit, so p is essentially 1/(resamples+1).
	d := make([]float64, 20)
	for i := range d {
		d[i] = 0.1 * float64(i+1)
	}
	if p := SignFlip(d, 999, 1); p > 2.0/1000 {
		t.Errorf("all positive: p = %v", p)
	}
	// A sum that floating point cannot represent the same way in every
	// order: the observed labelling must count as a tie, not a miss.
	tie := []float64{0.1, 0.2, 0.3, -0.6, 0.7, -0.7}
	if got, want := SignFlip(tie, 100000, 3), exactSignFlip(tie); math.Abs(got-want) > 0.01 {
		t.Errorf("ties: %v, exact %v", got, want)
	}
}

func BenchmarkBootstrapBinary250k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 250000)
	for i := range xs {
		if r.Float64() < 0.73 {
			xs[i] = 1
		}
	}
	b.ResetTimer()
	for b.Loop() {
		Bootstrap(xs, DefaultResamples, DefaultSeed, 0.95)
	}
}

func BenchmarkBootstrapContinuous2k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 2000)
	for i := range xs {
		xs[i] = r.Float64()
	}
	for b.Loop() {
		Bootstrap(xs, DefaultResamples, DefaultSeed, 0.95)
	}
}

func BenchmarkSignFlip(b *testing.B) {
	// 5,000 paired mean-reward differences over four repeats: magnitudes
	// in {0, ¼, ½, ¾, 1}, the fast path.
	r := rand.New(rand.NewPCG(1, 2))
	d := make([]float64, 5000)
	for i := range d {
		d[i] = float64(r.IntN(9)-4) / 4
	}
	for b.Loop() {
		SignFlip(d, DefaultResamples, DefaultSeed)
	}
}

func BenchmarkSignFlipContinuous(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	d := make([]float64, 5000)
	for i := range d {
		d[i] = r.NormFloat64()
	}
	for b.Loop() {
		SignFlip(d, DefaultResamples, DefaultSeed)
	}
}
