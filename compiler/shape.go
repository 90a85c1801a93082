package compiler

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// readsFormats is what nel reads, said once wherever a file is not one of
// them.
const readsFormats = "nel reads a nel recipe (services, benchmarks, and optionally sandboxes, cluster, output), " +
	"a NeMo Evaluator config (the same sections, composed with defaults: [group/name], _base_ and playbooks) " +
	"or a NeMo Evaluator launcher (v1) config (execution, deployment, target, evaluation)"

// recipeKeys are the sections of the formats nel reads; a file with one of
// them is a recipe, and its other keys are typos the schema names. Both a
// NeMo Evaluator config and a launcher config may have defaults, so it
// decides nothing.
var recipeKeys = []string{"services", "sandboxes", "benchmarks", "cluster", "output"}

// launcherKeys are the sections of NeMo Evaluator's v1 launcher (Hydra)
// configs (launcher.go).
var launcherKeys = []string{"execution", "deployment", "evaluation", "target"}

// topKey is a top-level key and where it is written.
type topKey struct {
	name string
	pos  token.Pos
}

// checkShape refuses, in one line, a file that is no recipe at all (a
// launcher config, some other YAML): a list of unknown-field errors would
// hide that the whole file is in another format. A file with any recipe
// key goes on to the schema, which names its misspelt keys.
func checkShape(path string, keys []topKey) error {
	var names []string
	var first token.Pos
	composed := false // defaults or a launcher section
	for _, k := range keys {
		if strings.HasPrefix(k.name, "_") {
			continue // a user variable (NeMo's _common), stripped later
		}
		if slices.Contains(recipeKeys, k.name) {
			return nil
		}
		if k.name == "defaults" || slices.Contains(launcherKeys, k.name) {
			composed = true
		}
		if len(names) == 0 {
			first = k.pos
		}
		names = append(names, k.name)
	}
	if len(names) == 0 || composed {
		// Only variables; fragments that may hold the sections (the
		// schema says what is missing once they are composed); or a
		// launcher (v1) config, which launcher.go reads.
		return nil
	}
	e := Error{File: path, Msg: fmt.Sprintf("not a recipe: none of its top-level keys (%s) is a recipe's; %s",
		strings.Join(names, ", "), readsFormats)}
	if first.IsValid() {
		e.Line, e.Column = first.Line(), first.Column()
	}
	return Errors{e}
}

// syntaxKeys lists the top-level keys of a YAML or JSON recipe's syntax.
func syntaxKeys(x ast.Expr) []topKey {
	st, ok := x.(*ast.StructLit)
	if !ok {
		return nil
	}
	var out []topKey
	for f := range fields(st) {
		out = append(out, topKey{labelOf(f), f.Pos()})
	}
	return out
}

// valueKeys lists the top-level regular fields of a CUE recipe.
func valueKeys(v cue.Value) []topKey {
	var out []topKey
	it, err := v.Fields(cue.Optional(true))
	for err == nil && it.Next() {
		out = append(out, topKey{it.Selector().Unquoted(), it.Value().Pos()})
	}
	return out
}
