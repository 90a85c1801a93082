package harbor

import (
	"errors"
	"fmt"
	"strings"
)

// tmplExpr is a parsed {{ expression }} of an instruction template.
type tmplExpr interface {
	eval(vars map[string]any) (any, error)
}

type (
	litExpr  struct{ s string }
	nameExpr struct{ path []string }
	catExpr  struct{ parts []tmplExpr }
	notExpr  struct{ x tmplExpr }
	// condExpr is `then if cond else els`; els nil is Jinja's undefined.
	condExpr struct{ then, cond, els tmplExpr }
)

func (e litExpr) eval(map[string]any) (any, error) { return e.s, nil }

// eval looks a dotted name up; a missing name or field is undefined (nil),
// which Jinja writes as nothing.
func (e nameExpr) eval(vars map[string]any) (any, error) {
	var v any = vars
	for _, f := range e.path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil
		}
		v = m[f]
	}
	return v, nil
}

func (e catExpr) eval(vars map[string]any) (any, error) {
	var sb strings.Builder
	for _, p := range e.parts {
		v, err := p.eval(vars)
		if err != nil {
			return nil, err
		}
		s, err := tmplText(v)
		if err != nil {
			return nil, err
		}
		sb.WriteString(s)
	}
	return sb.String(), nil
}

func (e notExpr) eval(vars map[string]any) (any, error) {
	v, err := e.x.eval(vars)
	return !truthy(v), err
}

func (e condExpr) eval(vars map[string]any) (any, error) {
	c, err := e.cond.eval(vars)
	switch {
	case err != nil:
		return nil, err
	case truthy(c):
		return e.then.eval(vars)
	case e.els == nil:
		return nil, nil
	}
	return e.els.eval(vars)
}

// tmplParser reads one expression's tokens.
type tmplParser struct {
	toks []string
	pos  int
}

func parseTmplExpr(src string) (tmplExpr, error) {
	toks, err := tmplTokens(src)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, errors.New("an empty expression")
	}
	p := &tmplParser{toks: toks}
	e, err := p.cond()
	if err == nil && p.pos < len(p.toks) {
		err = fmt.Errorf("not supported yet: %q here (nel renders names, 'strings', ~, not, parentheses and x if c else y)", p.toks[p.pos])
	}
	return e, err
}

func (p *tmplParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

// cond: cat [if cat [else cond]]
func (p *tmplParser) cond() (tmplExpr, error) {
	then, err := p.cat()
	if err != nil || p.peek() != "if" {
		return then, err
	}
	p.pos++
	c, err := p.cat()
	if err != nil {
		return nil, err
	}
	e := condExpr{then: then, cond: c}
	if p.peek() == "else" {
		p.pos++
		if e.els, err = p.cond(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// cat: unary (~ unary)*
func (p *tmplParser) cat() (tmplExpr, error) {
	x, err := p.unary()
	if err != nil || p.peek() != "~" {
		return x, err
	}
	c := catExpr{parts: []tmplExpr{x}}
	for p.peek() == "~" {
		p.pos++
		y, err := p.unary()
		if err != nil {
			return nil, err
		}
		c.parts = append(c.parts, y)
	}
	return c, nil
}

// unary: not unary | ( cond ) | 'string' | name(.name)*
func (p *tmplParser) unary() (tmplExpr, error) {
	tok := p.peek()
	p.pos++
	switch {
	case tok == "":
		return nil, errors.New("an expression ends too soon")
	case tok == "not":
		x, err := p.unary()
		return notExpr{x}, err
	case tok == "(":
		x, err := p.cond()
		if err == nil && p.peek() != ")" {
			err = errors.New("( is never closed by )")
		}
		p.pos++
		return x, err
	case tok[0] == '\'' || tok[0] == '"':
		return litExpr{tok[1 : len(tok)-1]}, nil
	case isTmplName(tok) && !tmplKeywords[tok]:
		path := []string{tok}
		for p.peek() == "." && p.pos+1 < len(p.toks) && isTmplName(p.toks[p.pos+1]) {
			path = append(path, p.toks[p.pos+1])
			p.pos += 2
		}
		if path[len(path)-1] == "task_dir" {
			return nil, errors.New("not supported yet: task_dir (the task's folder on the host: a prompt that names it would change with the machine)")
		}
		return nameExpr{path}, nil
	}
	return nil, fmt.Errorf("not supported yet: %q here (nel renders names, 'strings', ~, not, parentheses and x if c else y)", tok)
}

var tmplKeywords = map[string]bool{"if": true, "else": true, "not": true, "and": true, "or": true, "in": true, "is": true}

func isTmplName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// tmplTokens splits an expression into names, string literals (with their
// quotes; escapes are refused) and one-character operators.
func tmplTokens(src string) ([]string, error) {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			j := strings.IndexByte(src[i+1:], c)
			if j < 0 {
				return nil, errors.New("a string is never closed")
			}
			lit := src[i : i+j+2]
			if strings.Contains(lit, `\`) {
				return nil, errors.New(`not supported yet: \ escapes in a string`)
			}
			toks, i = append(toks, lit), i+j+2
		case isTmplName(string(c)):
			j := i + 1
			for j < len(src) && isTmplName(src[i:j+1]) {
				j++
			}
			toks, i = append(toks, src[i:j]), j
		default:
			toks, i = append(toks, string(c)), i+1
		}
	}
	return toks, nil
}
