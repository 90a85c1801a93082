package bench

import (
	"encoding/json"

	"github.com/nel-eval/nel/runtime/jsonany"
)

// appendCanonical appends what canonicalJSON's encoder writes for v, for
// the values a dataset record's content holds (maps of strings, lists,
// strings, json.Number, bools, null), and reports false, leaving v to
// encoding/json, for anything else (other number types, structs, a
// json.Number that is not a number). Why: every item's ID hashes its
// content's canonical JSON, and encoding/json's reflection was a quarter
// of the CPU a shard spends reading its dataset before its first request
// (issue 23). TestAppendCanonicalAgrees and FuzzAppendCanonical hold it to
// encoding/json's bytes: the IDs must not change.
func appendCanonical(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if v {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case string:
		return appendJSONString(dst, v), true
	case json.Number:
		if !validNumber(string(v)) {
			return dst, false
		}
		return append(dst, v...), true
	case []any:
		return jsonany.AppendSlice(dst, v, appendCanonical)
	case map[string]any:
		return appendCanonicalMap(dst, v)
	}
	return dst, false
}

// appendCanonicalMap writes m with its keys sorted, as encoding/json does.
func appendCanonicalMap(dst []byte, m map[string]any) ([]byte, bool) {
	return jsonany.AppendMapNoHTML(dst, m, appendCanonical)
}

// appendJSONString writes s quoted as encoding/json does without HTML
// escaping.
func appendJSONString(dst []byte, s string) []byte { return jsonany.AppendStringNoHTML(dst, s) }

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
