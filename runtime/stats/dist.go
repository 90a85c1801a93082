package stats

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// lnSqrt2Pi is log(√(2π)).
const lnSqrt2Pi = 0.918938533204672741780329736406

// NormalCDF returns Φ(x), the standard normal distribution function. It is
// computed from erfc, so the lower tail keeps full relative precision far
// out (Φ(−37) ≈ 5.7e−300).
func NormalCDF(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// NormalQuantile returns Φ⁻¹(p), the standard normal quantile: gonum's
// mathext.NormalQuantile (Wichura's AS 241, relative accuracy about
// 1e−16 in both tails). NormalQuantile(0) = −Inf, NormalQuantile(1) =
// +Inf, and p outside [0, 1] or NaN gives NaN (gonum panics there).
func NormalQuantile(p float64) float64 {
	if math.IsNaN(p) || p < 0 || p > 1 {
		return math.NaN()
	}
	return mathext.NormalQuantile(p)
}

// hillDF is the number of degrees of freedom from which TCDF and
// TQuantile use Hill's normal expansion instead of gonum's incomplete beta
// function. I_x(df/2, ½) at x = df/(df+s²) loses about df·ε of relative
// precision: x rounds within s²/df of 1 and is raised to the power df/2,
// and gonum (Cephes incbet) forms B(df/2, ½) from a difference of
// log-gammas near df·log df. At df = 10⁵ that is 8e−11, beyond the 1e−11
// the reference tests hold. Hill's expansion's error falls as df⁻⁴; at
// 2·10⁴ both are below 1e−12 for tails down to about 1e−50. Gonum has no
// large-df form of its own.
const hillDF = 2e4

// TCDF returns the distribution function of Student's t with df degrees
// of freedom (df > 0, not necessarily an integer) at x; df = +Inf gives
// NormalCDF. Both tails keep relative precision: the smaller tail is
// computed directly as ½·I_{df/(df+x²)}(df/2, ½) with gonum's
// mathext.RegIncBeta, or for df ≥ 2·10⁴ by Hill's expansion. df ≤ 0 or NaN
// arguments give NaN.
func TCDF(x, df float64) float64 {
	if math.IsNaN(x) || math.IsNaN(df) || df <= 0 {
		return math.NaN()
	}
	if math.IsInf(df, 1) {
		return NormalCDF(x)
	}
	tail := tTail(math.Abs(x), df)
	if x > 0 {
		return 1 - tail
	}
	return tail
}

// tTail returns P[T > s] for s ≥ 0 (equivalently P[T < −s]).
func tTail(s, df float64) float64 {
	if df >= hillDF {
		return NormalCDF(-hillZ(s, df))
	}
	a := df / 2
	if s > 1e150 {
		// s² overflows, and x = df/(df+s²) with it: the leading term of
		// the series I_x(a, ½) = x^a/(a·B(a, ½))·(1 + O(x)) is exact in
		// double precision, with log x formed without overflow.
		lx := math.Log(df) - 2*math.Log(s)
		return 0.5 * math.Exp(a*lx-mathext.Lbeta(a, 0.5)) / a
	}
	return 0.5 * mathext.RegIncBeta(a, 0.5, df/(df+s*s))
}

// hillZ returns the normal deviate equivalent to t = s with df degrees of
// freedom, P[T > s] ≈ Φ(−z), by Hill's expansion (Hill 1970, ACM
// Algorithm 395): z₀ = √((df−½)·log(1+s²/df)) corrected by
// z₀·(z₀²+3)/(48(df−½)²); the error is O(df⁻⁴).
func hillZ(s, df float64) float64 {
	a := df - 0.5
	z := math.Sqrt(a * math.Log1p(s/df*s))
	return z * (1 + (z*z+3)/(48*a*a))
}

// hillS inverts hillZ: the s ≥ 0 with hillZ(s, df) = z for z ≥ 0.
func hillS(z, df float64) float64 {
	a := df - 0.5
	b := 48 * a * a
	// Solve z₀ + z₀(z₀²+3)/b = z by Newton's method from z₀ = z; the
	// correction is tiny, so two or three steps reach a fixed point.
	z0 := z
	for range 8 {
		f := z0 + z0*(z0*z0+3)/b - z
		next := z0 - f/(1+(3*z0*z0+3)/b)
		if next == z0 {
			break
		}
		z0 = next
	}
	return math.Sqrt(df * math.Expm1(z0*z0/a))
}

// tLogDensityConst returns log of the t density's constant
// Γ((df+1)/2) / (√(dfπ) Γ(df/2)). TQuantile uses it only for Newton steps
// and a bracket, which need no more than a few digits: gonum's Lbeta
// (log-gamma differences) is ample below hillDF.
func tLogDensityConst(df float64) float64 {
	// Γ((df+1)/2)/Γ(df/2) = Γ(½)/B(df/2, ½) and Γ(½) = √π.
	return -mathext.Lbeta(df/2, 0.5) - 0.5*math.Log(df)
}

// TQuantile returns the p-quantile of Student's t with df degrees of
// freedom (df > 0; df = +Inf gives NormalQuantile). p = 0 and 1 give ∓Inf,
// as does a quantile beyond the float64 range (df well below 1); p outside
// [0, 1], df ≤ 0 or NaN give NaN.
//
// For df < 2·10⁴ it solves P[T < −s] = min(p, 1−p) for s by Newton's
// method on the log of the tail as a function of log s, which is nearly
// linear in both the centre and the polynomial tail. The root is bracketed
// by the normal quantile (t tails are heavier than normal ones) and by the
// tail's power-law bound, and a step that leaves the bracket is replaced by
// bisection, so the iteration cannot diverge. For larger df it inverts
// Hill's expansion in closed form.
func TQuantile(p, df float64) float64 {
	switch {
	case math.IsNaN(p) || math.IsNaN(df) || p < 0 || p > 1 || df <= 0:
		return math.NaN()
	case math.IsInf(df, 1):
		return NormalQuantile(p)
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	}
	q, sign := p, -1.0
	if p > 0.5 {
		q, sign = 1-p, 1
	}
	if df >= hillDF {
		return sign * hillS(-NormalQuantile(q), df)
	}
	return sign * tUpperQuantile(q, df)
}

// tUpperQuantile returns s > 0 with P[T > s] = q, 0 < q < 0.5.
func tUpperQuantile(q, df float64) float64 {
	logK := tLogDensityConst(df)
	logQ := math.Log(q)
	// Lower bound: the normal quantile. Upper bound: the density is at
	// most K·(s²/df)^(−(df+1)/2), whose tail integral K·df^((df−1)/2)·s^(−df)
	// overestimates the t tail, so where it equals q, s is too large.
	lo := math.Log(-NormalQuantile(q))
	hi := (logK + (df-1)/2*math.Log(df) - logQ) / df
	if maxU := math.Log(math.MaxFloat64); hi >= maxU {
		if tTail(math.MaxFloat64, df) > q {
			return math.Inf(1)
		}
		hi = maxU
	}
	if hi < lo { // rounding at the very start of the tail
		hi = lo
	}
	// Start from the Cornish–Fisher correction of the normal quantile.
	z := -NormalQuantile(q)
	u := math.Log(z + (z*z*z+z)/(4*df))
	if !(u > lo && u < hi) {
		u = (lo + hi) / 2
	}
	for range 200 {
		s := math.Exp(u)
		tail := tTail(s, df)
		h := math.Log(tail) - logQ
		if h > 0 { // tail too heavy: s too small
			lo = u
		} else {
			hi = u
		}
		if h == 0 {
			return s
		}
		logPDF := logK - (df+1)/2*math.Log1p(s/df*s)
		// d log(tail)/d log(s) = −s·pdf/tail.
		next := u + h*tail/(s*math.Exp(logPDF))
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-u) <= 1e-15*math.Max(1, math.Abs(u)) {
			return math.Exp(next)
		}
		u = next
	}
	return math.Exp(u)
}

// stirlingCorr returns log Γ(x) − ((x−½)·log x − x + log√(2π)), the error
// of Stirling's formula (R's lgammacor; for integer n it equals R's
// stirlerr(n)). It is what remains after the large terms of log Γ cancel
// analytically, so the functions built on it avoid subtracting huge
// log-gammas. Requires x > 0.
func stirlingCorr(x float64) float64 {
	if x < 10 {
		// log Γ(x) is at most about 13 here, so the subtraction loses
		// only a few units in the last place in absolute terms.
		lg, _ := math.Lgamma(x)
		return lg - ((x-0.5)*math.Log(x) - x + lnSqrt2Pi)
	}
	// Asymptotic series B_2k/(2k(2k−1)x^(2k−1)); at x ≥ 10 the first
	// omitted term is below 1e−16.
	x2 := 1 / (x * x)
	return (1.0/12 - x2*(1.0/360-x2*(1.0/1260-x2*(1.0/1680-x2*(1.0/1188-x2*(691.0/360360-x2*(1.0/156))))))) / x
}

// bd0 returns x·log(x/np) + np − x, the deviance term of the binomial
// density, computed by a series when x ≈ np where the direct form cancels
// (Loader 2000, as in R's dbinom).
func bd0(x, np float64) float64 {
	if math.Abs(x-np) < 0.1*(x+np) {
		v := (x - np) / (x + np)
		s := (x - np) * v
		ej := 2 * x * v
		v *= v
		for j := 3.0; j < 1000; j += 2 {
			ej *= v
			s1 := s + ej/j
			if s1 == s {
				return s1
			}
			s = s1
		}
		return s
	}
	return x*math.Log(x/np) + np - x
}

// binomPMF returns P[X = k] for X ~ Binomial(n, p), q = 1 − p, with
// relative accuracy near machine precision for any n (Loader's saddle
// point form: no large log-gammas are subtracted; C. Loader, "Fast and
// Accurate Computation of Binomial Probabilities", 2000). Kept by hand:
// gonum's distuv.Binomial.Prob and its tails through mathext.RegIncBeta
// both subtract log-gammas of size n·log n and lose about n·ε, 2e−10 at
// n = 2·10⁵ against scipy.
func binomPMF(k, n int, p, q float64) float64 {
	switch {
	case k < 0 || k > n:
		return 0
	case p == 0:
		if k == 0 {
			return 1
		}
		return 0
	case q == 0:
		if k == n {
			return 1
		}
		return 0
	}
	fn := float64(n)
	if k == 0 {
		if p < 0.1 {
			return math.Exp(-bd0(fn, fn*q) - fn*p)
		}
		return math.Exp(fn * math.Log(q))
	}
	if k == n {
		if q < 0.1 {
			return math.Exp(-bd0(fn, fn*p) - fn*q)
		}
		return math.Exp(fn * math.Log(p))
	}
	fk := float64(k)
	lc := stirlingCorr(fn) - stirlingCorr(fk) - stirlingCorr(fn-fk) - bd0(fk, fn*p) - bd0(fn-fk, fn*q)
	// log(1 − k/n) as log((n−k)/n): n−k is exact, whereas 1 − k/n
	// cancels for k near n (R's dbinom has log1p(−k/n) there, which loses
	// ε·n/(n−k), 1e−11 at n = 10⁶, k = n−1).
	lf := math.Log(2*math.Pi) + math.Log(fk) + math.Log((fn-fk)/fn)
	return math.Exp(lc - 0.5*lf)
}

// BinomGreater returns P[X ≥ k] for X ~ Binomial(n, p): the one-sided
// exact binomial test p-value, scipy.stats.binomtest(k, n, p,
// alternative="greater"). It sums the density over whichever tail is
// smaller, so small p-values keep their relative precision. k ≤ 0 gives 1
// and k > n gives 0; it requires n ≥ 0 and p in [0, 1] (NaN otherwise).
func BinomGreater(k, n int, p float64) float64 {
	switch {
	case n < 0 || !(p >= 0 && p <= 1):
		return math.NaN()
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p == 0:
		return 0
	case p == 1:
		return 1
	}
	q := 1 - p
	if float64(k) > float64(n)*p {
		return binomTailSum(k, n, p, q, 1)
	}
	return 1 - binomTailSum(k-1, n, p, q, -1)
}

// binomTailSum sums P[X = i] from i = k in direction dir (+1 upwards to n,
// −1 downwards to 0), starting beyond the mode so the terms decrease, and
// stops once they no longer change the sum.
func binomTailSum(k, n int, p, q float64, dir int) float64 {
	term := binomPMF(k, n, p, q)
	sum := term
	r := p / q
	for i := k; ; i += dir {
		if dir > 0 {
			if i >= n {
				break
			}
			term *= float64(n-i) / float64(i+1) * r
		} else {
			if i <= 0 {
				break
			}
			term *= float64(i) / float64(n-i+1) / r
		}
		if term <= sum*1e-17 {
			break
		}
		sum += term
	}
	return sum
}
