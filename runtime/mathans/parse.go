package mathans

import (
	"math/big"
	"strings"
)

// op is an expression node's operation.
type op uint8

const (
	opNum op = iota
	opVar
	opConst // name: "pi", "inf", "i"
	opAdd
	opSub
	opMul
	opDiv
	opNeg
	opPow
	opFunc // name applied to a; b is the base of \log_b
	opFact
	opSqrt // a, with index b (nil: square root)
)

// node is an expression tree.
type node struct {
	op   op
	num  *big.Rat // opNum
	dec  bool     // opNum written with a decimal point or exponent
	name string
	a, b *node
}

// maxDepth bounds the parser's recursion on nested input.
const maxDepth = 200

// funcs are the functions \name applies to one argument.
var funcs = map[string]bool{
	"sin": true, "cos": true, "tan": true, "cot": true, "sec": true, "csc": true,
	"arcsin": true, "arccos": true, "arctan": true, "sinh": true, "cosh": true, "tanh": true,
	"ln": true, "log": true, "exp": true,
}

// greek letters are variables (\pi is the constant).
var greek = map[string]bool{
	"alpha": true, "beta": true, "gamma": true, "delta": true, "epsilon": true,
	"varepsilon": true, "zeta": true, "eta": true, "theta": true, "vartheta": true,
	"iota": true, "kappa": true, "lambda": true, "mu": true, "nu": true, "xi": true,
	"rho": true, "sigma": true, "tau": true, "upsilon": true, "phi": true, "varphi": true,
	"chi": true, "psi": true, "omega": true, "Gamma": true, "Delta": true, "Theta": true,
	"Lambda": true, "Xi": true, "Sigma": true, "Phi": true, "Psi": true, "Omega": true,
}

// parser is a recursive-descent parser over one normalised expression.
type parser struct {
	s     string
	i     int
	depth int
	bad   bool
}

// parseExpr parses s as one expression; ok is false unless all of s is one.
func parseExpr(s string) (*node, bool) {
	if s == "" || isText(s) {
		return nil, false
	}
	p := &parser{s: s}
	n := p.expr()
	p.space()
	if p.bad || n == nil || p.i != len(p.s) {
		return nil, false
	}
	return n, true
}

// isText reports whether s has a word: three letters in a row that are not
// a control word. Words are compared as text, never as products.
func isText(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			start := i
			for i < len(s) && isLetter(s[i]) {
				i++
			}
			// \begin{pmatrix}: the environment name is not a word
			if w := s[start:i]; (w == "begin" || w == "end") && i < len(s) && s[i] == '{' {
				if j := strings.IndexByte(s[i:], '}'); j > 0 {
					i += j + 1
				}
			}
			i--
			run = 0
		case isLetter(c):
			run++
			if run >= 3 {
				return true
			}
		case c >= 0x80:
			return true // non-ASCII letters: text
		default:
			run = 0
		}
	}
	return false
}

func (p *parser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *parser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// cmdAt returns the control word at p.i (without the backslash), or "".
func (p *parser) cmdAt() string {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '\\' {
		return ""
	}
	j := p.i + 1
	for j < len(p.s) && isLetter(p.s[j]) {
		j++
	}
	return p.s[p.i+1 : j]
}

func (p *parser) fail() *node {
	p.bad = true
	return nil
}

func (p *parser) enter() bool {
	p.depth++
	if p.depth > maxDepth {
		p.bad = true
	}
	return !p.bad
}

func (p *parser) expr() *node {
	if !p.enter() {
		return nil
	}
	defer func() { p.depth-- }()
	n := p.term()
	for !p.bad {
		switch p.peek() {
		case '+':
			p.i++
			n = &node{op: opAdd, a: n, b: p.term()}
		case '-':
			p.i++
			n = &node{op: opSub, a: n, b: p.term()}
		default:
			return n
		}
	}
	return nil
}

func (p *parser) term() *node {
	n := p.unary()
	for !p.bad {
		c := p.peek()
		switch cmd := p.cmdAt(); {
		case c == '*' || cmd == "cdot" || cmd == "times" || cmd == "ast":
			p.i += 1 + len(cmd)
			n = &node{op: opMul, a: n, b: p.unary()}
		case c == '/' || cmd == "div":
			p.i += 1 + len(cmd)
			n = &node{op: opDiv, a: n, b: p.unary()}
		case p.startsAtom():
			m := p.power()
			if mixed(n, m) {
				n = &node{op: opAdd, a: n, b: m}
			} else {
				n = &node{op: opMul, a: n, b: m}
			}
		default:
			return n
		}
	}
	return nil
}

// mixed reports whether n m is a mixed number: an integer literal followed
// by a \frac of integer literals ("1\frac{4}{5}" is 9/5).
func mixed(n, m *node) bool {
	isInt := func(x *node) bool { return x != nil && x.op == opNum && !x.dec && x.num.IsInt() }
	return isInt(n) && m != nil && m.op == opDiv && m.name == "frac" && isInt(m.a) && isInt(m.b)
}

// startsAtom reports whether an atom starts at p.i (implicit product).
func (p *parser) startsAtom() bool {
	c := p.peek()
	switch {
	case isDigit(c) || c == '.' || isLetter(c) || c == '(' || c == '{' || c == '[':
		return true
	case c == '\\':
		cmd := p.cmdAt()
		return funcs[cmd] || greek[cmd] || cmd == "frac" || cmd == "sqrt" || cmd == "pi" || cmd == "infty"
	}
	return false
}

func (p *parser) unary() *node {
	if !p.enter() {
		return nil
	}
	defer func() { p.depth-- }()
	switch p.peek() {
	case '-':
		p.i++
		return &node{op: opNeg, a: p.unary()}
	case '+':
		p.i++
		return p.unary()
	}
	return p.power()
}

func (p *parser) power() *node {
	n := p.postfix()
	if p.bad {
		return nil
	}
	if p.peek() == '^' {
		p.i++
		e := p.exponent()
		return &node{op: opPow, a: n, b: e}
	}
	return n
}

// exponent reads what follows ^: a braced group, one digit or letter, a
// parenthesised expression, a signed exponent, or a control word atom.
func (p *parser) exponent() *node {
	if !p.enter() {
		return nil
	}
	defer func() { p.depth-- }()
	c := p.peek()
	switch {
	case c == '{' || c == '(':
		return p.atom()
	case c == '-':
		p.i++
		return &node{op: opNeg, a: p.exponent()}
	case isDigit(c):
		p.i++
		return &node{op: opNum, num: new(big.Rat).SetInt64(int64(c - '0'))}
	case isLetter(c) || c == '\\':
		return p.atom()
	}
	return p.fail()
}

func (p *parser) postfix() *node {
	n := p.atom()
	for !p.bad && p.peek() == '!' {
		p.i++
		n = &node{op: opFact, a: n}
	}
	return n
}

// group parses {expr}.
func (p *parser) group() *node {
	if p.peek() != '{' {
		return p.fail()
	}
	return p.atom()
}

func (p *parser) closeWith(c byte) {
	if p.peek() != c {
		p.bad = true
		return
	}
	p.i++
}

func (p *parser) atom() *node {
	if !p.enter() {
		return nil
	}
	defer func() { p.depth-- }()
	c := p.peek()
	switch {
	case c == 0:
		return p.fail()
	case isDigit(c) || c == '.':
		return p.number()
	case c == '(' || c == '{' || c == '[':
		p.i++
		n := p.expr()
		p.closeWith(closer(c))
		return n
	case c == '|':
		p.i++
		n := p.expr()
		p.closeWith('|')
		return &node{op: opFunc, name: "abs", a: n}
	case isLetter(c):
		p.i++
		if c == 'i' && !p.subscriptNext() {
			return &node{op: opConst, name: "i"}
		}
		return &node{op: opVar, name: string(c) + p.subscript()}
	case c == '\\':
		return p.command()
	}
	return p.fail()
}

func (p *parser) subscriptNext() bool { return p.i < len(p.s) && p.s[p.i] == '_' }

// subscript reads "_x" or "_{…}" after a variable, raw.
func (p *parser) subscript() string {
	if !p.subscriptNext() {
		return ""
	}
	start := p.i
	p.i++
	if p.i < len(p.s) && p.s[p.i] == '{' {
		end := matchBrace(p.s, p.i)
		if end < 0 {
			p.bad = true
			return ""
		}
		p.i = end + 1
	} else if p.i < len(p.s) {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *parser) number() *node {
	start := p.i
	digits := 0
	for p.i < len(p.s) && isDigit(p.s[p.i]) {
		p.i++
		digits++
	}
	dec := false
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		dec = true
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
			digits++
		}
	}
	if digits == 0 {
		return p.fail()
	}
	// 1.5e-3: scientific notation when e is followed by a (signed) digit.
	if p.i+1 < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		j := p.i + 1
		if p.s[j] == '-' || p.s[j] == '+' {
			j++
		}
		if j < len(p.s) && isDigit(p.s[j]) {
			k := j
			for j < len(p.s) && isDigit(p.s[j]) {
				j++
			}
			if j-k > 3 {
				return p.fail() // 1e999999 would be a million-digit rational
			}
			p.i = j
			dec = true
		}
	}
	if p.i < len(p.s) && p.s[p.i] == '_' {
		return p.fail() // a base subscript (52_8): text only
	}
	if p.i-start > 400 {
		return p.fail()
	}
	r, ok := new(big.Rat).SetString(p.s[start:p.i])
	if !ok {
		return p.fail()
	}
	return &node{op: opNum, num: r, dec: dec}
}

func (p *parser) command() *node {
	cmd := p.cmdAt()
	if cmd == "" {
		return p.fail()
	}
	p.i += 1 + len(cmd)
	switch {
	case cmd == "frac":
		a := p.group()
		b := p.group()
		return &node{op: opDiv, name: "frac", a: a, b: b}
	case cmd == "sqrt":
		var idx *node
		if p.peek() == '[' {
			p.i++
			idx = p.expr()
			p.closeWith(']')
		}
		return &node{op: opSqrt, a: p.postfix(), b: idx}
	case cmd == "pi":
		return &node{op: opConst, name: "pi"}
	case cmd == "infty":
		return &node{op: opConst, name: "inf"}
	case greek[cmd]:
		return &node{op: opVar, name: "\\" + cmd + p.subscript()}
	case funcs[cmd]:
		var base, pw *node
		if cmd == "log" && p.subscriptNext() {
			p.i++
			base = p.exponent()
		}
		if p.peek() == '^' {
			p.i++
			pw = p.exponent()
		}
		arg := p.power()
		n := &node{op: opFunc, name: cmd, a: arg, b: base}
		if pw != nil {
			n = &node{op: opPow, a: n, b: pw}
		}
		return n
	}
	return p.fail()
}

// closer is the bracket that closes c.
func closer(c byte) byte {
	switch c {
	case '(':
		return ')'
	case '[':
		return ']'
	case '{':
		return '}'
	}
	return c
}
