package mathans

import (
	"math"
	"math/big"
	"math/cmplx"
)

// exact evaluates n as a rational when it is one without approximation:
// numbers, + - * /, integer powers, factorials and square roots of
// rational squares. Sizes are bounded so garbage cannot take long.
func exact(n *node) (*big.Rat, bool) {
	if n == nil {
		return nil, false
	}
	switch n.op {
	case opNum:
		return n.num, true
	case opNeg:
		a, ok := exact(n.a)
		if !ok {
			return nil, false
		}
		return new(big.Rat).Neg(a), true
	case opAdd, opSub, opMul, opDiv:
		a, ok := exact(n.a)
		if !ok {
			return nil, false
		}
		b, ok := exact(n.b)
		if !ok {
			return nil, false
		}
		r := new(big.Rat)
		switch n.op {
		case opAdd:
			r.Add(a, b)
		case opSub:
			r.Sub(a, b)
		case opMul:
			r.Mul(a, b)
		default:
			if b.Sign() == 0 {
				return nil, false
			}
			r.Quo(a, b)
		}
		return r, ratSmall(r)
	case opPow:
		a, ok := exact(n.a)
		if !ok {
			return nil, false
		}
		e, ok := exact(n.b)
		if !ok || !e.IsInt() || !e.Num().IsInt64() {
			return nil, false
		}
		k := e.Num().Int64()
		if k < -256 || k > 256 || (k < 0 && a.Sign() == 0) {
			return nil, false
		}
		if int64(a.Num().BitLen()+a.Denom().BitLen())*abs64(k) > 1<<14 {
			return nil, false
		}
		num := new(big.Int).Exp(a.Num(), big.NewInt(abs64(k)), nil)
		den := new(big.Int).Exp(a.Denom(), big.NewInt(abs64(k)), nil)
		if k < 0 {
			num, den = den, num
		}
		return new(big.Rat).SetFrac(num, den), true
	case opFact:
		a, ok := exact(n.a)
		if !ok || !a.IsInt() || a.Sign() < 0 || a.Num().Cmp(big.NewInt(100)) > 0 {
			return nil, false
		}
		r := new(big.Int).MulRange(1, a.Num().Int64())
		return new(big.Rat).SetInt(r), true
	case opSqrt:
		if n.b != nil {
			return nil, false
		}
		a, ok := exact(n.a)
		if !ok || a.Sign() < 0 {
			return nil, false
		}
		p, q := isqrt(a.Num()), isqrt(a.Denom())
		if p == nil || q == nil {
			return nil, false
		}
		return new(big.Rat).SetFrac(p, q), true
	}
	return nil, false
}

func abs64(k int64) int64 {
	if k < 0 {
		return -k
	}
	return k
}

// ratSmall bounds intermediate rationals (a guard against 10^10^10).
func ratSmall(r *big.Rat) bool { return r.Num().BitLen()+r.Denom().BitLen() < 1<<15 }

// isqrt returns the integer square root of x when x is a perfect square.
func isqrt(x *big.Int) *big.Int {
	r := new(big.Int).Sqrt(x)
	if new(big.Int).Mul(r, r).Cmp(x) != 0 {
		return nil
	}
	return r
}

// hasDec reports whether n has a decimal literal (an approximate answer).
func hasDec(n *node) bool {
	if n == nil {
		return false
	}
	return n.op == opNum && n.dec || hasDec(n.a) || hasDec(n.b)
}

// vars adds n's free variables to set.
func vars(n *node, set map[string]bool) {
	if n == nil {
		return
	}
	if n.op == opVar {
		set[n.name] = true
	}
	vars(n.a, set)
	vars(n.b, set)
}

// eval evaluates n in complex arithmetic with the variables of env; an
// unknown variable is NaN.
func eval(n *node, env map[string]complex128) complex128 {
	if n == nil {
		return cmplx.NaN()
	}
	switch n.op {
	case opNum:
		f, _ := n.num.Float64()
		return complex(f, 0)
	case opVar:
		if v, ok := env[n.name]; ok {
			return v
		}
		return cmplx.NaN()
	case opConst:
		switch n.name {
		case "pi":
			return math.Pi
		case "inf":
			return complex(math.Inf(1), 0)
		case "i":
			return 1i
		}
	case opNeg:
		return -eval(n.a, env)
	case opAdd:
		return eval(n.a, env) + eval(n.b, env)
	case opSub:
		a, b := eval(n.a, env), eval(n.b, env)
		if isInf(a) && isInf(b) {
			return cmplx.NaN()
		}
		return a - b
	case opMul:
		return eval(n.a, env) * eval(n.b, env)
	case opDiv:
		b := eval(n.b, env)
		if b == 0 {
			return cmplx.NaN() // 1/0 is no value (and not 2/0)
		}
		return eval(n.a, env) / b
	case opPow:
		return pow(eval(n.a, env), eval(n.b, env))
	case opFact:
		a := eval(n.a, env)
		if imag(a) != 0 || real(a) < 0 {
			return cmplx.NaN()
		}
		return complex(math.Gamma(real(a)+1), 0)
	case opSqrt:
		a := eval(n.a, env)
		if n.b == nil {
			if imag(a) == 0 && real(a) >= 0 {
				return complex(math.Sqrt(real(a)), 0)
			}
			return cmplx.Sqrt(a)
		}
		k := eval(n.b, env)
		if k == 0 {
			return cmplx.NaN()
		}
		if imag(a) == 0 && imag(k) == 0 && real(a) < 0 && math.Mod(real(k), 2) == 1 {
			return complex(-math.Pow(-real(a), 1/real(k)), 0) // odd root of a negative
		}
		return pow(a, 1/k)
	case opFunc:
		return apply(n.name, eval(n.a, env), n.b, env)
	}
	return cmplx.NaN()
}

func isInf(z complex128) bool { return cmplx.IsInf(z) }

// pow is a^b, in real arithmetic when both are real and the result is.
func pow(a, b complex128) complex128 {
	if imag(a) == 0 && imag(b) == 0 {
		x, y := real(a), real(b)
		if x >= 0 || y == math.Trunc(y) {
			return complex(math.Pow(x, y), 0)
		}
	}
	if a == 0 {
		if real(b) > 0 {
			return 0
		}
		return cmplx.NaN()
	}
	return cmplx.Pow(a, b)
}

func apply(name string, x complex128, base *node, env map[string]complex128) complex128 {
	switch name {
	case "sin":
		return cmplx.Sin(x)
	case "cos":
		return cmplx.Cos(x)
	case "tan":
		return cmplx.Tan(x)
	case "cot":
		return 1 / cmplx.Tan(x)
	case "sec":
		return 1 / cmplx.Cos(x)
	case "csc":
		return 1 / cmplx.Sin(x)
	case "arcsin":
		return cmplx.Asin(x)
	case "arccos":
		return cmplx.Acos(x)
	case "arctan":
		return cmplx.Atan(x)
	case "sinh":
		return cmplx.Sinh(x)
	case "cosh":
		return cmplx.Cosh(x)
	case "tanh":
		return cmplx.Tanh(x)
	case "exp":
		return cmplx.Exp(x)
	case "abs":
		return complex(cmplx.Abs(x), 0)
	case "ln", "log":
		l := cmplx.Log(x)
		if base != nil {
			return l / cmplx.Log(eval(base, env))
		}
		return l
	}
	return cmplx.NaN()
}

// relTol is the relative tolerance of numeric comparisons. It is tighter
// than math-verify's six decimals so that a six-figure rounding of an
// irrational answer (3.14159 for \pi) is not accepted, as the PRM800K
// grader (exact, sympy) does not; float error in evaluation is far smaller.
const relTol = 1e-8

// near reports whether a and b agree: equal (infinities included), or
// within relTol.
func near(a, b complex128) bool {
	if a == b {
		return !cmplx.IsNaN(a)
	}
	if cmplx.IsNaN(a) || cmplx.IsNaN(b) || cmplx.IsInf(a) || cmplx.IsInf(b) {
		return false
	}
	d := cmplx.Abs(a - b)
	return d <= relTol*math.Max(cmplx.Abs(a), cmplx.Abs(b))+1e-12
}

// hasInf reports whether n mentions \infty: only then is an infinite value
// meant rather than an overflow.
func hasInf(n *node) bool {
	if n == nil {
		return false
	}
	return n.op == opConst && n.name == "inf" || hasInf(n.a) || hasInf(n.b)
}
