package jsonany

import "encoding/json"

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
		return AppendStringNoHTML(dst, v), true
	case json.Number:
		if !validNumber(string(v)) {
			return dst, false
		}
		return append(dst, v...), true
	case []any:
		return AppendSlice(dst, v, AppendValue)
	case map[string]any:
		return AppendMapNoHTML(dst, v, AppendValue)
	}
	return dst, false
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
