package ifeval

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/nel-eval/nel/runtime/score"
)

// args are one instruction's kwargs, nulls removed.
type args map[string]any

// str returns the string kwarg name.
func (a args) str(name string) (string, error) {
	v, ok := a[name]
	if !ok {
		return "", fmt.Errorf("missing kwarg %q", name)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("kwarg %q: want a string, got %T", name, v)
	}
	return s, nil
}

// int returns the integer kwarg name (JSON numbers arrive as float64,
// json.Number or int64 depending on the decoder).
func (a args) int(name string) (int, error) {
	v, ok := a[name]
	if !ok {
		return 0, fmt.Errorf("missing kwarg %q", name)
	}
	switch v := v.(type) {
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case int32:
		return int(v), nil
	case float64:
		if v == math.Trunc(v) {
			return int(v), nil
		}
	case json.Number:
		if n, err := strconv.Atoi(v.String()); err == nil {
			return n, nil
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("kwarg %q: want an integer, got %T %v", name, v, v)
}

// strs returns the list-of-strings kwarg name.
func (a args) strs(name string) ([]string, error) {
	v, ok := a[name]
	if !ok {
		return nil, fmt.Errorf("missing kwarg %q", name)
	}
	out, ok := score.Strings(v)
	if !ok {
		return nil, fmt.Errorf("kwarg %q: want a list of strings, got %T", name, v)
	}
	return out, nil
}

// relation returns the comparison kwarg name: "less than" or "at least".
func (a args) relation(name string) (lessThan bool, err error) {
	s, err := a.str(name)
	if err != nil {
		return false, err
	}
	switch s {
	case "less than":
		return true, nil
	case "at least":
		return false, nil
	}
	return false, fmt.Errorf("kwarg %q: the relation must be \"less than\" or \"at least\", got %q", name, s)
}

// compare applies a relation: n < threshold or n >= threshold.
func compare(n, threshold int, lessThan bool) bool {
	if lessThan {
		return n < threshold
	}
	return n >= threshold
}

// pyStrip is Python's str.strip().
func pyStrip(s string) string { return score.PyStrip(s) }

// pySplit is Python's str.split() with no arguments.
func pySplit(s string) []string { return strings.FieldsFunc(s, score.IsPySpace) }

// pyIsUpper is Python's str.isupper(): at least one cased character and
// no lowercase or titlecase one.
func pyIsUpper(s string) bool {
	cased := false
	for _, r := range s {
		if unicode.IsLower(r) || unicode.IsTitle(r) {
			return false
		}
		if unicode.IsUpper(r) {
			cased = true
		}
	}
	return cased
}

// pyIsLower is Python's str.islower().
func pyIsLower(s string) bool {
	cased := false
	for _, r := range s {
		if unicode.IsUpper(r) || unicode.IsTitle(r) {
			return false
		}
		if unicode.IsLower(r) {
			cased = true
		}
	}
	return cased
}

// isPyWord reports whether r is in Python 3's \w for str patterns:
// alphanumeric (letters and numbers of any script) or '_'. Combining marks
// are not, as in Python.
func isPyWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }
