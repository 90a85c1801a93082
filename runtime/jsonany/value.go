package jsonany

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// The other way: a value Decode returned, written as encoding/json writes
// it.

// AppendValue appends v as an encoding/json Encoder with SetEscapeHTML(false)
// writes it (without the newline), for the values Decode returns (maps,
// lists, strings, json.Number, bools, null), and reports false, leaving v
// to encoding/json, for anything else (other number types, structs, a
// json.Number that is not a number). Why: a benchmark item's ID hashes its
// content's canonical JSON, and an interceptor re-encodes the request body
// it edited, once a request; encoding/json's reflection was a quarter of
// the CPU a shard spends reading its dataset before its first request
// (issue 23). runtime/bench's TestAppendCanonicalAgrees and
// FuzzAppendCanonical hold it to encoding/json's bytes: the IDs must not
// change.
func AppendValue(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if v {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case string:
		return AppendQuoted(dst, v), true
	case json.Number:
		if !validNumber(string(v)) {
			return dst, false
		}
		return append(dst, v...), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = AppendValue(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		return appendMap(dst, v)
	}
	return dst, false
}

// appendMap writes m with its keys sorted, as encoding/json does.
func appendMap(dst []byte, m map[string]any) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(AppendQuoted(dst, k), ':')
		var ok bool
		if dst, ok = AppendValue(dst, m[k]); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// AppendQuoted writes s quoted as encoding/json does without HTML
// escaping: the short escapes for \b \f \n \r \t " and \, \u00XX for other
// control bytes, \ufffd for each byte of invalid UTF-8, \u2028 and \u2029
// escaped.
func AppendQuoted(dst []byte, s string) []byte {
	const (
		hex = "0123456789abcdef"
		// The bytes with a short escape, and the letter of each.
		escaped = "\"\\\b\f\n\r\t"
		escapes = "\"\\bfnrt"
	)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			if k := strings.IndexByte(escaped, b); k >= 0 {
				dst = append(dst, '\\', escapes[k])
			} else {
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}

// validNumber says whether s is a JSON number, as encoding/json requires
// of a json.Number it writes.
func validNumber(s string) bool {
	i := 0
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}
