package mathans

import (
	"math/cmplx"
	"strings"
)

// relOps are the relation operators after normalisation (<= is \le, \geq
// is \ge, != and \neq are \ne), longest first.
var relOps = []string{"\\le", "\\ge", "\\ne", "<", ">"}

// splitRel splits s at its relation operators outside brackets.
func splitRel(s string) (parts, ops []string) {
	return splitTopFunc(s, func(i int) string { return relAt(s, i) })
}

// relAt returns the relation operator at s[i:], or "".
func relAt(s string, i int) string {
	for _, op := range relOps {
		if strings.HasPrefix(s[i:], op) {
			// \le but not \left, \ne but not \neg.
			if op[0] == '\\' && i+len(op) < len(s) && isLetter(s[i+len(op)]) {
				continue
			}
			return op
		}
	}
	return ""
}

// parseRelation reads an inequality: "x > 3" (kept as a relation, turned
// round so that it reads with < or \le) or a chain "-2 \le x < 7" of one
// unknown between two numbers (the interval it describes). isRel is false
// when s has no relation operator.
func parseRelation(s string, depth int) (a *answer, ok, isRel bool) {
	parts, ops := splitRel(s)
	if len(ops) == 0 {
		return nil, false, false
	}
	var ns []*node
	for _, p := range parts {
		n, ok := parseExpr(strings.TrimSpace(p))
		if !ok {
			return nil, false, true
		}
		ns = append(ns, n)
	}
	switch len(ops) {
	case 1:
		l, op, r := ns[0], ops[0], ns[1]
		switch op {
		case ">":
			l, op, r = r, "<", l
		case "\\ge":
			l, op, r = r, "\\le", l
		}
		return &answer{kind: aRel, rel: op, e: l, rhs: r}, true, true
	case 2:
		up := func(op string) bool { return op == "<" || op == "\\le" }
		down := func(op string) bool { return op == ">" || op == "\\ge" }
		switch {
		case up(ops[0]) && up(ops[1]):
		case down(ops[0]) && down(ops[1]):
			ns[0], ns[2] = ns[2], ns[0]
			ops[0], ops[1] = flip(ops[1]), flip(ops[0])
		default:
			return nil, false, true
		}
		if ns[1].op != opVar || hasVars(ns[0]) || hasVars(ns[2]) {
			return nil, false, true
		}
		return &answer{kind: aBracket, open: bracketOf(ops[0], '(', '['), close: bracketOf(ops[1], ')', ']'),
			elems: []*answer{{kind: aExpr, e: ns[0]}, {kind: aExpr, e: ns[2]}}}, true, true
	}
	return nil, false, true
}

func flip(op string) string {
	switch op {
	case ">":
		return "<"
	case "\\ge":
		return "\\le"
	}
	return op
}

// bracketOf is the interval bracket of a bound: open for <, closed for \le.
func bracketOf(op string, open, closed byte) byte {
	if op == "<" {
		return open
	}
	return closed
}

func hasVars(n *node) bool {
	vs := map[string]bool{}
	vars(n, vs)
	return len(vs) > 0
}

// interval is the solution set of a one-unknown inequality against a
// number: x < 3 is (-\infty, 3), 3 \le x is [3, \infty).
func (a *answer) interval() (*answer, bool) {
	if a.rel == "\\ne" {
		return nil, false
	}
	inf := &node{op: opConst, name: "inf"}
	bound := func(n *node) *answer { return &answer{kind: aExpr, e: n} }
	switch {
	case a.e.op == opVar && !hasVars(a.rhs):
		return &answer{kind: aBracket, open: '(', close: bracketOf(a.rel, ')', ']'),
			elems: []*answer{bound(&node{op: opNeg, a: inf}), bound(a.rhs)}}, true
	case a.rhs.op == opVar && !hasVars(a.e):
		return &answer{kind: aBracket, open: bracketOf(a.rel, '(', '['), close: ')',
			elems: []*answer{bound(a.e), bound(inf)}}, true
	}
	return nil, false
}

// eqRelation compares inequalities: the same kind, and lhs - rhs of one a
// positive multiple of the other's (any non-zero multiple for \ne), so
// -x > -1 is x < 1.
func eqRelation(a, b *answer) bool {
	if a.rel != b.rel {
		return false
	}
	f := &node{op: opSub, a: a.e, b: a.rhs}
	g := &node{op: opSub, a: b.e, b: b.rhs}
	if !hasVars(f) && !hasVars(g) {
		return eqExpr(a.e, b.e) && eqExpr(a.rhs, b.rhs)
	}
	r, ok := ratio(f, g)
	if !ok {
		return false
	}
	return a.rel == "\\ne" || imag(r) == 0 && real(r) > 0
}

// ratio returns the constant f/g when f is a constant multiple of g,
// judged at seeded sample points.
func ratio(f, g *node) (complex128, bool) {
	s := newSampler(f, g)
	var r0 complex128
	valid := 0
	for k := 0; k < samplePoints && valid < wantPoints; k++ {
		env := s.next()
		fa, fb := eval(f, env), eval(g, env)
		if !finite(fa) || !finite(fb) {
			if finite(fa) != finite(fb) {
				return 0, false
			}
			continue
		}
		za, zb := cmplx.Abs(fa) < 1e-9, cmplx.Abs(fb) < 1e-9
		if za || zb {
			if za != zb {
				return 0, false
			}
			continue
		}
		r := fa / fb
		if valid == 0 {
			r0 = r
		} else if !near(r, r0) {
			return 0, false
		}
		valid++
	}
	return r0, valid >= minPoints
}
