package compiler

import (
	"embed"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
)

// Playbooks are benchmark presets: `playbook: NAME` in a benchmark entry
// starts the entry from the named preset, and the entry's own fields merge
// over it field by field (deepMerge), as in NeMo Evaluator. nel ships the
// presets NeMo Evaluator ships, with the same values (playbooks/*.yaml); a
// name that is none of them is a YAML file, relative to the recipe's
// directory or else to the working directory (where NeMo Evaluator looks).

//go:embed playbooks/*.yaml
var builtinPlaybooks embed.FS

// Playbooks lists the names of the playbooks nel ships.
func Playbooks() []string {
	ents, _ := fs.ReadDir(builtinPlaybooks, "playbooks")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(out)
	return out
}

// applyPlaybooks replaces each benchmark entry of x that names a playbook
// by the playbook with the entry merged over it. recipe is the recipe's
// file; the files read are returned.
func applyPlaybooks(x ast.Expr, recipe string) (ast.Expr, []string, error) {
	st, ok := x.(*ast.StructLit)
	if !ok {
		return x, nil, nil
	}
	bf := fieldOf(st, "benchmarks")
	if bf == nil {
		return x, nil, nil
	}
	list, ok := bf.Value.(*ast.ListLit)
	if !ok {
		return x, nil, nil // the schema says what is wrong
	}
	var files []string
	for i, e := range list.Elts {
		entry, ok := e.(*ast.StructLit)
		if !ok {
			continue
		}
		pf := removeField(entry, "playbook")
		if pf == nil {
			continue
		}
		at := []any{"benchmarks", i, "playbook"}
		name, ok := stringOf(pf.Value)
		if !ok || name == "" {
			return nil, files, errAt(pf.Value.Pos(), recipe, at, "expected the name of a playbook (%s) or a path to one", strings.Join(Playbooks(), ", "))
		}
		file, src, err := findPlaybook(name, filepath.Dir(recipe))
		if err != nil {
			return nil, files, errAt(pf.Value.Pos(), recipe, at, "unknown playbook %q: nel ships %s, and no file %s is next to the recipe or in the working directory", name, strings.Join(Playbooks(), ", "), name)
		}
		files = append(files, file)
		px, err := parseData(file, src)
		if err != nil {
			return nil, files, err
		}
		base, ok := px.(*ast.StructLit)
		if px == nil {
			base, ok = &ast.StructLit{}, true
		}
		if !ok {
			return nil, files, Errors{{File: file, Line: 1, Column: 1, Msg: "a playbook is a mapping of benchmark fields"}}
		}
		list.Elts[i] = deepMerge(base, entry)
	}
	return x, files, nil
}

// findPlaybook finds a playbook by name: a built-in one, else a file.
func findPlaybook(name, dir string) (file string, src []byte, err error) {
	for _, ext := range []string{"", ".yaml", ".yml"} {
		p := path.Join("playbooks", name+ext)
		if !fs.ValidPath(p) || strings.Contains(name, "/") {
			break
		}
		if src, err := fs.ReadFile(builtinPlaybooks, p); err == nil {
			return builtinPrefix + p, src, nil
		}
	}
	for _, d := range []string{dir, "."} {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(d, name)
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			src, err := os.ReadFile(p)
			return p, src, err
		}
	}
	return "", nil, fs.ErrNotExist
}
