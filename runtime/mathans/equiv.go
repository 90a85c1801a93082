package mathans

import (
	"maps"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"strings"
)

// Equivalent reports whether the answer pred equals the gold answer.
func Equivalent(pred, gold string) bool {
	ok, _ := EquivalentWhy(pred, gold)
	return ok
}

// EquivalentWhy is Equivalent with the reason for the verdict:
//
//	"string"    the normalised strings are equal
//	"text"      a side is words; compared as text, case-insensitively
//	"numeric"   numbers, equal or not by value
//	"symbolic"  expressions with variables, compared at sample points
//	"equation", "tuple", "interval", "set", "list", "matrix": by structure
//	"unparsed"  a side is not an answer this package can read, and the
//	            strings differ
//	"empty"     a side normalises to nothing
func EquivalentWhy(pred, gold string) (ok bool, why string) {
	defer func() {
		// The parser is bounded and checked; this is a last line of
		// defence so that scoring a sample never takes the run down.
		if r := recover(); r != nil {
			ok, why = false, "unparsed"
		}
	}()
	return equivalent(pred, gold)
}

// equivalent is EquivalentWhy without the recover.
func equivalent(pred, gold string) (bool, string) {
	pk, gk := normalizeKeepLHS(pred), normalizeKeepLHS(gold)
	p, g := stripAssign(pk), stripAssign(gk)
	switch {
	case p == "" || g == "":
		return false, "empty"
	case p == g:
		return true, "string"
	case isText(p) || isText(g):
		return strings.EqualFold(p, g), "text"
	}
	// Parsed with their left sides: two equations compare as equations.
	pa, ok1 := parseAnswer(pk, 0)
	ga, ok2 := parseAnswer(gk, 0)
	if !ok1 || !ok2 {
		return false, "unparsed"
	}
	return eqAnswer(pa, ga), ga.why()
}

// akind is the shape of an answer.
type akind uint8

const (
	aExpr    akind = iota
	aEq            // e = rhs
	aBracket       // (a, b), [a, b), …: ordered, bracket kinds significant
	aSet           // \{a, b\}: unordered
	aList          // a, b (or a \pm b): unordered
	aUnion         // intervals joined by \cup: unordered
	aMatrix
	aRel // e rel rhs: an inequality, > and \ge turned round to < and \le
)

// answer is a parsed final answer.
type answer struct {
	kind        akind
	rel         string // aRel: "<", "\\le" or "\\ne"
	e, rhs      *node
	open, close byte
	elems       []*answer
	rows        [][]*node
}

func (a *answer) why() string {
	switch a.single().kind {
	case aEq:
		return "equation"
	case aBracket:
		if len(a.elems) == 2 && (a.open == '[' || a.close == ']') {
			return "interval"
		}
		return "tuple"
	case aSet:
		return "set"
	case aList:
		return "list"
	case aUnion:
		return "interval"
	case aMatrix:
		return "matrix"
	case aRel:
		return "inequality"
	}
	vs := map[string]bool{}
	vars(a.single().e, vs)
	if len(vs) > 0 {
		return "symbolic"
	}
	return "numeric"
}

// single unwraps a list of one answer.
func (a *answer) single() *answer {
	for a.kind == aList && len(a.elems) == 1 {
		a = a.elems[0]
	}
	return a
}

// maxElems bounds lists, tuples and matrices.
const maxElems = 256

func parseAnswer(s string, depth int) (*answer, bool) {
	s = strings.TrimSpace(s)
	if s == "" || depth > 8 {
		return nil, false
	}
	if strings.HasPrefix(s, "\\begin{") {
		return parseMatrix(s)
	}
	if s[0] == '{' && matchBrace(s, 0) == len(s)-1 {
		// TeX grouping: {1,3} is the list 1, 3.
		return parseAnswer(s[1:len(s)-1], depth+1)
	}
	if parts := splitTop(s, "\\approx"); len(parts) > 1 {
		// "x = 1/3 \approx 0.33": the exact value before the
		// approximation, else (x \approx 11) the value after it.
		if a, ok := parseAnswer(parts[0], depth+1); ok && !(a.kind == aExpr && a.e.op == opVar) {
			return a, true
		}
		return parseAnswer(parts[len(parts)-1], depth+1)
	}
	if a, ok, isRel := parseRelation(s, depth); isRel {
		return a, ok
	}
	if parts := splitTop(s, "\\cup"); len(parts) > 1 {
		a := &answer{kind: aUnion}
		for _, p := range parts {
			iv, ok := parseAnswer(p, depth+1)
			if !ok || iv.kind != aBracket || len(iv.elems) != 2 {
				return nil, false
			}
			a.elems = append(a.elems, iv)
		}
		return a, true
	}
	if strings.HasPrefix(s, "\\{") && strings.HasSuffix(s, "\\}") && enclosed(s) {
		return parseElems(&answer{kind: aSet}, s[2:len(s)-2], depth)
	}
	if (s[0] == '(' || s[0] == '[') && (s[len(s)-1] == ')' || s[len(s)-1] == ']') && enclosed(s) {
		inner := s[1 : len(s)-1]
		if len(splitTop(inner, ",")) > 1 {
			a := &answer{kind: aBracket, open: s[0], close: s[len(s)-1]}
			for _, p := range splitTop(inner, ",") {
				e, ok := parseAnswer(p, depth+1)
				if !ok {
					return nil, false
				}
				a.elems = append(a.elems, e)
			}
			return a, len(a.elems) <= maxElems
		}
	}
	if len(splitTop(s, ",")) > 1 {
		return parseElems(&answer{kind: aList}, s, depth)
	}
	for _, pm := range []string{"\\pm", "\\mp"} {
		if parts := splitTop(s, pm); len(parts) == 2 {
			return parseElems(&answer{kind: aList},
				parts[0]+"+("+parts[1]+"),"+parts[0]+"-("+parts[1]+")", depth)
		}
	}
	if parts := splitTop(s, "="); len(parts) >= 2 {
		lhs := strings.TrimSpace(parts[0])
		last := parts[len(parts)-1]
		if tupleAssignRe.MatchString(lhs) {
			return parseAnswer(last, depth+1) // (p,q) = (3,2)
		}
		if len(parts) > 2 {
			// "x = 5+5+1 = 11": what the working ends with.
			if !assignRe.MatchString(lhs) {
				return parseAnswer(last, depth+1)
			}
			parts = []string{lhs, last}
		}
		l, ok1 := parseExpr(parts[0])
		r, ok2 := parseExpr(parts[1])
		return &answer{kind: aEq, e: l, rhs: r}, ok1 && ok2
	}
	e, ok := parseExpr(s)
	return &answer{kind: aExpr, e: e}, ok
}

// parseElems fills a (a set or list) with the comma-separated elements of
// s, "x = 3" read as 3 and nested lists (from \pm) flattened.
func parseElems(a *answer, s string, depth int) (*answer, bool) {
	for _, p := range splitTop(s, ",") {
		p = strings.TrimSpace(p)
		if parts := splitTop(p, "="); len(parts) == 2 && assignRe.MatchString(strings.TrimSpace(parts[0])) {
			p = parts[1]
		}
		e, ok := parseAnswer(p, depth+1)
		if !ok {
			return nil, false
		}
		if e.kind == aList {
			a.elems = append(a.elems, e.elems...)
		} else {
			a.elems = append(a.elems, e)
		}
	}
	return a, len(a.elems) > 0 && len(a.elems) <= maxElems
}

// parseMatrix reads \begin{pmatrix} a & b \\ c & d \end{pmatrix} (any
// matrix environment).
func parseMatrix(s string) (*answer, bool) {
	i := strings.IndexByte(s, '}')
	if i < 0 {
		return nil, false
	}
	env := s[len("\\begin{"):i]
	end := "\\end{" + env + "}"
	if !strings.HasSuffix(s, end) || !strings.HasSuffix(env, "matrix") {
		return nil, false
	}
	body := s[i+1 : len(s)-len(end)]
	a := &answer{kind: aMatrix}
	for _, row := range splitTop(body, "\\\\") {
		if strings.TrimSpace(row) == "" {
			continue
		}
		var cells []*node
		for _, c := range splitTop(row, "&") {
			n, ok := parseExpr(strings.TrimSpace(c))
			if !ok {
				return nil, false
			}
			cells = append(cells, n)
		}
		if len(a.rows) > 0 && len(cells) != len(a.rows[0]) {
			return nil, false
		}
		a.rows = append(a.rows, cells)
	}
	return a, len(a.rows) > 0 && len(a.rows)*len(a.rows[0]) <= maxElems
}

// splitTop splits s at the occurrences of sep outside brackets; a control
// word separator must not continue with a letter (\cup, not \cupid).
func splitTop(s, sep string) []string {
	parts, _ := splitTopFunc(s, func(i int) string {
		if strings.HasPrefix(s[i:], sep) && !(isLetter(sep[len(sep)-1]) && i+len(sep) < len(s) && isLetter(s[i+len(sep)])) {
			return sep
		}
		return ""
	})
	return parts
}

// splitTopFunc splits s outside brackets wherever sepAt finds a separator
// (it returns the separator at s[i:], or ""), and returns the separators.
func splitTopFunc(s string, sepAt func(i int) string) (parts, seps []string) {
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		if depth == 0 {
			if sep := sepAt(i); sep != "" {
				parts = append(parts, s[last:i])
				seps = append(seps, sep)
				i += len(sep) - 1
				last = i + 1
				continue
			}
		}
		switch s[i] {
		case '\\':
			if i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '}') {
				i++
				depth += bracketDelta(s[i])
			} else if i+1 < len(s) && s[i+1] == '\\' {
				i++
			}
		default:
			depth += bracketDelta(s[i])
		}
	}
	return append(parts, s[last:]), seps
}

func bracketDelta(c byte) int {
	switch c {
	case '(', '[', '{':
		return 1
	case ')', ']', '}':
		return -1
	}
	return 0
}

// enclosed reports whether the bracket opening s closes at its end (so
// "(a)(b)" is not enclosed); bracket kinds may differ, as in "[a, b)".
func enclosed(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		d := 0
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '{' || s[i] == '}' {
				d = bracketDelta(s[i])
			}
		} else {
			d = bracketDelta(s[i])
		}
		depth += d
		if depth <= 0 {
			return i == len(s)-1
		}
	}
	return false
}

func eqAnswer(a, b *answer) bool {
	a, b = a.single(), b.single()
	unordered := func(x *answer) bool { return x.kind == aSet || x.kind == aList }
	switch {
	case a.kind == aExpr && b.kind == aExpr:
		return eqExpr(a.e, b.e)
	case a.kind == aEq && b.kind == aEq:
		return eqEquation(a, b)
	case a.kind == aEq && b.kind == aExpr:
		return eqAssign(a, b.e)
	case a.kind == aExpr && b.kind == aEq:
		return eqAssign(b, a.e)
	case a.kind == aBracket && b.kind == aBracket:
		if a.open != b.open || a.close != b.close || len(a.elems) != len(b.elems) {
			return false
		}
		for i := range a.elems {
			if !eqAnswer(a.elems[i], b.elems[i]) {
				return false
			}
		}
		return true
	case unordered(a) && unordered(b), a.kind == aUnion && b.kind == aUnion:
		return matchAll(a.elems, b.elems)
	case a.kind == aMatrix && b.kind == aMatrix:
		if len(a.rows) != len(b.rows) || len(a.rows[0]) != len(b.rows[0]) {
			return false
		}
		for i := range a.rows {
			for j := range a.rows[i] {
				if !eqExpr(a.rows[i][j], b.rows[i][j]) {
					return false
				}
			}
		}
		return true
	case a.kind == aRel && b.kind == aRel:
		return eqRelation(a, b)
	case a.kind == aRel && (b.kind == aBracket || b.kind == aUnion):
		iv, ok := a.interval()
		return ok && eqAnswer(iv, b)
	case b.kind == aRel && (a.kind == aBracket || a.kind == aUnion):
		iv, ok := b.interval()
		return ok && eqAnswer(a, iv)
	case a.kind == aMatrix && b.kind == aBracket:
		return eqVector(a, b)
	case a.kind == aBracket && b.kind == aMatrix:
		return eqVector(b, a)
	}
	return false
}

// eqVector compares a row or column vector with a parenthesised tuple.
func eqVector(m, t *answer) bool {
	if t.open != '(' || t.close != ')' {
		return false
	}
	var cells []*node
	switch {
	case len(m.rows) == 1:
		cells = m.rows[0]
	case len(m.rows[0]) == 1:
		for _, r := range m.rows {
			cells = append(cells, r[0])
		}
	default:
		return false
	}
	if len(cells) != len(t.elems) {
		return false
	}
	for i, c := range cells {
		if !eqAnswer(&answer{kind: aExpr, e: c}, t.elems[i]) {
			return false
		}
	}
	return true
}

// matchAll reports whether xs and ys pair up one to one (greedily).
func matchAll(xs, ys []*answer) bool {
	if len(xs) != len(ys) {
		return false
	}
	used := make([]bool, len(ys))
outer:
	for _, x := range xs {
		for j, y := range ys {
			if !used[j] && eqAnswer(x, y) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

// eqAssign compares "v = rhs" (or "lhs = v") with an expression.
func eqAssign(eq *answer, e *node) bool {
	switch {
	case eq.e.op == opVar:
		return eqExpr(eq.rhs, e)
	case eq.rhs.op == opVar:
		return eqExpr(eq.e, e)
	}
	return false
}

// samplePoints is how many points an identity is tested at, of which at
// least minPoints must be defined on both sides.
const (
	samplePoints = 8
	wantPoints   = 5
	minPoints    = 3
)

// sampler assigns the variables of some expressions seeded random values
// in [0.5, 2), away from integers' special cases (0, ±1).
type sampler struct {
	names []string
	rng   *rand.Rand
	env   map[string]complex128
}

func newSampler(ns ...*node) *sampler {
	set := map[string]bool{}
	for _, n := range ns {
		vars(n, set)
	}
	names := slices.Sorted(maps.Keys(set))
	return &sampler{names: names, rng: rand.New(rand.NewPCG(0x6d617468, 0x616e73)), env: make(map[string]complex128, len(names))}
}

func (s *sampler) next() map[string]complex128 {
	for _, n := range s.names {
		s.env[n] = complex(0.5+1.5*s.rng.Float64(), 0)
	}
	return s.env
}

func finite(z complex128) bool { return !cmplx.IsNaN(z) && !cmplx.IsInf(z) }

// eqExpr compares expressions: exact rationals exactly (unless one was
// written as a decimal), numbers within a relative 1e-6, expressions with
// variables at seeded sample points.
func eqExpr(x, y *node) bool {
	s := newSampler(x, y)
	if len(s.names) == 0 {
		rx, okx := exact(x)
		ry, oky := exact(y)
		if okx && oky {
			if rx.Cmp(ry) == 0 {
				return true
			}
			if !hasDec(x) && !hasDec(y) {
				return false
			}
		}
		a, b := eval(x, nil), eval(y, nil)
		if (!finite(a) || !finite(b)) && !(hasInf(x) && hasInf(y)) {
			return false // overflow (2^{10^7}) or no value (1/0)
		}
		return near(a, b)
	}
	valid := 0
	for k := 0; k < samplePoints && valid < wantPoints; k++ {
		env := s.next()
		a, b := eval(x, env), eval(y, env)
		fa, fb := finite(a), finite(b)
		if !fa && !fb {
			continue
		}
		if fa != fb || !near(a, b) {
			return false
		}
		valid++
	}
	return valid >= minPoints
}

// eqEquation compares equations: l1 - r1 and l2 - r2 must be proportional
// (y = 2x + 1 and 2x - y + 1 = 0 are the same line).
func eqEquation(a, b *answer) bool {
	f := &node{op: opSub, a: a.e, b: a.rhs}
	g := &node{op: opSub, a: b.e, b: b.rhs}
	if !hasVars(f) && !hasVars(g) {
		return eqExpr(a.e, b.e) && eqExpr(a.rhs, b.rhs) || eqExpr(a.e, b.rhs) && eqExpr(a.rhs, b.e)
	}
	_, ok := ratio(f, g)
	return ok
}
