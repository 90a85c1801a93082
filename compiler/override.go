package compiler

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// Override is one `-O path.to.field=value` from the command line. It
// replaces (or adds) a value before validation and hashing, so an overridden
// recipe hashes exactly like a file that says the same.
type Override struct {
	Text  string   // as given, for messages
	Path  []string // field names and list indices
	Value any      // nil, bool, int64, *big.Int, float64 or string

	// cwd marks an output folder given as a path on the command line
	// (OutputDirFlag), which is relative to the current directory where
	// a path in the recipe is relative to the recipe's.
	cwd bool
	// task marks --task NAME (TaskFlag): it selects a launcher config's
	// task rather than setting a value.
	task bool
}

// OutputDirFlag is the override a command's output folder flag (-o DIR,
// --resume DIR) makes of output.dir; text names the flag in messages. Like
// any path on a command line, dir is relative to the current directory.
func OutputDirFlag(text, dir string) Override {
	return Override{Text: text, Path: []string{"output", "dir"}, Value: dir, cwd: true}
}

// ParseOverride parses `a.b[0].c=value` (or `a.b.0.c=value`). Values are
// typed as in NeMo Evaluator: null/Null/NULL/~ → null, true/false in any case
// → bool, then int, then float, else the text as a string.
func ParseOverride(s string) (Override, error) {
	if name, ok := strings.CutPrefix(s, "--task "); ok {
		return TaskFlag(name), nil // a run's record keeps --task by its Text
	}
	key, val, ok := strings.Cut(s, "=")
	if !ok {
		return Override{}, fmt.Errorf("override %q: expected path=value", s)
	}
	path, err := parseOverridePath(key)
	if err != nil {
		return Override{}, fmt.Errorf("override %q: %w", s, err)
	}
	return Override{Text: s, Path: path, Value: typedValue(val)}, nil
}

func parseOverridePath(key string) ([]string, error) {
	if key == "" {
		return nil, fmt.Errorf("empty path")
	}
	// a[0].b → a.0.b
	key = strings.NewReplacer("[", ".", "]", "").Replace(key)
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("empty segment in path %q", key)
		}
	}
	return parts, nil
}

func typedValue(s string) any {
	switch s {
	case "null", "Null", "NULL", "~":
		return nil
	}
	switch strings.ToLower(s) {
	case "true":
		return true
	case "false":
		return false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	// An integer past int64 stays an integer (CUE's are unbounded), so
	// that the schema's bound, not a float's rounding, names what is wrong.
	if b, ok := new(big.Int).SetString(s, 10); ok && !strings.ContainsAny(s, "_") {
		return b
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && !strings.ContainsAny(s, "xXpP_") {
		return f
	}
	return s
}

func (o Override) literal() ast.Expr {
	switch v := o.Value.(type) {
	case nil:
		return ast.NewNull()
	case bool:
		return ast.NewBool(v)
	case int64:
		return ast.NewLit(token.INT, strconv.FormatInt(v, 10))
	case *big.Int:
		return ast.NewLit(token.INT, v.String())
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0" // keep it a float, as the user typed one
		}
		return ast.NewLit(token.FLOAT, s)
	}
	return ast.NewString(fmt.Sprint(o.Value))
}

// apply returns x with the override's value placed at its path.
func (o Override) apply(x ast.Expr) (ast.Expr, error) {
	out, err := setPath(x, o.Path, o.literal())
	if err != nil {
		return nil, fmt.Errorf("-O %s: %w", o.Text, err)
	}
	return out, nil
}

func setPath(x ast.Expr, path []string, val ast.Expr) (ast.Expr, error) {
	if len(path) == 0 {
		return val, nil
	}
	seg, rest := path[0], path[1:]
	switch n := x.(type) {
	case *ast.StructLit:
		for f := range fields(n) {
			if name, _, err := ast.LabelName(f.Label); err == nil && name == seg {
				v, err := setPath(f.Value, rest, val)
				if err != nil {
					return nil, err
				}
				f.Value = v
				return n, nil
			}
		}
		if len(rest) > 0 {
			if _, err := strconv.Atoi(rest[0]); err == nil {
				return nil, fmt.Errorf("%s does not exist, so it has no index %s", seg, rest[0])
			}
		}
		v, err := setPath(&ast.StructLit{}, rest, val)
		if err != nil {
			return nil, err
		}
		n.Elts = append(n.Elts, &ast.Field{Label: ast.NewString(seg), Value: v})
		return n, nil
	case *ast.ListLit:
		i, err := strconv.Atoi(seg)
		if err != nil {
			return nil, fmt.Errorf("%q is not a list index", seg)
		}
		if i < 0 || i >= len(n.Elts) {
			return nil, fmt.Errorf("index %d out of range: the list has %d entries", i, len(n.Elts))
		}
		v, err := setPath(n.Elts[i], rest, val)
		if err != nil {
			return nil, err
		}
		n.Elts[i] = v
		return n, nil
	}
	return nil, fmt.Errorf("cannot set %s: its parent is not a mapping or list", seg)
}

// overrideFor finds the override that wrote the value at sels, if any.
func overrideFor(os []Override, sels []cue.Selector) (Override, bool) {
	want := make([]string, len(sels))
	for i, s := range sels {
		if s.Type() == cue.IndexLabel {
			want[i] = strconv.Itoa(s.Index())
		} else {
			want[i] = s.Unquoted()
		}
	}
	for i := len(os) - 1; i >= 0; i-- {
		// --task (no path) writes no value.
		if len(os[i].Path) > 0 && len(os[i].Path) <= len(want) && slices.Equal(os[i].Path, want[:len(os[i].Path)]) {
			return os[i], true
		}
	}
	return Override{}, false
}
