package stats

import (
	"math"
	"math/big"
	"testing"
)

// TestPassKExact checks PassAtK and PassHatK against exact rationals
// (math/big) for every n ≤ 40, and their shape: values in [0, 1], pass@k
// non-decreasing in c and in k, pass^k non-decreasing in c and
// non-increasing in k, and pass@1 = pass^1 = c/n.
func TestPassKExact(t *testing.T) {
	for n := 1; n <= 40; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				cnk := new(big.Int).Binomial(int64(n), int64(k))
				miss := new(big.Rat).SetFrac(new(big.Int).Binomial(int64(n-c), int64(k)), cnk)
				at, _ := new(big.Rat).Sub(big.NewRat(1, 1), miss).Float64()
				hat, _ := new(big.Rat).SetFrac(new(big.Int).Binomial(int64(c), int64(k)), cnk).Float64()
				if got := PassAtK(n, c, k); math.Abs(got-at) > 1e-13 {
					t.Fatalf("PassAtK(%d, %d, %d) = %.17g, exact %.17g", n, c, k, got, at)
				}
				if got := PassHatK(n, c, k); math.Abs(got-hat) > 1e-13*math.Max(hat, 1e-300) && math.Abs(got-hat) > 1e-300 {
					t.Fatalf("PassHatK(%d, %d, %d) = %.17g, exact %.17g", n, c, k, got, hat)
				}
			}
		}
	}
}

func checkPassKShape(t *testing.T, n, c, k int) {
	at, hat := PassAtK(n, c, k), PassHatK(n, c, k)
	if !(at >= 0 && at <= 1) || !(hat >= 0 && hat <= 1) {
		t.Fatalf("n=%d c=%d k=%d: pass@k %v, pass^k %v outside [0, 1]", n, c, k, at, hat)
	}
	if hat > at+1e-13 {
		t.Fatalf("n=%d c=%d k=%d: pass^k %v > pass@k %v", n, c, k, hat, at)
	}
	if c < n {
		if PassAtK(n, c+1, k) < at || PassHatK(n, c+1, k) < hat {
			t.Fatalf("n=%d c=%d k=%d: not monotone in c", n, c, k)
		}
	}
	if k < n {
		if PassAtK(n, c, k+1) < at || PassHatK(n, c, k+1) > hat {
			t.Fatalf("n=%d c=%d k=%d: not monotone in k", n, c, k)
		}
	}
	if k == 1 {
		if want := float64(c) / float64(n); math.Abs(at-want) > 1e-13 || math.Abs(hat-want) > 1e-15 {
			t.Fatalf("n=%d c=%d: pass@1 %v, pass^1 %v, want c/n = %v", n, c, at, hat, want)
		}
	}
}

func TestPassKShape(t *testing.T) {
	for _, n := range []int{1, 2, 7, 64, 200, 1000} {
		for c := 0; c <= n; c += 1 + n/50 {
			for k := 1; k <= n; k += 1 + n/40 {
				checkPassKShape(t, n, c, k)
			}
		}
	}
	mustPanic(t, "k > n", func() { PassAtK(3, 1, 4) })
	mustPanic(t, "k = 0", func() { PassAtK(3, 1, 0) })
	mustPanic(t, "c > n", func() { PassHatK(3, 4, 1) })
	mustPanic(t, "c < 0", func() { PassAtK(3, -1, 1) })
}

func FuzzPassAtK(f *testing.F) {
	f.Add(uint16(200), uint16(13), uint16(10))
	f.Add(uint16(1), uint16(1), uint16(1))
	f.Add(uint16(5000), uint16(4999), uint16(4999))
	f.Fuzz(func(t *testing.T, n, c, k uint16) {
		nn := int(n)%5000 + 1
		cc := int(c) % (nn + 1)
		kk := int(k)%nn + 1
		checkPassKShape(t, nn, cc, kk)
	})
}

func TestDescribeDegenerate(t *testing.T) {
	if Mean(nil) != 0 || Variance(nil) != 0 || Variance([]float64{3}) != 0 {
		t.Error("Mean/Variance of empty or single input")
	}
	if v := Variance([]float64{1, 2, 3, 4}); math.Abs(v-5.0/3) > 1e-15 {
		t.Errorf("Variance = %v", v)
	}
	// Far from zero with a tiny spread, where a one-pass formula fails.
	if v := Variance([]float64{1e9 + 1, 1e9 + 2, 1e9 + 3}); v != 1 {
		t.Errorf("Variance with a large offset = %v, want 1", v)
	}
	for _, f := range []func([]float64, float64) (float64, float64, float64, float64){CLT, TInterval} {
		if m, se, lo, hi := f([]float64{0.4}, 0.95); m != 0.4 || se != 0 || lo != 0.4 || hi != 0.4 {
			t.Errorf("one value: %v %v %v %v", m, se, lo, hi)
		}
		if m, se, lo, hi := f(nil, 0.95); m != 0 || se != 0 || lo != 0 || hi != 0 {
			t.Errorf("no value: %v %v %v %v", m, se, lo, hi)
		}
	}
	mustPanic(t, "level 0", func() { CLT([]float64{1, 2}, 0) })
	mustPanic(t, "level NaN", func() { TInterval([]float64{1, 2}, math.NaN()) })
	if Percentile(nil, 50) != 0 || Percentile([]float64{1, 2}, -5) != 1 || Percentile([]float64{1, 2}, 500) != 2 {
		t.Error("Percentile edge cases")
	}
	// TInterval with two values uses t(1) = 12.706 at 95%.
	_, se, lo, _ := TInterval([]float64{0, 1}, 0.95)
	if want := 0.5 - 12.706204736174707*se; math.Abs(lo-want) > 1e-12 {
		t.Errorf("TInterval lo = %v, want %v", lo, want)
	}
}

func TestClusteredSE(t *testing.T) {
	xs := []float64{1, 0, 1, 1, 0, 0, 1, 0}
	// One cluster: the CLT standard error.
	_, clt, _, _ := CLT(xs, 0.95)
	if se, g := ClusteredSE(xs, make([]int, len(xs))); g != 1 || se != clt {
		t.Errorf("one cluster: %v, %d; want %v, 1", se, g, clt)
	}
	// Singleton clusters: Σe² = (N−1)·s², so SE² = N/(N−1)·(N−1)s²/N² = s²/N.
	ids := []int{5, 3, 9, 1, 7, 2, 8, 4}
	if se, g := ClusteredSE(xs, ids); g != 8 || math.Abs(se-clt) > 1e-15 {
		t.Errorf("singleton clusters: %v, %d; want %v, 8", se, g, clt)
	}
	// Perfectly correlated pairs double the variance of independent items.
	pairs := []float64{1, 1, 0, 0, 1, 1, 0, 0}
	_, clt2, _, _ := CLT(pairs, 0.95)
	se, _ := ClusteredSE(pairs, []int{0, 0, 1, 1, 2, 2, 3, 3})
	// G/(G−1)·Σ(2e)²/N² vs s²/N: 4/3·4·4·¼/64 = 1/3; s² = 8/28·… computed directly:
	want := math.Sqrt(4.0 / 3 * 4 * 1 / 64) // four clusters with e_g = ±1
	if math.Abs(se-want) > 1e-15 || se <= clt2 {
		t.Errorf("paired clusters: %v, want %v (> CLT %v)", se, want, clt2)
	}
	if se, g := ClusteredSE(nil, nil); se != 0 || g != 0 {
		t.Errorf("empty: %v, %d", se, g)
	}
	mustPanic(t, "length mismatch", func() { ClusteredSE(xs, ids[:3]) })
}

// TestTDistribution checks the closed forms (df = 1: Cauchy; df = 2),
// quantile/CDF round trips over a grid of df that crosses the switch to
// Hill's expansion, continuity at the switch, and the limits.
func TestTDistribution(t *testing.T) {
	for _, p := range []float64{1e-15, 1e-6, 0.001, 0.025, 0.3, 0.5, 0.7, 0.975, 0.999999} {
		cauchy := -1 / math.Tan(math.Pi*p)
		if p > 0.5 {
			cauchy = 1 / math.Tan(math.Pi*(1-p))
		}
		if p == 0.5 {
			cauchy = 0
		}
		if got := TQuantile(p, 1); !near(got, cauchy, 1e-12, 1e-300) {
			t.Errorf("TQuantile(%g, 1) = %.17g, Cauchy %.17g", p, got, cauchy)
		}
		two := (2*p - 1) / math.Sqrt(2*p*(1-p))
		if got := TQuantile(p, 2); !near(got, two, 1e-12, 1e-300) {
			t.Errorf("TQuantile(%g, 2) = %.17g, closed form %.17g", p, got, two)
		}
	}
	for _, df := range []float64{0.7, 1, 2.5, 6, 17, 120, 5000, hillDF * 0.999, hillDF, 3e5, 1e9} {
		for _, p := range []float64{1e-200, 1e-10, 0.01, 0.2, 0.45, 0.55, 0.9, 0.99} {
			q := TQuantile(p, df)
			if back := TCDF(q, df); !near(back, p, 1e-11, 0) {
				t.Errorf("TCDF(TQuantile(%g, %g) = %g) = %.17g", p, df, q, back)
			}
			// 1−p is rounded, which moves a tail of size p by up to
			// ε/p relatively; only check where that is negligible.
			if q2 := TQuantile(1-p, df); p >= 1e-3 && !near(q2, -q, 1e-9, 0) {
				t.Errorf("TQuantile not antisymmetric at df %g, p %g: %g vs %g", df, p, q, q2)
			}
		}
	}
	// Across the switch the t quantile moves by about (z³+z)/(4df²) per
	// degree of freedom (≈ 6e−9), far more than the two methods disagree.
	below, at := TQuantile(0.975, hillDF-1), TQuantile(0.975, hillDF)
	if d := below - at; d < 5e-9 || d > 7e-9 {
		t.Errorf("TQuantile jumps at the Hill switch: %.17g → %.17g", below, at)
	}
	if TQuantile(0.975, math.Inf(1)) != NormalQuantile(0.975) || TCDF(1.5, math.Inf(1)) != NormalCDF(1.5) {
		t.Error("df = +Inf is not the normal")
	}
	if !math.IsInf(TQuantile(0, 3), -1) || !math.IsInf(TQuantile(1, 3), 1) || TQuantile(0.5, 3) != 0 {
		t.Error("TQuantile limits")
	}
	for _, bad := range [][2]float64{{-0.1, 3}, {1.1, 3}, {0.5, 0}, {0.5, -1}, {math.NaN(), 3}} {
		if !math.IsNaN(TQuantile(bad[0], bad[1])) {
			t.Errorf("TQuantile(%v, %v) is not NaN", bad[0], bad[1])
		}
	}
	if !math.IsNaN(TCDF(1, 0)) || !math.IsNaN(NormalQuantile(2)) {
		t.Error("domain errors are not NaN")
	}
	if TCDF(math.Inf(1), 4) != 1 || TCDF(math.Inf(-1), 4) != 0 {
		t.Error("TCDF at ±Inf")
	}
}

func TestNormalQuantileRoundTrip(t *testing.T) {
	for _, p := range []float64{1e-300, 1e-30, 1e-8, 0.01, 0.0749, 0.075, 0.3, 0.5, 0.6, 0.924, 0.925, 0.99, 1 - 1e-12} {
		x := NormalQuantile(p)
		back := NormalCDF(x)
		if p > 0.5 {
			// Compare upper tails, where the precision is.
			if !near(NormalCDF(-x), 1-p, 1e-12, 0) {
				t.Errorf("upper tail at p=%g: %.17g vs %.17g", p, NormalCDF(-x), 1-p)
			}
		} else if !near(back, p, 1e-13, 0) {
			t.Errorf("NormalCDF(NormalQuantile(%g)) = %.17g", p, back)
		}
	}
	if !math.IsInf(NormalQuantile(0), -1) || !math.IsInf(NormalQuantile(1), 1) || NormalQuantile(0.5) != 0 {
		t.Error("NormalQuantile limits")
	}
}

func TestHolm(t *testing.T) {
	// Adjusted values are ≥ the raw ones, ≤ 1, ordered like the raw ones,
	// and a single p-value is unchanged.
	ps := []float64{0.04, 0.001, 0.5, 0.04, 0.012, 0.9}
	adj := Holm(ps)
	for i := range ps {
		if adj[i] < ps[i] || adj[i] > 1 {
			t.Errorf("adj[%d] = %v for p = %v", i, adj[i], ps[i])
		}
		for j := range ps {
			if ps[i] < ps[j] && adj[i] > adj[j] {
				t.Errorf("not monotone: p %v→%v, p %v→%v", ps[i], adj[i], ps[j], adj[j])
			}
		}
	}
	// Hand computation: sorted .001 .012 .04 .04 .5 .9 times 6..1 =
	// .006 .06 .16 .12 1.0 .9 → running max .006 .06 .16 .16 1 1.
	want := []float64{0.16, 0.006, 1, 0.16, 0.06, 1}
	for i := range want {
		if math.Abs(adj[i]-want[i]) > 1e-15 {
			t.Errorf("Holm(%v) = %v, want %v", ps, adj, want)
			break
		}
	}
	if got := Holm([]float64{0.03}); got[0] != 0.03 {
		t.Errorf("single: %v", got)
	}
	if got := Holm(nil); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
}

func TestTests(t *testing.T) {
	// 10 regressions vs 0 improvements: 2⁻¹⁰.
	if p := McNemar(10, 0); math.Abs(p-1.0/1024) > 1e-16 {
		t.Errorf("McNemar(10, 0) = %v", p)
	}
	// 0 regressions: P[X ≥ 0] = 1.
	if McNemar(0, 7) != 1 || McNemar(0, 0) != 1 || SignTest(0, 0) != 1 {
		t.Error("McNemar/SignTest with no evidence")
	}
	// 3 of 4: P[X ≥ 3] = 5/16.
	if p := SignTest(3, 1); math.Abs(p-5.0/16) > 1e-16 {
		t.Errorf("SignTest(3, 1) = %v", p)
	}
	mustPanic(t, "negative count", func() { McNemar(-1, 2) })
}

func TestPower(t *testing.T) {
	// Items with no within-item variation: within 0, between = Var(means).
	b, w, ok := Decompose([][]float64{{1, 1}, {0, 0}, {1, 1}, {0, 0}})
	if !ok || w != 0 || math.Abs(b-1.0/3) > 1e-15 {
		t.Errorf("Decompose constant items = %v, %v, %v", b, w, ok)
	}
	// Every item identical in law (p = ½ each, noise only): the item-mean
	// variance is all sampling noise and between clamps to 0.
	b, w, ok = Decompose([][]float64{{1, 0}, {0, 1}, {1, 0}, {0, 1}})
	if !ok || b != 0 || w != 0.5 {
		t.Errorf("Decompose noise-only items = %v, %v, %v", b, w, ok)
	}
	// One repeat each: no within estimate.
	b, w, ok = Decompose([][]float64{{1}, {0}, {1}, {}})
	if ok || w != 0 || math.Abs(b-1.0/3) > 1e-15 {
		t.Errorf("Decompose single repeats = %v, %v, %v", b, w, ok)
	}
	if b, w, ok := Decompose(nil); b != 0 || w != 0 || ok {
		t.Error("Decompose(nil)")
	}
	// Unequal repeats use the harmonic mean: K = 1, 2, 4 → 3/(1+½+¼) = 12/7.
	items := [][]float64{{1}, {1, 0}, {1, 1, 0, 1}}
	b, w, _ = Decompose(items)
	wantW := (Variance(items[1]) + Variance(items[2])) / 2
	wantB := math.Max(0, Variance([]float64{1, 0.5, 0.75})-wantW/(12.0/7))
	if math.Abs(w-wantW) > 1e-15 || math.Abs(b-wantB) > 1e-15 {
		t.Errorf("Decompose unequal = %v, %v; want %v, %v", b, w, wantB, wantW)
	}

	if se := SEFromDecomposition(0.04, 0.2, 100, 4); math.Abs(se-math.Sqrt((0.04+0.05)/100)) > 1e-16 {
		t.Errorf("SEFromDecomposition = %v", se)
	}
	mustPanic(t, "n = 0", func() { SEFromDecomposition(1, 1, 0, 1) })

	for _, c := range []struct {
		b, w, cost float64
		want       int
	}{
		{0.04, 0.16, 1, 2},  // sqrt(4)
		{0.04, 0.16, 9, 6},  // sqrt(36)
		{0.1, 0.1, 0, 1},    // free items: never repeat
		{0.2, 0.05, 1, 1},   // sqrt(0.25) rounds to 0 → 1
		{0, 0.2, 1, 100},    // no between-item variance: the cap
		{1e-9, 0.2, 1, 100}, // beyond the cap
		{0.1, 0, 5, 1},      // no sampling noise
		{0, 0, 5, 1},
	} {
		if got := OptimalRepeats(c.b, c.w, c.cost); got != c.want {
			t.Errorf("OptimalRepeats(%v, %v, %v) = %d, want %d", c.b, c.w, c.cost, got, c.want)
		}
	}

	// Miller's rule of thumb: 2.8·SE at α = 0.05, 80% power.
	if m := MDE(0.01, 0.05, 0.8); math.Abs(m-0.028016) > 1e-5 {
		t.Errorf("MDE = %v", m)
	}
	mustPanic(t, "alpha 0", func() { MDE(1, 0, 0.8) })
}

// TestPassAtKTrials checks Hoeffding's variance against the exact one, a
// sum over the binomial count of correct samples, for every k ≤ n ≤ 20 at
// several success probabilities; by hand at n = 4, k = 2, q = ½ (counts
// 0–4 with probabilities 1, 4, 6, 4, 1 over 16 give pass@2 0, ½, ⅚, 1, 1:
// mean ¾, variance 7/96, so θ(1−θ)/Var = (3/16)/(7/96) = 18/7); and that
// it lies between the disjoint blocks n/k and C(n, k).
func TestPassAtKTrials(t *testing.T) {
	if got := PassAtKTrials(4, 2, 0.75); math.Abs(got-18.0/7) > 1e-12 {
		t.Errorf("PassAtKTrials(4, 2, 0.75) = %v, want 18/7", got)
	}
	for n := 1; n <= 20; n++ {
		for k := 1; k <= n; k++ {
			for _, q := range []float64{0.05, 0.5, 0.9, 0.99} {
				theta := 1 - math.Pow(1-q, float64(k))
				if theta > 1-1e-6 { // the exact sum cancels there
					continue
				}
				v := 0.0
				for c := 0; c <= n; c++ {
					lp := lchoose(n, c) + float64(c)*math.Log(q) + float64(n-c)*math.Log1p(-q)
					d := PassAtK(n, c, k) - theta
					v += math.Exp(lp) * d * d
				}
				want := theta * (1 - theta) / v
				got := PassAtKTrials(n, k, theta)
				if math.Abs(got-want) > 1e-8*want {
					t.Errorf("PassAtKTrials(%d, %d, θ=%v) = %v, exact %v", n, k, theta, got, want)
				}
				cnk := math.Exp(lchoose(n, k))
				if got < float64(n)/float64(k)*(1-1e-12) || got > cnk*(1+1e-12) {
					t.Errorf("PassAtKTrials(%d, %d, θ=%v) = %v, outside [n/k, C(n,k)] = [%v, %v]", n, k, theta, got, float64(n)/float64(k), cnk)
				}
			}
		}
	}
	mustPanic(t, "θ = 1", func() { PassAtKTrials(4, 2, 1) })
}
