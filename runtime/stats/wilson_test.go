package stats

import (
	"math"
	"testing"
)

func TestWilson(t *testing.T) {
	// At p̂ = 1 the interval is [n/(n+c²), 1]: solve (1−p)² = c²p(1−p)/n.
	lo, hi := Wilson(1, 50, 1.96)
	if want := 50 / (50 + 1.96*1.96); !near(lo, want, 1e-14, 0) || hi != 1 {
		t.Errorf("Wilson(1, 50, 1.96) = [%v, %v], want [%v, 1]", lo, hi, want)
	}
	lo, hi = Wilson(0, 50, 1.96)
	if want := 1.96 * 1.96 / (50 + 1.96*1.96); lo != 0 || !near(hi, want, 1e-14, 0) {
		t.Errorf("Wilson(0, 50, 1.96) = [%v, %v], want [0, %v]", lo, hi, want)
	}
	// Both ends solve the score equation (p̂ − p)² = c²·p(1−p)/n.
	for _, c := range []struct{ p, n, crit float64 }{{0.3, 20, 1.96}, {0.98, 100, 2.0}, {0.5, 7.5, 2.36}} {
		lo, hi := Wilson(c.p, c.n, c.crit)
		for _, x := range []float64{lo, hi} {
			lhs, rhs := (c.p-x)*(c.p-x), c.crit*c.crit*x*(1-x)/c.n
			if math.Abs(lhs-rhs) > 1e-12 {
				t.Errorf("Wilson(%v, %v, %v) end %v: (p̂−p)² = %v, c²p(1−p)/n = %v", c.p, c.n, c.crit, x, lhs, rhs)
			}
		}
		if !(lo < c.p && c.p < hi) {
			t.Errorf("Wilson(%v, %v, %v) = [%v, %v] misses p̂", c.p, c.n, c.crit, lo, hi)
		}
	}
	mustPanic(t, "n = 0", func() { Wilson(0.5, 0, 1.96) })
	mustPanic(t, "p̂ > 1", func() { Wilson(1.5, 10, 1.96) })
}

func TestEffectiveN(t *testing.T) {
	// Independent Bernoulli trials: SE² = p̂(1−p̂)/n gives n back.
	if got := EffectiveN(0.3, math.Sqrt(0.21/80), math.Inf(1), 80); !near(got, 80, 1e-12, 0) {
		t.Errorf("EffectiveN = %v, want 80", got)
	}
	// Capped at the trials observed; the items when SE is 0.
	if got := EffectiveN(0.3, 0.001, 500, 100); got != 500 {
		t.Errorf("capped EffectiveN = %v, want 500", got)
	}
	if got := EffectiveN(1, 0, 400, 100); got != 100 {
		t.Errorf("EffectiveN at p̂ = 1 = %v, want 100 items", got)
	}
}

func TestClusterBootstrap(t *testing.T) {
	// 20 equal clusters of 10 items, each cluster all right or all
	// wrong: resampling clusters is resampling 20 values, so the interval
	// is the item bootstrap of the 20 cluster means (to Monte-Carlo
	// error), about √10 times as wide as treating the 200 items as
	// independent (the design effect of clusters of 10 identical items).
	var xs, means []float64
	var cl []int
	for g := range 20 {
		v := float64(g % 2)
		if g%5 == 0 {
			v = 1
		}
		means = append(means, v)
		for range 10 {
			xs = append(xs, v)
			cl = append(cl, g)
		}
	}
	lo, hi := ClusterBootstrap(xs, cl, 4000, 7, 0.95)
	wlo, whi := Bootstrap(means, 4000, 7, 0.95)
	if math.Abs(lo-wlo) > 0.03 || math.Abs(hi-whi) > 0.03 {
		t.Errorf("cluster bootstrap [%v, %v], bootstrap of the cluster means [%v, %v]", lo, hi, wlo, whi)
	}
	ilo, ihi := Bootstrap(xs, 4000, 7, 0.95)
	if (hi - lo) < 2.5*(ihi-ilo) {
		t.Errorf("cluster bootstrap [%v, %v] not much wider than the item bootstrap [%v, %v]", lo, hi, ilo, ihi)
	}
	// One cluster: the item bootstrap.
	one := make([]int, len(xs))
	if a, b := ClusterBootstrap(xs, one, 500, 3, 0.9); a != func() float64 { l, _ := Bootstrap(xs, 500, 3, 0.9); return l }() || b < a {
		t.Errorf("one cluster: [%v, %v]", a, b)
	}
}

// The reference values in TestWilsonCounts and TestWilsonCountsCoverage
// are from testdata/stats/wilson_ends.py, independent of gonum (Python's
// math, a power series of the incomplete beta function solved by
// bisection): Jeffreys' lower bound at one success in n,
// I_q(3/2, n−1/2) = 0.025, and the binomial sums of the coverage.
func TestWilsonCounts(t *testing.T) {
	z := NormalQuantile(0.975)
	// Away from the ends, and two counts from one, it is Wilson's interval
	// with z (Brown, Cai & DasGupta's Poisson bound there is gone).
	for _, c := range [][2]int{{20, 50}, {2, 50}, {48, 50}, {3, 51}} {
		lo, hi := WilsonCounts(c[0], c[1], 0.95)
		wlo, whi := Wilson(float64(c[0])/float64(c[1]), float64(c[1]), z)
		if lo != wlo || hi != whi {
			t.Errorf("WilsonCounts(%d, %d) = [%v, %v], Wilson [%v, %v]", c[0], c[1], lo, hi, wlo, whi)
		}
	}
	// One failure in 50: the upper bound is Jeffreys', 1 − q with
	// I_q(1.5, 49.5) = 0.025; the lower one Wilson's.
	lo, hi := WilsonCounts(49, 50, 0.95)
	if want := 1 - 0.0021664941752936066; !near(hi, want, 1e-12, 0) {
		t.Errorf("WilsonCounts(49, 50) hi = %.17g, want %.17g", hi, want)
	}
	if wlo, _ := Wilson(0.98, 50, z); lo != wlo || !near(lo, 0.8950455641036219, 1e-14, 0) {
		t.Errorf("WilsonCounts(49, 50) lo = %v, Wilson's %v", lo, wlo)
	}
	if lo, _ := WilsonCounts(1, 30, 0.95); !near(lo, 0.0036204643737916256, 1e-11, 0) {
		t.Errorf("WilsonCounts(1, 30) lo = %.17g, want 0.0036204643737916256", lo)
	}
	// All right in 30: the exact one-sided bound, p³⁰ = 0.05; all wrong,
	// its mirror.
	if lo, hi := WilsonCounts(30, 30, 0.95); !near(lo, 0.90496614714469581, 1e-14, 0) || hi != 1 {
		t.Errorf("WilsonCounts(30, 30) = [%v, %v], want [0.904966…, 1]", lo, hi)
	}
	if lo, hi := WilsonCounts(0, 30, 0.95); lo != 0 || !near(hi, 1-0.90496614714469581, 1e-13, 0) {
		t.Errorf("WilsonCounts(0, 30) = [%v, %v]", lo, hi)
	}
	// One trial: [0.05, 1] and [0, 0.95]. Two: one success gets Jeffreys'
	// bounds on both sides, I_q(1.5, 1.5) = 0.025 at q = 0.0608302759.
	if lo, hi := WilsonCounts(1, 1, 0.95); !near(lo, 0.05, 1e-15, 0) || hi != 1 {
		t.Errorf("WilsonCounts(1, 1) = [%v, %v]", lo, hi)
	}
	if lo, hi := WilsonCounts(0, 1, 0.95); lo != 0 || !near(hi, 0.95, 1e-15, 0) {
		t.Errorf("WilsonCounts(0, 1) = [%v, %v]", lo, hi)
	}
	if lo, hi := WilsonCounts(1, 2, 0.95); !near(lo, 0.060830275920097363, 1e-11, 0) || !near(hi, 1-0.060830275920097363, 1e-11, 0) {
		t.Errorf("WilsonCounts(1, 2) = [%v, %v]", lo, hi)
	}
	mustPanic(t, "x > n", func() { WilsonCounts(3, 2, 0.95) })
}

// TestWilsonCountsCoverage checks the interval's coverage, a binomial sum
// over the counts, at a true score and averaged over 400 true scores
// within ±1/n of it (the local mean docs/statistics.md judges a count's
// interval on), against the independent script's sums.
func TestWilsonCountsCoverage(t *testing.T) {
	for _, c := range []struct {
		n                 int
		p, point, average float64
	}{
		{50, 0.98, 0.921572251649, 0.956752392948},
		{30, 0.9, 0.931782053063, 0.947035555175},
		{100, 0.99, 0.920626797748, 0.956345327977},
	} {
		lo, hi := make([]float64, c.n+1), make([]float64, c.n+1)
		for x := range lo {
			lo[x], hi[x] = WilsonCounts(x, c.n, 0.95)
		}
		cover := func(p float64) (s float64) {
			for x := range lo {
				if lo[x] <= p && p <= hi[x] {
					s += binomPMF(x, c.n, p, 1-p)
				}
			}
			return s
		}
		a, b := c.p-1/float64(c.n), math.Min(1, c.p+1/float64(c.n))
		avg := 0.0
		for i := range 400 {
			avg += cover(a+(b-a)*(float64(i)+0.5)/400) / 400
		}
		if got := cover(c.p); !near(got, c.point, 1e-10, 0) || !near(avg, c.average, 1e-10, 0) {
			t.Errorf("n = %d, p = %v: covers %.12f, %.12f on average; want %.12f, %.12f", c.n, c.p, got, avg, c.point, c.average)
		}
	}
}

// The expanded percentile level, by hand: 10 clusters at 95%, z' =
// √(10/9)·t(9) = 1.0540926·2.2621572 = 2.384523, 2Φ(2.384523) − 1 =
// 1 − 2·0.0085503 = 0.982899 (1 − Φ(2.38) = 0.0086563, less
// 0.004523·φ ≈ 0.004523·0.02343); 30 clusters: √(30/29)·2.0452296 =
// 2.080193, 1 − 2·0.018754 = 0.962492. Many units: the level itself.
func TestExpandedLevel(t *testing.T) {
	for _, tc := range []struct {
		level float64
		n     int
		want  float64
		tol   float64
	}{
		{0.95, 10, 0.982899, 2e-6},
		{0.95, 30, 0.962492, 2e-6},
		{0.95, 1, 0.95, 0},
		// 2 clusters: z' = √2·12.706 = 17.97, the resamples' extremes.
		{0.95, 2, 1, 1e-15},
		{0.95, 1_000_000, 0.95, 1e-6},
	} {
		if got := ExpandedLevel(tc.level, tc.n); math.Abs(got-tc.want) > tc.tol {
			t.Errorf("ExpandedLevel(%v, %d) = %v, want %v", tc.level, tc.n, got, tc.want)
		}
	}
}

// TestKornGraubard checks the interval against Clopper–Pearson's by hand:
// with crit = z and integer counts it is Clopper–Pearson's; at 0 of 10
// the upper end solves (1−p)^10 = 0.025, 1 − 0.025^(1/10) = 0.30850, and
// at 10 of 10 the lower end is 0.025^(1/10) = 0.69150; 5 of 10 gives the
// textbook [0.18709, 0.81291]. With crit = t the trials shrink by (z/t)²:
// 0 of 10 at t = 2z is 0 of 2.5, upper end 1 − 0.025^(1/2.5).
func TestKornGraubard(t *testing.T) {
	z := NormalQuantile(0.975)
	for _, c := range []struct {
		phat, n, crit, lo, hi float64
	}{
		{0, 10, z, 0, 1 - math.Pow(0.025, 0.1)},
		{1, 10, z, math.Pow(0.025, 0.1), 1},
		{0.5, 10, z, 0.18709, 0.81291},
		{0, 10, 2 * z, 0, 1 - math.Pow(0.025, 1/2.5)},
	} {
		lo, hi := KornGraubard(c.phat, c.n, c.crit, 0.95)
		if math.Abs(lo-c.lo) > 5e-6 || math.Abs(hi-c.hi) > 5e-6 {
			t.Errorf("KornGraubard(%v, %v, %v) = [%.6f, %.6f], want [%.5f, %.5f]", c.phat, c.n, c.crit, lo, hi, c.lo, c.hi)
		}
	}
}

// Jeffreys' ends are Beta(x+½, n−x+½) quantiles; the expected values are
// bisection on mpmath's regularized incomplete beta (30 digits).
func TestJeffreys(t *testing.T) {
	for _, c := range []struct {
		phat, n, lo, hi float64
	}{
		{0.5, 10, 0.2235286702527052, 1 - 0.2235286702527052}, // Beta(5.5, 5.5)
		{0.9, 30, 0.7565983910150729, 0.9710193809672735},     // Beta(27.5, 3.5)
	} {
		lo, hi := Jeffreys(c.phat, c.n, 0.95)
		if math.Abs(lo-c.lo) > 1e-9 || math.Abs(hi-c.hi) > 1e-9 {
			t.Errorf("Jeffreys(%v, %v) = [%v, %v], want [%v, %v]", c.phat, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := Jeffreys(1, 30, 0.95); hi != 1 || !(lo > 0.9 && lo < 1) {
		t.Errorf("Jeffreys(1, 30) = [%v, %v]", lo, hi)
	}
}

// KornGraubardJeffreys is Jeffreys' interval on n·(z/crit)², at p̂ = 0 or
// 1 Clopper–Pearson's bound on the open side (Brown, Cai & DasGupta's
// modification), and within 2 effective counts of an end (3 above 50)
// Clopper–Pearson's bound away from it where that reaches further. Reference quantiles by
// bisection on a continued fraction of the regularized incomplete beta
// (Python, outside the code).
func TestKornGraubardJeffreys(t *testing.T) {
	z := NormalQuantile(0.975)
	// crit = z: n* = n. 0.025^(1/50) = 0.9288782635358023 (mpmath).
	if lo, hi := KornGraubardJeffreys(1, 50, z, 0.95); hi != 1 || math.Abs(lo-0.9288782635358023) > 1e-12 {
		t.Errorf("all right on 50: [%v, %v]", lo, hi)
	}
	if lo, hi := KornGraubardJeffreys(0, 50, z, 0.95); lo != 0 || math.Abs(hi-(1-0.9288782635358023)) > 1e-12 {
		t.Errorf("all wrong on 50: [%v, %v]", lo, hi)
	}
	// crit = 2z: n* = n/4, so 120 effective trials at t are 30 at z.
	// 0.8 on 30 (6 failures): Jeffreys', Beta(24.5, 6.5)'s 2.5% and 97.5%
	// quantiles.
	lo, hi := KornGraubardJeffreys(0.8, 120, 2*z, 0.95)
	if math.Abs(lo-0.6333868661587767) > 1e-9 || math.Abs(hi-0.9119326244800943) > 1e-9 {
		t.Errorf("0.8 on 120 at 2z: [%v, %v], want Jeffreys on 30", lo, hi)
	}
	// 0.9 on 30: 3 failures, more than 2 from the end (n* ≤ 50): Jeffreys'.
	lo, hi = KornGraubardJeffreys(0.9, 120, 2*z, 0.95)
	if math.Abs(lo-0.7565983910150729) > 1e-9 || math.Abs(hi-0.9710193809672735) > 1e-9 {
		t.Errorf("0.9 on 120 at 2z: [%v, %v], want Jeffreys on 30", lo, hi)
	}
	// 0.95 on 40 (crit = z): 2 failures, so the lower bound is
	// Clopper–Pearson's, Beta(38, 3)'s 2.5% quantile (Jeffreys',
	// 0.849134948765321, sits closer), the upper Jeffreys'.
	lo, hi = KornGraubardJeffreys(0.95, 40, z, 0.95)
	if math.Abs(lo-0.8308031360405828) > 1e-9 || math.Abs(hi-0.9894655149777634) > 1e-9 {
		t.Errorf("0.95 on 40: [%v, %v], want [Clopper–Pearson, Jeffreys]", lo, hi)
	}
}
