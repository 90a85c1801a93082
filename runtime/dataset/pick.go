package dataset

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/jsonany"
)

// pickDepth is the deepest nesting pick follows; deeper records are
// decoded whole (encoding/json allows 10,000 levels).
const pickDepth = 512

// pick reads the top-level fields names of b, one JSON object, as strings
// into out (len(names)), and says whether it could: b must be an object
// encoding/json accepts, every name a key of it holding a string, no key
// repeated or escaped, no escape in those strings that is a surrogate
// half, no invalid UTF-8 in them. When it cannot, the record is decoded
// whole, and decodeObject words what is wrong with it. It never accepts
// what encoding/json refuses (TestPickMatchesDecode, FuzzPick): a record
// pick accepts is a valid record.
func pick(b []byte, names []string, out []string) bool {
	s := picker{b: b}
	s.ws()
	if !s.eat('{') {
		return false
	}
	found := 0
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			key, ok := s.key()
			if !ok {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			if k := indexOf(names, key); k >= 0 {
				if out[k], ok = s.str(); !ok || found&(1<<k) != 0 {
					return false
				}
				found |= 1 << k
			} else if !s.value(0) {
				return false
			}
			s.ws()
			if s.eat('}') {
				break
			}
			if !s.eat(',') {
				return false
			}
		}
	}
	s.ws()
	return s.i == len(b) && found == 1<<len(names)-1
}

func indexOf(names []string, key []byte) int {
	for i, n := range names {
		if n == string(key) {
			return i
		}
	}
	return -1
}

// picker walks a JSON text: each method reads one thing at i and says
// whether it was there and valid.
type picker struct {
	b []byte
	i int
}

func (s *picker) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *picker) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// key reads an object key without escapes.
func (s *picker) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value, unescaped.
func (s *picker) str() (string, bool) {
	if !s.eat('"') {
		return "", false
	}
	start := s.i
	var buf []byte // the unescaped text, once there is an escape
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if buf == nil {
				buf = raw
			}
			return string(buf), utf8.Valid(buf)
		case c < 0x20:
			return "", false
		case c == '\\':
			if buf == nil {
				buf = append([]byte(nil), s.b[start:s.i]...)
			}
			r, ok := s.escape()
			if !ok {
				return "", false
			}
			buf = utf8.AppendRune(buf, r)
			continue
		}
		if buf != nil {
			buf = append(buf, c)
		}
		s.i++
	}
	return "", false
}

// escape reads the escape at i (a backslash), returning its rune; \u of
// a surrogate half is refused (encoding/json pairs them, or writes
// U+FFFD).
func (s *picker) escape() (rune, bool) {
	r, n, ok := jsonany.Escape(s.b[s.i:])
	s.i += n
	return r, ok && !utf16.IsSurrogate(r)
}

// skipString reads a string value it does not keep.
func (s *picker) skipString() bool {
	if !s.eat('"') {
		return false
	}
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if _, ok := s.escape(); !ok {
				// A surrogate half is valid JSON, but pick does not need
				// to tell: the record is decoded whole.
				return false
			}
		default:
			s.i++
		}
	}
	return false
}

// value reads any JSON value at depth.
func (s *picker) value(depth int) bool {
	if s.i >= len(s.b) || depth > pickDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

func (s *picker) word(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

func (s *picker) object(depth int) bool {
	s.i++ // {
	s.ws()
	if s.eat('}') {
		return true
	}
	for {
		s.ws()
		if !s.skipString() {
			return false
		}
		s.ws()
		if !s.eat(':') {
			return false
		}
		s.ws()
		if !s.value(depth) {
			return false
		}
		s.ws()
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

func (s *picker) array(depth int) bool {
	s.i++ // [
	s.ws()
	if s.eat(']') {
		return true
	}
	for {
		s.ws()
		if !s.value(depth) {
			return false
		}
		s.ws()
		if s.eat(']') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *picker) number() bool {
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.digits() == 0:
		return false
	}
	if s.eat('.') && s.digits() == 0 {
		return false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *picker) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}
