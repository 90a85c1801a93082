package jsonschema

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxDepth bounds how deep validation goes: a schema whose $ref loops
// without consuming the value ({"$ref": "#"}) would otherwise never end.
const maxDepth = 512

// Validate reports the first way v breaks the schema, or nil. v is a value
// as Decode returns it (numbers as json.Number; float64 and int are taken
// too).
func (s *Schema) Validate(v any) error {
	return validate(s.root, v, "", 0)
}

// validate checks v at instance location at (a JSON pointer, "" the root).
func validate(n *node, v any, at string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("at %s: schema %s recurses more than %d levels", where(at), n.loc, maxDepth)
	}
	if n.always != nil {
		if !*n.always {
			return fmt.Errorf("at %s: the schema %s accepts nothing", where(at), n.loc)
		}
		return nil
	}
	if n.ref != nil {
		if err := validate(n.ref, v, at, depth+1); err != nil {
			return err
		}
	}
	if len(n.types) > 0 && !hasType(n.types, v) {
		return fmt.Errorf("at %s: got %s, want %s", where(at), kind(v), orList(n.types))
	}
	if n.enum != nil && !containsEqual(n.enum, v) {
		return fmt.Errorf("at %s: %s is not one of the enum's values", where(at), show(v))
	}
	if n.hasConst && !equal(n.constant, v) {
		return fmt.Errorf("at %s: %s is not the const %s", where(at), show(v), show(n.constant))
	}
	var err error
	switch x := v.(type) {
	case string:
		err = n.checkString(x, at)
	case []any:
		err = n.checkArray(x, at, depth)
	case map[string]any:
		err = n.checkObject(x, at, depth)
	default:
		if f, ok := number(v); ok {
			err = n.checkNumber(f, at)
		}
	}
	if err != nil {
		return err
	}
	return n.checkCombined(v, at, depth)
}

func (n *node) checkString(s, at string) error {
	runes := utf8.RuneCountInString(s) // the spec counts characters, not bytes
	if n.minLength >= 0 && runes < n.minLength {
		return fmt.Errorf("at %s: %d characters, want at least %d", where(at), runes, n.minLength)
	}
	if n.maxLength >= 0 && runes > n.maxLength {
		return fmt.Errorf("at %s: %d characters, want at most %d", where(at), runes, n.maxLength)
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return fmt.Errorf("at %s: %s does not match the pattern %q", where(at), show(s), n.pattern)
	}
	return nil
}

func (n *node) checkNumber(f float64, at string) error {
	bound := func(limit *float64, ok func(a, b float64) bool, what string) error {
		if limit != nil && !ok(f, *limit) {
			return fmt.Errorf("at %s: %v, want %s %v", where(at), f, what, *limit)
		}
		return nil
	}
	for _, err := range []error{
		bound(n.minimum, func(a, b float64) bool { return a >= b }, ">="),
		bound(n.maximum, func(a, b float64) bool { return a <= b }, "<="),
		bound(n.exclusiveMin, func(a, b float64) bool { return a > b }, ">"),
		bound(n.exclusiveMax, func(a, b float64) bool { return a < b }, "<"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func (n *node) checkArray(a []any, at string, depth int) error {
	if n.minItems >= 0 && len(a) < n.minItems {
		return fmt.Errorf("at %s: %d items, want at least %d", where(at), len(a), n.minItems)
	}
	if n.maxItems >= 0 && len(a) > n.maxItems {
		return fmt.Errorf("at %s: %d items, want at most %d", where(at), len(a), n.maxItems)
	}
	if n.unique {
		for i := range a {
			for j := i + 1; j < len(a); j++ {
				if equal(a[i], a[j]) {
					return fmt.Errorf("at %s: items %d and %d are equal, want unique items", where(at), i, j)
				}
			}
		}
	}
	for i, item := range a {
		sub := n.items
		if i < len(n.prefix) {
			sub = n.prefix[i]
		}
		if sub == nil {
			continue
		}
		if err := validate(sub, item, at+"/"+strconv.Itoa(i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (n *node) checkObject(m map[string]any, at string, depth int) error {
	for _, r := range n.required {
		if _, ok := m[r]; !ok {
			return fmt.Errorf("at %s: missing required property %q", where(at), r)
		}
	}
	for _, k := range n.propKeys {
		if pv, ok := m[k]; ok {
			if err := validate(n.props[k], pv, at+"/"+escape(k), depth+1); err != nil {
				return err
			}
		}
	}
	if n.addl == nil {
		return nil
	}
	for _, k := range sortedKeys(m) {
		if _, declared := n.props[k]; declared {
			continue
		}
		if err := validate(n.addl, m[k], at+"/"+escape(k), depth+1); err != nil {
			return fmt.Errorf("additional property %q: %w", k, err)
		}
	}
	return nil
}

// checkCombined applies allOf, anyOf, oneOf and not.
func (n *node) checkCombined(v any, at string, depth int) error {
	for _, s := range n.allOf {
		if err := validate(s, v, at, depth+1); err != nil {
			return err
		}
	}
	if n.anyOf != nil {
		var first error
		for _, s := range n.anyOf {
			if first = validate(s, v, at, depth+1); first == nil {
				break
			}
		}
		if first != nil {
			return fmt.Errorf("at %s: matches none of anyOf's %d schemas (the last: %w)", where(at), len(n.anyOf), first)
		}
	}
	if n.oneOf != nil {
		matched := 0
		for _, s := range n.oneOf {
			if validate(s, v, at, depth+1) == nil {
				matched++
			}
		}
		if matched != 1 {
			return fmt.Errorf("at %s: matches %d of oneOf's %d schemas, want exactly 1", where(at), matched, len(n.oneOf))
		}
	}
	if n.not != nil && validate(n.not, v, at, depth+1) == nil {
		return fmt.Errorf("at %s: matches the schema %s, which it must not", where(at), n.not.loc)
	}
	return nil
}

func hasType(types []string, v any) bool {
	k := kind(v)
	for _, t := range types {
		if t == k || t == "number" && k == "integer" {
			return true
		}
	}
	return false
}

// kind is v's JSON type; a number with no fraction is an integer (1.0
// included, as draft 2020-12 says).
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	if f, ok := number(v); ok {
		if f == math.Trunc(f) && !math.IsInf(f, 0) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// number is v as a float64 when it is a number. Numbers compare as
// float64: integers beyond 2^53 lose their last digits, as in JavaScript.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil || math.IsInf(f, 0)
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// equal is JSON equality: numbers by value (1 == 1.0), objects by their
// members whatever the order, never a boolean equal to a number.
func equal(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	case nil, bool, string:
		return a == b
	}
	fa, okA := number(a)
	fb, okB := number(b)
	return okA && okB && fa == fb
}

func containsEqual(list []any, v any) bool {
	for _, e := range list {
		if equal(e, v) {
			return true
		}
	}
	return false
}

// where names an instance location for a message: "$" is the root.
func where(at string) string {
	if at == "" {
		return "$"
	}
	return at
}

func orList(types []string) string {
	s := types[0]
	for _, t := range types[1:] {
		s += " or " + t
	}
	return s
}

// show is a value as JSON, cut short.
func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
