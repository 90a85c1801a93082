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
// the recipe, as it does the config's.
func (l *Loader) Convert(path string, overrides []Override, to string) ([]byte, error) {
	ff, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if ff == "cue" {
		return nil, Errors{{File: path, Msg: "nel convert reads a NeMo Evaluator launcher (v1) config, which is YAML; this is a nel recipe already"}}
	}
	x, err := parseRecipeData(path, ff, src)
	if err != nil {
		return nil, err
	}
	st, ok := x.(*ast.StructLit)
	if !ok || !isLauncher(syntaxKeys(x)) {
		return nil, Errors{{File: path, Line: 1, Column: 1, Msg: "nel convert reads a NeMo Evaluator launcher (v1) config (execution, deployment, target, evaluation); this is a nel recipe already"}}
	}
	expr, _, _, err := loadLauncher(path, st, overrides)
	if err != nil {
		return nil, err
	}
	for _, o := range recipeOverrides(overrides) {
		if expr, err = o.apply(expr); err != nil {
			return nil, Errors{{File: path, Msg: err.Error()}}
		}
	}
	v := l.ctx.BuildExpr(expr)
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("convert %s: %w", path, err)
	}
	switch to {
	case "yaml":
		return cueyaml.Encode(v)
	case "cue":
		syn := v.Syntax(cue.Final(), cue.Docs(false))
		f, ok := syn.(*ast.StructLit)
		if !ok {
			return nil, fmt.Errorf("convert %s: the recipe is not a mapping", path)
		}
		return format.Node(&ast.File{Decls: f.Elts})
	}
	return nil, fmt.Errorf("convert: unknown output format %q (yaml or cue)", to)
}
