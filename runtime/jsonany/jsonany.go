// Package jsonany decodes JSON into an any as encoding/json does with
// UseNumber (objects map[string]any, arrays []any, numbers json.Number),
// without its per-call buffers, for the JSON nel decodes once per record or
// per request: dataset lines and model bodies. What it does not decode
// exactly as encoding/json would (a syntax error, whose message
// encoding/json words; invalid UTF-8, which encoding/json rewrites; deep
// nesting; a top-level scalar) it leaves to the caller's encoding/json.
//
// Why: a json.Decoder allocated about 2 KiB of buffers for a 100-byte line;
// decoding a 10,000-item dataset that way was most of a shard's start-up,
// and decoding each model response the same way a large part of the
// client's CPU per request (issue 23).
//
// It also writes plain values (strings, numbers, bools, and maps and
// slices of them) in the bytes json.Marshal writes, without its
// reflection, for what nel writes once per sample (encode.go).
package jsonany

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode decodes b, which holds one JSON object or array with only
// whitespace around it. ok is false when b is anything else, or holds
// what Decode leaves to encoding/json (see the package comment); v is
// then nil.
func Decode(b []byte) (v any, ok bool) {
	i := skipSpace(b, 0)
	if i == len(b) || (b[i] != '{' && b[i] != '[') {
		return nil, false
	}
	d := decoder{b: b}
	v, i, ok = d.value(i, 0)
	if !ok || skipSpace(b, i) != len(b) {
		return nil, false
	}
	return v, true
}

// maxDepth bounds the recursion; encoding/json takes deeper values.
const maxDepth = 100

type decoder struct{ b []byte }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// value decodes the value at b[i] (no space before it) and returns the
// index after it.
func (d *decoder) value(i, depth int) (any, int, bool) {
	b := d.b
	if i >= len(b) || depth > maxDepth {
		return nil, i, false
	}
	switch c := b[i]; {
	case c == '{':
		return d.object(i+1, depth+1)
	case c == '[':
		return d.array(i+1, depth+1)
	case c == '"':
		s, j, ok := d.str(i + 1)
		return s, j, ok
	case c == '-' || (c >= '0' && c <= '9'):
		j, ok := scanNumber(b, i)
		return json.Number(b[i:j]), j, ok
	}
	for _, lit := range [...]struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(b)-i >= len(lit.text) && string(b[i:i+len(lit.text)]) == lit.text {
			return lit.v, i + len(lit.text), true
		}
	}
	return nil, i, false
}

// object decodes an object's members from b[i] (after its '{'). A key seen
// twice keeps its last value, as with encoding/json.
func (d *decoder) object(i, depth int) (any, int, bool) {
	b := d.b
	m := map[string]any{}
	i = skipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return m, i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, i, false
		}
		k, j, ok := d.str(i + 1)
		if !ok {
			return nil, j, false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, i, false
		}
		v, j, ok := d.value(skipSpace(b, i+1), depth)
		if !ok {
			return nil, j, false
		}
		m[k] = v
		var end bool
		if i, end, ok = d.after(j, '}'); !ok || end {
			return m, i, ok
		}
	}
}

// array decodes an array's elements from b[i] (after its '[').
func (d *decoder) array(i, depth int) (any, int, bool) {
	b := d.b
	a := []any{}
	i = skipSpace(b, i)
	if i < len(b) && b[i] == ']' {
		return a, i + 1, true
	}
	for {
		v, j, ok := d.value(i, depth)
		if !ok {
			return nil, j, false
		}
		a = append(a, v)
		var end bool
		if i, end, ok = d.after(j, ']'); !ok || end {
			return a, i, ok
		}
	}
}

// after reads what follows a member or element at b[i]: the closing byte
// (end: the index after it) or a comma (the index of what comes next).
func (d *decoder) after(i int, closing byte) (next int, end, ok bool) {
	b := d.b
	if i = skipSpace(b, i); i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case closing:
		return i + 1, true, true
	case ',':
		return skipSpace(b, i+1), false, true
	}
	return i, false, false
}

// str decodes a string from b[i] (after its opening quote). It takes the
// escapes; anything encoding/json would rewrite or refuse (invalid UTF-8,
// a control character) is left to it.
func (d *decoder) str(i int) (string, int, bool) {
	b := d.b
	start := i
	ascii := true
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			if !ascii && !utf8.Valid(b[start:i]) {
				return "", i, false
			}
			return string(b[start:i]), i + 1, true
		case c == '\\':
			return d.escaped(start, i)
		case c < ' ':
			return "", i, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", i, false
}

// escaped decodes a string from b[start] whose first escape is at b[i],
// into one allocation the size of its source (an escape is never shorter
// than what it stands for, but for a \u escape of a 4-byte rune's half:
// the builder grows then).
func (d *decoder) escaped(start, i int) (string, int, bool) {
	b := d.b
	end := i
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(b) {
		return "", end, false
	}
	var out strings.Builder
	out.Grow(end - start)
	out.Write(b[start:i])
	for i < end {
		c := b[i]
		switch {
		case c == '\\' && b[i+1] == 'u':
			r, n, ok := unicodeEscape(b[i:end])
			if !ok {
				return "", i, false
			}
			out.WriteRune(r)
			i += n
			continue
		case c == '\\':
			r, ok := simpleEscape(b[i+1])
			if !ok {
				return "", i, false
			}
			out.WriteByte(r)
			i += 2
			continue
		case c < ' ':
			return "", i, false
		}
		out.WriteByte(c)
		i++
	}
	s := out.String()
	if !utf8.ValidString(s) {
		return "", end, false
	}
	return s, end + 1, true
}

// Escape reads the escape at b[0] (a backslash) of a JSON string: the
// rune it stands for, and its length. A \u escape of a surrogate half is
// that half (utf16.IsSurrogate), for the caller to pair or refuse; an
// escape JSON does not have is not ok.
func Escape(b []byte) (r rune, n int, ok bool) {
	if len(b) < 2 || b[0] != '\\' {
		return 0, 0, false
	}
	if b[1] == 'u' {
		r, ok = hex4(b)
		return r, 6, ok
	}
	c, ok := simpleEscape(b[1])
	return rune(c), 2, ok
}

// simpleEscape is the byte that \c stands for, for every escape but \u.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// unicodeEscape decodes the \uXXXX escape at b[0] as encoding/json does: a
// surrogate pair written as two escapes is one rune; a surrogate that is
// not half of a pair is U+FFFD, and an escape after it stays its own.
func unicodeEscape(b []byte) (r rune, n int, ok bool) {
	r, ok = hex4(b)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, true
	}
	if r2, ok := hex4(b[6:]); ok {
		if pair := utf16.DecodeRune(r, r2); pair != unicode.ReplacementChar {
			return pair, 12, true
		}
	}
	return unicode.ReplacementChar, 6, true
}

// hex4 is the rune of the escape \uXXXX at b[0].
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// scanNumber returns the index after the JSON number at b[i] and whether
// it is one: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func scanNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i, _ = digits(i)
	default:
		return i, false
	}
	ok := true
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// Unquote decodes tok, one JSON string token quotes included, as
// encoding/json unquotes it into a string. ok is false where it leaves
// that to encoding/json (invalid UTF-8, which encoding/json rewrites; a
// malformed token).
func Unquote(tok []byte) (s string, ok bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", false
	}
	d := decoder{b: tok}
	s, end, ok := d.str(1)
	return s, ok && end == len(tok)
}
