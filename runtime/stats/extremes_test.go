package stats

import (
	"math"
	"testing"
)

// The expected values in this file come from closed forms and asymptotic
// series that share nothing with the code under test (no incomplete beta
// function, no saddle-point density): Mills' ratio for the normal tail,
// the Cauchy (df = 1) and df = 2 distribution functions, the
// Cornish–Fisher expansion of the t quantile in 1/df (Abramowitz & Stegun
// 26.7.5), and binomial tails that reduce to one or two terms or to the
// central binomial coefficient.

// millsTail returns Φ(−x) for large x from the asymptotic series
// φ(x)/x·(1 − 1/x² + 3/x⁴ − 15/x⁶ + …), summed while its terms shrink.
func millsTail(x float64) float64 {
	logPhi := -x*x/2 - 0.5*math.Log(2*math.Pi)
	sum, term := 1.0, 1.0
	for k := 1; k < 30; k++ {
		next := -term * float64(2*k-1) / (x * x)
		if math.Abs(next) >= math.Abs(term) {
			break
		}
		term = next
		sum += term
	}
	return math.Exp(logPhi) / x * sum
}

func TestNormalExtremeTails(t *testing.T) {
	// x = 37.5 gives Φ(−x) ≈ 4.6e−308; the series' first omitted term is
	// below 1e−30 of the sum there. The tolerance is float64's own limit:
	// erfc(x/√2) turns the rounding of x/√2 into a relative error of
	// x²·ε ≈ 1.5e−13, and exp(−x²/2) does the same for the reference.
	for _, x := range []float64{20, 30, 35, 37, 37.5} {
		want := millsTail(x)
		if got := NormalCDF(-x); !near(got, want, 1e-12, 0) {
			t.Errorf("NormalCDF(−%g) = %.17g, Mills' ratio %.17g", x, got, want)
		}
		// The quantile inverts it: Φ⁻¹ at the tail returns −x.
		if got := NormalQuantile(want); !near(got, -x, 1e-13, 0) {
			t.Errorf("NormalQuantile(%.17g) = %.17g, want −%g", want, got, x)
		}
	}
	for _, p := range []float64{1e-300, 1e-200, 1e-50, 1e-10, 0.01} {
		// The upper quantile at q = 1−p mirrors the lower one at 1−q,
		// which is exact in floating point (p itself is not, once 1−p
		// has rounded).
		q := 1 - p
		if hi, lo := NormalQuantile(q), NormalQuantile(1-q); !near(hi, -lo, 1e-12, 0) {
			t.Errorf("NormalQuantile(%.17g) = %.17g but NormalQuantile(%.17g) = %.17g", q, hi, 1-q, lo)
		}
		if back := NormalCDF(NormalQuantile(p)); !near(back, p, 1e-12, 0) {
			t.Errorf("NormalCDF(NormalQuantile(%g)) = %.17g", p, back)
		}
	}
}

func TestTExtremeTails(t *testing.T) {
	// df = 1 is the Cauchy distribution: P[T < −x] = atan(1/x)/π.
	// 1/x ≥ 1e−300 keeps atan(1/x) = 1/x to full precision.
	for _, x := range []float64{1e3, 1e50, 1e100, 1e149, 1e151, 1e200, 1e299} {
		want := math.Atan(1/x) / math.Pi
		if got := TCDF(-x, 1); !near(got, want, 1e-13, 0) {
			t.Errorf("TCDF(−%g, 1) = %.17g, Cauchy %.17g", x, got, want)
		}
	}
	// df = 2: P[T < −x] = ½(1 − x/√(2+x²)) = 1/(√(2+x²)(√(2+x²)+x)), the
	// second form without cancellation; at x = 1e150 it is 5e−301.
	for _, x := range []float64{10, 1e5, 1e50, 1e140, 1e150} {
		r := math.Hypot(math.Sqrt2, x)
		want := 1 / (r * (r + x))
		if got := TCDF(-x, 2); !near(got, want, 1e-13, 0) {
			t.Errorf("TCDF(−%g, 2) = %.17g, closed form %.17g", x, got, want)
		}
	}
	// The quantile in the same far tails: Cauchy −1/tan(πp) = −1/(πp)
	// for tiny p.
	for _, p := range []float64{1e-300, 1e-200, 1e-100} {
		want := -1 / (math.Pi * p)
		if got := TQuantile(p, 1); !near(got, want, 1e-12, 0) {
			t.Errorf("TQuantile(%g, 1) = %.17g, Cauchy %.17g", p, got, want)
		}
	}
}

// cornishFisherT returns the t quantile with df degrees of freedom as the
// normal quantile z = Φ⁻¹(p) corrected by the first three terms in 1/df
// (Abramowitz & Stegun 26.7.5); the omitted term is O(z⁹/df⁴).
func cornishFisherT(p, df float64) float64 {
	z := NormalQuantile(p)
	z2 := z * z
	g1 := z * (z2 + 1) / 4
	g2 := z * ((5*z2+16)*z2 + 3) / 96
	g3 := z * (((3*z2+19)*z2+17)*z2 - 15) / 384
	return z + g1/df + g2/(df*df) + g3/(df*df*df)
}

func TestTLargeDF(t *testing.T) {
	for _, df := range []float64{1e4, 2e4, 1e5, 1e6} {
		for _, p := range []float64{1e-10, 0.001, 0.025, 0.3, 0.975} {
			want := cornishFisherT(p, df)
			if got := TQuantile(p, df); !near(got, want, 1e-11, 0) {
				t.Errorf("TQuantile(%g, %g) = %.17g, Cornish–Fisher %.17g", p, df, got, want)
			}
		}
	}
	// At df = 10⁶ the expansion is exact to double precision far into
	// the tail (z = −37: the omitted term is about 1e−13 of z), which
	// checks the distribution function where it is ≈ 1e−300: there
	// d log P/dx ≈ 37, so 1e−13 in x is 4e−12 in P.
	for _, p := range []float64{1e-300, 1e-100, 1e-20} {
		x := cornishFisherT(p, 1e6)
		if got := TCDF(x, 1e6); !near(got, p, 1e-9, 0) {
			t.Errorf("TCDF(%.17g, 1e6) = %.17g, want %g", x, got, p)
		}
	}
	// From df = 1 to 10⁶ the 97.5% quantile falls strictly towards the
	// normal one (heavier tails for fewer degrees of freedom), from
	// tan(0.475π) at df = 1.
	if got, want := TQuantile(0.975, 1), math.Tan(0.475*math.Pi); !near(got, want, 1e-12, 0) {
		t.Errorf("TQuantile(0.975, 1) = %.17g, want %.17g", got, want)
	}
	prev := math.Inf(1)
	for _, df := range []float64{1, 1.5, 2, 3, 5, 10, 29, 100, 1e3, 1e4, hillDF - 1, hillDF, 1e5, 1e6} {
		q := TQuantile(0.975, df)
		if !(q < prev && q > NormalQuantile(0.975)) {
			t.Errorf("TQuantile(0.975, %g) = %.17g, not below %.17g and above z", df, q, prev)
		}
		prev = q
	}
}

func TestBinomialExtremeN(t *testing.T) {
	const n = 1_000_000
	// All successes: P[X ≥ n] = pⁿ = exp(n·log p), about 1e−300 here.
	for _, p := range []float64{0.99931, 0.9995, 0.999999} {
		want := math.Exp(n * math.Log(p))
		if got := BinomGreater(n, n, p); !near(got, want, 1e-12, 0) {
			t.Errorf("BinomGreater(n, n, %g) = %.17g, pⁿ %.17g", p, got, want)
		}
		// One failure at most: pⁿ⁻¹·(p + n·q).
		q := 1 - p
		want = math.Exp((n-1)*math.Log(p)) * (p + n*q)
		if got := BinomGreater(n-1, n, p); !near(got, want, 1e-12, 0) {
			t.Errorf("BinomGreater(n−1, n, %g) = %.17g, closed form %.17g", p, got, want)
		}
	}
	// At least one success: 1 − qⁿ = −expm1(n·log1p(−p)) ≈ n·p.
	for _, p := range []float64{1e-306, 1e-100, 1e-9, 1e-6} {
		want := -math.Expm1(n * math.Log1p(-p))
		if got := BinomGreater(1, n, p); !near(got, want, 1e-12, 0) {
			t.Errorf("BinomGreater(1, n, %g) = %.17g, want %.17g", p, got, want)
		}
	}
	// The fair coin at n = 2m: P[X ≥ m] = ½ + ½·C(2m, m)/4^m, and
	// C(2m, m)/4^m = (1 − 1/(8m) + 1/(128m²) + 5/(1024m³))/√(πm) up to
	// O(m⁻⁴); symmetry gives P[X ≥ m+1] = ½ − ½·C(2m, m)/4^m.
	for _, m := range []float64{5e3, 5e4, 5e5} {
		c := (1 - 1/(8*m) + 1/(128*m*m) + 5/(1024*m*m*m)) / math.Sqrt(math.Pi*m)
		k := int(m)
		if got, want := BinomGreater(k, 2*k, 0.5), 0.5+c/2; !near(got, want, 1e-12, 0) {
			t.Errorf("BinomGreater(%d, %d, ½) = %.17g, want %.17g", k, 2*k, got, want)
		}
		if got, want := BinomGreater(k+1, 2*k, 0.5), 0.5-c/2; !near(got, want, 1e-12, 0) {
			t.Errorf("BinomGreater(%d, %d, ½) = %.17g, want %.17g", k+1, 2*k, got, want)
		}
	}
	// Symmetry of the fair coin: P[X ≥ m+d] = P[X ≤ m−d] = 1 − P[X ≥ m−d+1]
	// at n = 2m; d = 2.2 standard deviations keeps both sides away from 0
	// and 1.
	const m, d = n / 2, 1100
	up, down := BinomGreater(m+d, n, 0.5), BinomGreater(m-d+1, n, 0.5)
	if !near(up+down, 1, 1e-12, 0) || !(up > 0.01 && up < 0.02) {
		t.Errorf("fair coin at n = 10⁶: P[X ≥ m+%d] = %.17g, P[X ≥ m−%d+1] = %.17g", d, up, d, down)
	}
}
