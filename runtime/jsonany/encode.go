package jsonany

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The other way: values nel writes once per sample (a trajectory's
// scoring details and request) as the bytes json.Marshal writes, without
// its reflection (issue 23).

// Append appends v as json.Marshal(v) writes it, for nil, strings, bools,
// float64, int, int64, and map[string]any, []any, map[string]float64 and
// []string of these. ok is false for anything else, or
// where json.Marshal would fail (NaN, ±Inf): dst is then unusable and the
// caller marshals v with encoding/json.
func Append(dst []byte, v any) (out []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return AppendString(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case float64:
		return AppendFloat(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case []string:
		return AppendSlice(dst, v, func(dst []byte, s string) ([]byte, bool) { return AppendString(dst, s), true })
	case []any:
		return AppendSlice(dst, v, Append)
	case map[string]any:
		return appendMap(dst, v, AppendString, Append)
	case map[string]float64:
		return appendMap(dst, v, AppendString, AppendFloat)
	}
	return dst, false
}

// AppendSlice appends s as json.Marshal does, each element by value; ok
// is false where value says so.
func AppendSlice[V any](dst []byte, s []V, value func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	if s == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i, e := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = value(dst, e); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// appendMap writes m's members in the order of their keys, as
// json.Marshal does, each key by key and each value by value.
func appendMap[V any](dst []byte, m map[string]V, key func([]byte, string) []byte, value func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	var buf [8]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(key(dst, k), ':')
		var ok bool
		if dst, ok = value(dst, m[k]); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// AppendFloat writes f as encoding/json's float64 encoder does: the
// shortest representation, in exponent form below 1e-6 and from 1e21 on,
// with a one-digit negative exponent unpadded. ok is false for NaN and
// ±Inf, which json.Marshal refuses.
func AppendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// AppendMap appends m as json.Marshal does (members in the order of
// their keys), each value by value; ok is false where value says so.
func AppendMap[V any](dst []byte, m map[string]V, value func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	return appendMap(dst, m, AppendString, value)
}

// AppendMapNoHTML is AppendMap with the keys written by AppendStringNoHTML.
func AppendMapNoHTML[V any](dst []byte, m map[string]V, value func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	return appendMap(dst, m, AppendStringNoHTML, value)
}

// AppendString appends s quoted as json.Marshal writes a string: HTML's
// <, > and & escaped, the short escapes for \b \f \n \r \t " and \,
// \u00XX for other control bytes, \ufffd for each byte of invalid UTF-8,
// U+2028 and U+2029 escaped.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, true) }

// AppendStringNoHTML is AppendString without HTML's characters escaped,
// as a json.Encoder writes with SetEscapeHTML(false).
func AppendStringNoHTML(dst []byte, s string) []byte { return appendString(dst, s, false) }

func appendString(dst []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' && (!html || (b != '<' && b != '>' && b != '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
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
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
