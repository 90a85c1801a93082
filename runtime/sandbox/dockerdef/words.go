package dockerdef

import (
	"fmt"
	"strings"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// A word is one value of a Dockerfile instruction (an ENV value, a COPY
// source, a WORKDIR) after Docker's quote removal: literal text and
// references to variables, in order. A reference the converter can
// resolve (an ARG, an ENV of the Dockerfile) is replaced by its value; one
// it cannot (a variable of the base image, PATH say) is left for the
// definition file's shell to expand, where the base image's environment
// is set as it is for a Docker build's RUN.
type word []seg

// seg is literal text, or (name set) a reference ${name}, ${name:-arg} or
// ${name:+arg}.
type seg struct {
	lit  string
	name string
	op   string // "", ":-" or ":+"
	arg  string
}

// literal is w's text when it holds no reference.
func (w word) literal() (string, bool) {
	var b strings.Builder
	for _, s := range w {
		if s.name != "" {
			return "", false
		}
		b.WriteString(s.lit)
	}
	return b.String(), true
}

// shell is w as shell text: literal text single-quoted by the project's
// one quoter, a reference as a double-quoted parameter expansion (its
// modifier's argument is plain text: lexWords refuses one that is not).
func (w word) shell() string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i].name != "" {
			fmt.Fprintf(&b, `"${%s%s%s}"`, w[i].name, w[i].op, w[i].arg)
			continue
		}
		lit := w[i].lit
		for i+1 < len(w) && w[i+1].name == "" {
			i++
			lit += w[i].lit
		}
		b.WriteString(shellquote.Quote(lit))
	}
	if b.Len() == 0 {
		return "''"
	}
	return b.String()
}

// lexWords splits s as Docker's shell lexer does for ENV, ARG, COPY and
// the like: whitespace separates words (when split), single quotes keep
// everything, double quotes keep all but $ and the escapes \" \\ \$, a
// backslash outside quotes escapes the next character, and $NAME, ${NAME},
// ${NAME:-word} and ${NAME:+word} are references.
func lexWords(s string, split bool) ([]word, error) {
	var out []word
	var cur word
	started := false
	lit := func(t string) {
		started = true
		if n := len(cur); n > 0 && cur[n-1].name == "" {
			cur[n-1].lit += t
			return
		}
		cur = append(cur, seg{lit: t})
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case split && (c == ' ' || c == '\t'):
			if started {
				out, cur, started = append(out, cur), nil, false
			}
		case c == '\\' && i+1 < len(s):
			i++
			lit(s[i : i+1])
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			lit(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			j, err := lexDouble(s, i+1, lit, func(r seg) { started = true; cur = append(cur, r) })
			if err != nil {
				return nil, err
			}
			i = j
		case c == '$':
			r, j, err := lexRef(s, i)
			if err != nil {
				return nil, err
			}
			if r.name == "" {
				lit("$")
				continue
			}
			started = true
			cur = append(cur, r)
			i = j
		default:
			lit(s[i : i+1])
		}
	}
	if started || (!split && len(out) == 0) {
		out = append(out, cur)
	}
	return out, nil
}

// lexDouble reads a double-quoted string from s[i:] (just after the
// opening quote) and returns the index of its closing quote.
func lexDouble(s string, i int, lit func(string), ref func(seg)) (int, error) {
	lit("") // "" is a word, if empty
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i, nil
		case c == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`, s[i+1]) >= 0:
			i++
			lit(s[i : i+1])
		case c == '$':
			r, j, err := lexRef(s, i)
			if err != nil {
				return 0, err
			}
			if r.name == "" {
				lit("$")
				continue
			}
			ref(r)
			i = j
		default:
			lit(s[i : i+1])
		}
	}
	return 0, fmt.Errorf("unterminated double quote")
}

// lexRef reads the reference at s[i] ('$') and returns it with the index
// of its last byte; a $ that starts none is a reference without a name.
func lexRef(s string, i int) (seg, int, error) {
	if i+1 < len(s) && s[i+1] == '{' {
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return seg{}, 0, fmt.Errorf("unterminated ${ in %q", s[i:])
		}
		body := s[i+2 : i+end]
		n := nameLen(body)
		r := seg{name: body[:n]}
		rest := body[n:]
		switch {
		case n == 0:
			return seg{}, 0, fmt.Errorf("not supported yet: ${%s}", body)
		case rest == "":
		case strings.HasPrefix(rest, ":-") || strings.HasPrefix(rest, ":+"):
			r.op, r.arg = rest[:2], rest[2:]
			if !plainArg(r.arg) {
				return seg{}, 0, fmt.Errorf("not supported yet: ${%s} (a default of other than letters, digits and _@%%+=:,./-)", body)
			}
		default:
			return seg{}, 0, fmt.Errorf("not supported yet: ${%s} (only ${NAME:-word} and ${NAME:+word} modify a variable)", body)
		}
		return r, i + end, nil
	}
	n := nameLen(s[i+1:])
	if n == 0 {
		return seg{}, i, nil
	}
	return seg{name: s[i+1 : i+1+n]}, i + n, nil
}

// nameLen is the length of the variable name s starts with.
func nameLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return i
	}
	return len(s)
}

// plainArg: a modifier's word that means the same inside the definition
// file's double-quoted ${...} as in the Dockerfile.
func plainArg(s string) bool {
	return shellquote.Quote(s) == s || s == ""
}
