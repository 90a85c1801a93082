package compiler

import (
	"fmt"
	"os"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	cueyaml "cuelang.org/go/encoding/yaml"
)

// Convert reads the launcher (v1) config at path and writes the nel
// recipe it becomes, as "yaml" or "cue": the same recipe, so it hashes the
// same as the config with the same overrides (--task included). ${VAR}
// references are written as references, for nel to expand when it loads
// the recipe, as it does the config's. The warnings are what loading the
// config would warn of (a task run natively, what nel leaves to the user).
func (l *Loader) Convert(path string, overrides []Override, to string) (out []byte, warnings Errors, err error) {
	ff, err := formatOf(path)
	if err != nil {
		return nil, nil, err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	if ff == "cue" {
		return nil, nil, Errors{{File: path, Msg: "nel convert reads a NeMo Evaluator launcher (v1) config, which is YAML; this is a nel recipe already"}}
	}
	x, err := parseRecipeData(path, ff, src)
	if err != nil {
		return nil, nil, err
	}
	st, ok := x.(*ast.StructLit)
	if !ok || !isLauncher(syntaxKeys(x)) {
		return nil, nil, Errors{{File: path, Line: 1, Column: 1, Msg: "nel convert reads a NeMo Evaluator launcher (v1) config (execution, deployment, target, evaluation); this is a nel recipe already"}}
	}
	expr, _, warnings, err := loadLauncher(path, st, overrides)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range recipeOverrides(overrides) {
		if expr, err = o.apply(expr); err != nil {
			return nil, nil, Errors{{File: path, Msg: err.Error()}}
		}
	}
	v := l.ctx.BuildExpr(expr)
	if err := v.Err(); err != nil {
		return nil, nil, fmt.Errorf("convert %s: %w", path, err)
	}
	switch to {
	case "yaml":
		out, err = cueyaml.Encode(v)
		return out, warnings, err
	case "cue":
		syn := v.Syntax(cue.Final(), cue.Docs(false))
		f, ok := syn.(*ast.StructLit)
		if !ok {
			return nil, nil, fmt.Errorf("convert %s: the recipe is not a mapping", path)
		}
		out, err = format.Node(&ast.File{Decls: f.Elts})
		return out, warnings, err
	}
	return nil, nil, fmt.Errorf("convert: unknown output format %q (yaml or cue)", to)
}
