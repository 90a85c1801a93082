package compiler

import (
	"fmt"
	"reflect"
	"strings"

	"cuelang.org/go/cue"
)

// checkNumbers finds the numbers of a validated recipe that the Go value
// it decodes into cannot hold: CUE integers are unbounded and its floats
// are decimals, so a shuffle_seed past int64 or a timeout of 1e400 is
// valid CUE that would fail to decode (an internal error) or wrap. Each is
// an error at its position instead. Fields of type any (params,
// extra_body) keep big numbers exactly and are not checked.
func checkNumbers(s *Source) Errors {
	c := &ruleChecker{s: s}
	c.numbers(s.Value, reflect.TypeFor[Recipe](), nil)
	return c.errs
}

func (c *ruleChecker) numbers(v cue.Value, t reflect.Type, path []any) {
	if !v.Exists() {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		c.numbers(v, t.Elem(), path)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			c.numbers(v.LookupPath(cue.MakePath(cue.Str(name))), f.Type, append(path[:len(path):len(path)], name))
		}
	case reflect.Slice:
		if it, err := v.List(); err == nil {
			for i := 0; it.Next(); i++ {
				c.numbers(it.Value(), t.Elem(), append(path[:len(path):len(path)], i))
			}
		}
	case reflect.Map:
		if it, err := v.Fields(); err == nil {
			for it.Next() {
				c.numbers(it.Value(), t.Elem(), append(path[:len(path):len(path)], it.Selector().Unquoted()))
			}
		}
	case reflect.Int, reflect.Int64:
		if v.Kind() != cue.IntKind {
			return
		}
		// cue's Int64 also refuses the int64 minimum, which Decode cannot
		// take either: the range is symmetric.
		if _, err := v.Int64(); err != nil {
			c.at(fmt.Sprintf("expected an integer from -9223372036854775807 to 9223372036854775807, found %v", v), path...)
		}
	case reflect.Float64:
		if v.Kind() != cue.FloatKind && v.Kind() != cue.IntKind {
			return
		}
		if _, err := v.Float64(); err != nil {
			c.at(fmt.Sprintf("expected a number of at most 1.8e308, found %v", v), path...)
		}
	}
}
