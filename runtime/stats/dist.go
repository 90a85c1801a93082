package stats

import "math"

// lnSqrt2Pi is log(√(2π)).
const lnSqrt2Pi = 0.918938533204672741780329736406

// NormalCDF returns Φ(x), the standard normal distribution function. It is
// computed from erfc, so the lower tail keeps full relative precision far
// out (Φ(−37) ≈ 5.7e−300).
func NormalCDF(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// Coefficients of Wichura's algorithm AS 241 (PPND16), in the scaling of
// the Go math package's Erfinv (which is built on the same approximation):
// relative accuracy about 1e−16.
var (
	ppndA = [8]float64{1.1975323115670912564578e0, 4.7072688112383978012285e1, 6.9706266534389598238465e2, 4.8548868893843886794648e3, 1.6235862515167575384252e4, 2.3782041382114385731252e4, 1.1819493347062294404278e4, 8.8709406962545514830200e2}
	ppndB = [8]float64{1.0000000000000000000e0, 4.2313330701600911252e1, 6.8718700749205790830e2, 5.3941960214247511077e3, 2.1213794301586595867e4, 3.9307895800092710610e4, 2.8729085735721942674e4, 5.2264952788528545610e3}
	ppndC = [8]float64{1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0, 3.64784832476320460504e0, 1.27045825245236838258e0, 2.41780725177450611770e-1, 2.27238449892691845833e-2, 7.74545014278341407640e-4}
	ppndD = [8]float64{1.4142135623730950488016887e0, 2.9036514445419946173133295e0, 2.3707661626024532365971225e0, 9.7547832001787427186894837e-1, 2.0945065210512749128288442e-1, 2.1494160384252876777097297e-2, 7.7441459065157709165577218e-4, 1.4859850019840355905497876e-9}
	ppndE = [8]float64{6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0, 2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3, 2.71155556874348757815e-5, 2.01033439929228813265e-7}
	ppndF = [8]float64{1.414213562373095048801689e0, 8.482908416595164588112026e-1, 1.936480946950659106176712e-1, 2.103693768272068968719679e-2, 1.112800997078859844711555e-3, 2.611088405080593625138020e-5, 2.010321207683943062279931e-7, 2.891024605872965461538222e-15}
)

// poly evaluates c[0] + c[1]·x + … + c[7]·x⁷ by Horner's rule.
func poly(c *[8]float64, x float64) float64 {
	s := c[7]
	for i := 6; i >= 0; i-- {
		s = s*x + c[i]
	}
	return s
}

// NormalQuantile returns Φ⁻¹(p), the standard normal quantile, with
// relative accuracy about 1e−16 (AS 241). Unlike √2·math.Erfinv(2p−1) it
// keeps full precision in both tails, because it works from min(p, 1−p)
// instead of forming 2p−1. NormalQuantile(0) = −Inf, NormalQuantile(1) =
// +Inf, and p outside [0, 1] or NaN gives NaN.
func NormalQuantile(p float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	}
	q := p - 0.5
	if math.Abs(q) <= 0.425 {
		// Central region: Φ⁻¹(p) = √2·erfinv(2q).
		x := 2 * q
		r := 0.180625 - 0.25*x*x
		return math.Sqrt2 * x * poly(&ppndA, r) / poly(&ppndB, r)
	}
	tail := p
	if q > 0 {
		tail = 1 - p // exact here (Sterbenz)
	}
	// Tail region: r = √(−log tail), the same variable as Erfinv's
	// √(ln 2 − log(1 − x)) with 1 − x = 2·tail.
	r := math.Sqrt(-math.Log(tail))
	var z float64
	if r <= 5 {
		r -= 1.6
		z = poly(&ppndC, r) / poly(&ppndD, r)
	} else {
		r -= 5
		z = poly(&ppndE, r) / poly(&ppndF, r)
	}
	z *= math.Sqrt2
	if q < 0 {
		return -z
	}
	return z
}

// hillDF is the number of degrees of freedom from which TCDF and
// TQuantile use Hill's normal expansion instead of the incomplete beta
// function. The continued fraction for I_x(df/2, ½) loses about df·ε of
// relative precision to cancellation (x is within s²/df of 1), while the
// expansion's error falls as df⁻⁴; at 2·10⁴ both are below 1e−12 for tails
// down to about 1e−50.
const hillDF = 2e4

// TCDF returns the distribution function of Student's t with df degrees
// of freedom (df > 0, not necessarily an integer) at x; df = +Inf gives
// NormalCDF. Both tails keep relative precision: the smaller tail is
// computed directly as ½·I_{df/(df+x²)}(df/2, ½), or for df ≥ 2·10⁴ by
// Hill's expansion. df ≤ 0 or NaN arguments give NaN.
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
	if s > 1e10*math.Sqrt(df) {
		// x = df/(df+s²) < 1e−20 (or s² overflows): the series
		// I_x(a, ½) = x^a/(a·B(a, ½))·(1 + O(x)) is exact in double
		// precision, and log x is formed without overflow.
		lx := math.Log(df) - 2*math.Log(s)
		return 0.5 * math.Exp(a*lx-lbeta(a, 0.5)) / a
	}
	s2 := s * s
	// x and y = 1 − x are both formed from their own ratio so that neither
	// loses precision to the subtraction.
	x := df / (df + s2)
	y := s2 / (df + s2)
	ix, _ := regIncBeta(a, 0.5, x, y)
	return 0.5 * ix
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
// Γ((df+1)/2) / (√(dfπ) Γ(df/2)), through lbeta so that it stays accurate
// for large df.
func tLogDensityConst(df float64) float64 {
	// Γ((df+1)/2)/Γ(df/2) = Γ(½)/B(df/2, ½) and Γ(½) = √π.
	return -lbeta(df/2, 0.5) - 0.5*math.Log(df)
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

// lbeta returns log B(a, b) for a, b > 0 without the cancellation of
// lgamma(a) + lgamma(b) − lgamma(a+b) for large arguments (R's lbeta).
func lbeta(a, b float64) float64 {
	p, q := math.Min(a, b), math.Max(a, b)
	switch {
	case p >= 10:
		corr := stirlingCorr(p) + stirlingCorr(q) - stirlingCorr(p+q)
		return -0.5*math.Log(q) + lnSqrt2Pi + corr + (p-0.5)*math.Log(p/(p+q)) + q*math.Log1p(-p/(p+q))
	case q >= 10:
		corr := stirlingCorr(q) - stirlingCorr(p+q)
		lp, _ := math.Lgamma(p)
		return lp + corr + p - p*math.Log(p+q) + (q-0.5)*math.Log1p(-p/(p+q))
	default:
		lp, _ := math.Lgamma(p)
		lq, _ := math.Lgamma(q)
		lpq, _ := math.Lgamma(p + q)
		return lp + lq - lpq
	}
}

// regIncBeta returns the regularized incomplete beta function I_x(a, b)
// and its complement 1 − I_x(a, b) = I_y(b, a), each with relative
// precision, for a, b > 0 and x in [0, 1] with y = 1 − x supplied by the
// caller (so that whichever of x and y is small is exact). It evaluates the
// continued fraction on the side where it converges quickly and obtains
// the other value by subtraction.
func regIncBeta(a, b, x, y float64) (ix, iy float64) {
	if x <= 0 {
		return 0, 1
	}
	if y <= 0 {
		return 1, 0
	}
	if x > (a+1)/(a+b+2) {
		iy, ix = regIncBeta(b, a, y, x)
		return ix, iy
	}
	// log(x) from whichever of x, y is small, so that x near 1 keeps
	// precision through log1p(−y).
	lx, ly := math.Log(x), math.Log1p(-x)
	if x > 0.5 {
		lx, ly = math.Log1p(-y), math.Log(y)
	}
	front := math.Exp(a*lx + b*ly - lbeta(a, b))
	v := front * betaCF(a, b, x) / a
	return v, 1 - v
}

// betaCF evaluates the continued fraction of the incomplete beta function
// by the modified Lentz method (Numerical Recipes §6.4); it converges
// quickly for x < (a+1)/(a+b+2).
func betaCF(a, b, x float64) float64 {
	const (
		tiny  = 1e-300
		eps   = 1e-16
		iters = 100000
	)
	clamp := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c := 1.0
	d := 1 / clamp(1-(a+b)*x/(a+1))
	h := d
	for m := 1; m <= iters; m++ {
		fm := float64(m)
		m2 := 2 * fm
		// Even step.
		aa := fm * (b - fm) * x / ((a - 1 + m2) * (a + m2))
		d = 1 / clamp(1+aa*d)
		c = clamp(1 + aa/c)
		h *= d * c
		// Odd step.
		aa = -(a + fm) * (a + b + fm) * x / ((a + m2) * (a + 1 + m2))
		d = 1 / clamp(1+aa*d)
		c = clamp(1 + aa/c)
		del := d * c
		h *= del
		if math.Abs(del-1) <= eps {
			break
		}
	}
	return h
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
// point form: no large log-gammas are subtracted).
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
	lf := math.Log(2*math.Pi) + math.Log(fk) + math.Log1p(-fk/fn)
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
