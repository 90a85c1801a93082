package compiler

import (
	"fmt"
	"iter"
	"slices"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
)

// Helpers over recipe data as syntax (YAML and JSON extracted by CUE's
// encoders): composition, playbooks and ${VAR} expansion edit the data
// before CUE evaluates it, and the syntax keeps every value's position so
// that an error still points into the file it came from.

// fields yields the fields of st (its other declarations, such as
// comments, left out).
func fields(st *ast.StructLit) iter.Seq[*ast.Field] {
	return func(yield func(*ast.Field) bool) {
		for _, d := range st.Elts {
			if f, ok := d.(*ast.Field); ok && !yield(f) {
				return
			}
		}
	}
}

// labelOf is a field's name, "" when it has none CUE can say.
func labelOf(f *ast.Field) string {
	name, _, err := ast.LabelName(f.Label)
	if err != nil {
		return ""
	}
	return name
}

// fieldOf returns the field named name in st, nil if there is none.
func fieldOf(st *ast.StructLit, name string) *ast.Field {
	for f := range fields(st) {
		if labelOf(f) == name {
			return f
		}
	}
	return nil
}

// removeField deletes the field named name from st and returns it.
func removeField(st *ast.StructLit, name string) *ast.Field {
	for i, d := range st.Elts {
		if f, ok := d.(*ast.Field); ok && labelOf(f) == name {
			st.Elts = append(st.Elts[:i:i], st.Elts[i+1:]...)
			return f
		}
	}
	return nil
}

// stringOf returns the text of a string literal.
func stringOf(x ast.Expr) (string, bool) {
	b, ok := x.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := literal.Unquote(b.Value)
	return s, err == nil
}

func isNull(x ast.Expr) bool {
	b, ok := x.(*ast.BasicLit)
	return ok && b.Kind == token.NULL
}

// stringAt is a new string literal with text s at pos.
func stringAt(s string, pos token.Pos) *ast.BasicLit {
	b := ast.NewString(s)
	setPos(b, pos)
	return b
}

// deepMerge lays over onto base as NeMo Evaluator composes configs:
// mappings merge field by field, anything else (lists included) is
// replaced, and a null deletes the field it lands on. Fields keep base's
// order, new ones follow in over's, so node pools keep their order. A null
// that deletes nothing stays: it is the recipe's own "none".
func deepMerge(base, over *ast.StructLit) *ast.StructLit {
	out := &ast.StructLit{Lbrace: over.Lbrace}
	if !over.Lbrace.IsValid() {
		out.Lbrace = base.Lbrace
	}
	at := map[string]int{}
	for f := range fields(base) {
		at[labelOf(f)] = len(out.Elts)
		out.Elts = append(out.Elts, f)
	}
	for f := range fields(over) {
		name := labelOf(f)
		i, ok := at[name]
		switch {
		case !ok:
			at[name] = len(out.Elts)
			out.Elts = append(out.Elts, f)
		case isNull(f.Value):
			out.Elts[i] = nil
			delete(at, name)
		default:
			bs, ok1 := out.Elts[i].(*ast.Field).Value.(*ast.StructLit)
			os, ok2 := f.Value.(*ast.StructLit)
			if ok1 && ok2 {
				f = &ast.Field{Label: f.Label, Value: deepMerge(bs, os)}
			}
			out.Elts[i] = f
		}
	}
	elts := out.Elts[:0]
	for _, d := range out.Elts {
		if d != nil {
			elts = append(elts, d)
		}
	}
	out.Elts = elts
	return out
}

// walkStrings calls fn for every string literal below x with its path
// (field names and list indices); fn returns the expression to put in its
// place (the literal itself to keep it).
func walkStrings(x ast.Expr, path []any, fn func(path []any, lit *ast.BasicLit) (ast.Expr, error)) (ast.Expr, error) {
	switch n := x.(type) {
	case *ast.StructLit:
		for f := range fields(n) {
			v, err := walkStrings(f.Value, append(slices.Clip(path), labelOf(f)), fn)
			if err != nil {
				return nil, err
			}
			f.Value = v
		}
	case *ast.ListLit:
		for i, e := range n.Elts {
			v, err := walkStrings(e, append(slices.Clip(path), i), fn)
			if err != nil {
				return nil, err
			}
			n.Elts[i] = v
		}
	case *ast.BasicLit:
		if n.Kind == token.STRING {
			return fn(path, n)
		}
	}
	return x, nil
}

// textOrTyped is the value of a string that was a single reference: the
// text, or, where the schema wants a number, a boolean or null there, the
// text read as one. NeMo Evaluator substitutes text and lets its schema
// coerce "5" to 5; CUE does not coerce, so both readings are offered and
// unification keeps the one the field allows (the text by default).
func textOrTyped(text string, pos token.Pos) ast.Expr {
	s := stringAt(text, pos)
	v := typedValue(text)
	if _, isText := v.(string); isText {
		return s
	}
	lit := Override{Value: v}.literal()
	setPos(lit, pos)
	return &ast.BinaryExpr{X: &ast.UnaryExpr{Op: token.MUL, X: s}, Op: token.OR, Y: lit}
}

// pathString writes a path of field names and list indices as users
// address fields: benchmarks[0].solver.
func pathString(path []any) string { return displayPath(selectors(path)) }

// errAt is a composition error at a position.
func errAt(pos token.Pos, file string, path []any, format string, args ...any) Errors {
	e := Error{File: file, Path: pathString(path), Msg: fmt.Sprintf(format, args...)}
	if pos.IsValid() {
		e.File, e.Line, e.Column = pos.Filename(), pos.Line(), pos.Column()
	}
	return Errors{e}
}
