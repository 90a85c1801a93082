package compiler

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
	cueyaml "cuelang.org/go/encoding/yaml"
)

// Config composition, as NeMo Evaluator composes its YAML configs before it
// validates them (nemo-evaluator-facts §2.1):
//
//   - defaults: a list of "group/name" fragments (wrapped under the group's
//     key: clusters/ and cluster/ under cluster, any other group under its
//     own name), plain "name" fragments (merged at the top level),
//     {_base_: file} entries (a whole config composed recursively, found next
//     to the file that names it first) and _self_ (where the file itself
//     goes; last by default);
//   - fragments are found in <recipe dir>/conf/, then
//     ~/.config/nemo-evaluator/conf/, then the defaults nel ships (as NeMo
//     does: clusters/local);
//   - layers deep-merge (deepMerge), ${.dotted.path} self-references are
//     resolved against the merged tree, and top-level keys that start with
//     _ (user variables such as _common) are dropped.
//
// The result is one recipe: it is what validation, hashing and nel compile
// see. The recipe hash covers the composed methodology, so a recipe hashes
// the same however it is split into files; the files are listed in
// Source.Files. Every value keeps the position of the file it came from.

//go:embed conf
var builtinConf embed.FS

// builtinPrefix names the files nel ships (defaults, playbooks) in
// positions and messages.
const builtinPrefix = "nel/compiler/"

// maxComposedFiles bounds how many files one recipe may pull in: a diamond
// of _base_ files reads a file once per path to it.
const maxComposedFiles = 256

// groupKeys maps a fragment group's directory to the recipe key it fills.
var groupKeys = map[string]string{"clusters": "cluster", "cluster": "cluster"}

type composer struct {
	search []string // directories fragments are looked up in, in order
	files  []string // every file read, the recipe first
	chain  []string // the _base_ files being composed, outermost first
}

// compose applies composition to a data recipe (YAML or JSON) whose syntax
// is x, read from file. It returns the composed syntax and the files read.
func compose(file string, x ast.Expr) (ast.Expr, []string, error) {
	st, ok := x.(*ast.StructLit)
	if !ok {
		return x, []string{file}, nil
	}
	c := &composer{search: searchPaths(file), files: []string{file}}
	st, err := c.config(file, st)
	if err != nil {
		return nil, c.files, err
	}
	if err := resolveSelfRefs(st); err != nil {
		return nil, c.files, err
	}
	elts := st.Elts[:0]
	for _, d := range st.Elts {
		if f, ok := d.(*ast.Field); ok && strings.HasPrefix(labelOf(f), "_") {
			continue // a user variable, resolved above
		}
		elts = append(elts, d)
	}
	st.Elts = elts
	return st, c.files, nil
}

// searchPaths are the directories fragments are looked up in; only those
// that exist count, as in NeMo Evaluator.
func searchPaths(file string) []string {
	var out []string
	if d := filepath.Join(filepath.Dir(file), "conf"); isDir(d) {
		out = append(out, d)
	}
	if home, err := os.UserHomeDir(); err == nil {
		if d := filepath.Join(home, ".config", "nemo-evaluator", "conf"); isDir(d) {
			out = append(out, d)
		}
	}
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// config composes one config file: its defaults list, then itself.
func (c *composer) config(file string, st *ast.StructLit) (*ast.StructLit, error) {
	abs, _ := filepath.Abs(file)
	if i := slices.Index(c.chain, abs); i >= 0 {
		return nil, cycleError(append(slices.Clone(c.chain[i:]), abs))
	}
	c.chain = append(c.chain, abs)
	defer func() { c.chain = c.chain[:len(c.chain)-1] }()

	df := removeField(st, "defaults")
	if df == nil {
		return st, nil
	}
	list, ok := df.Value.(*ast.ListLit)
	if !ok {
		return nil, errAt(df.Value.Pos(), file, []any{"defaults"}, "expected a list of fragment names, {_base_: file} entries and _self_")
	}
	var layers []*ast.StructLit
	self := -1
	for i, e := range list.Elts {
		if name, ok := stringOf(e); ok && name == "_self_" && self < 0 {
			self = len(layers)
			continue
		}
		layer, err := c.entry(file, e, []any{"defaults", i})
		if err != nil {
			return nil, err
		}
		layers = append(layers, layer)
	}
	return withSelf(layers, self, st), nil
}

// entry loads one entry of file's defaults list.
func (c *composer) entry(file string, e ast.Expr, at []any) (*ast.StructLit, error) {
	if name, ok := stringOf(e); ok {
		return c.fragment(file, name, e.Pos(), at)
	}
	st, ok := e.(*ast.StructLit)
	var bf *ast.Field
	if ok && len(st.Elts) == 1 {
		bf = fieldOf(st, "_base_")
	}
	name, isStr := "", false
	if bf != nil {
		name, isStr = stringOf(bf.Value)
	}
	if !isStr || name == "" {
		if ok && len(st.Elts) == 1 && bf == nil {
			// Hydra's "group: option", as NeMo Evaluator's v1 launcher
			// configs write their defaults.
			return nil, errAt(e.Pos(), file, at, "not supported yet: a {group: option} entry, the v1 launcher's (Hydra) format; name a fragment as \"group/name\"")
		}
		return nil, errAt(e.Pos(), file, at, "expected a fragment name (\"group/name\" or \"name\"), {_base_: file} or _self_")
	}
	at = append(at, "_base_")
	found, err := c.find(name, append([]string{filepath.Dir(file)}, c.search...))
	if err != nil {
		return nil, errAt(bf.Value.Pos(), file, at, "base config %q not found next to %s or in %s", name, filepath.Dir(file), c.searchList())
	}
	x, err := c.read(found.path, found.src, bf.Value.Pos(), at)
	if err != nil {
		return nil, err
	}
	base, err := c.config(found.path, x)
	if chain, ok := err.(cycleError); ok {
		// Named where the entry that closes the cycle is.
		return nil, errAt(bf.Value.Pos(), file, at, "circular _base_ chain: %s", strings.Join(relAll(chain), " → "))
	}
	return base, err
}

// cycleError is a _base_ chain that comes back to a file it started from.
type cycleError []string

func (e cycleError) Error() string { return "circular _base_ chain: " + strings.Join(e, " → ") }

// fragment loads a "group/name" or "name" fragment.
func (c *composer) fragment(file, name string, pos token.Pos, at []any) (*ast.StructLit, error) {
	found, err := c.find(name, c.search)
	if err != nil {
		return nil, errAt(pos, file, at, "config fragment %q not found in %s", name, c.searchList())
	}
	x, err := c.read(found.path, found.src, pos, at)
	if err != nil {
		return nil, err
	}
	group, _, grouped := strings.Cut(name, "/")
	if !grouped {
		return x, nil
	}
	key := group
	if k, ok := groupKeys[group]; ok {
		key = k
	}
	return &ast.StructLit{Elts: []ast.Decl{&ast.Field{Label: ast.NewIdent(key), Value: x}}}, nil
}

func (c *composer) searchList() string {
	dirs := slices.Clone(c.search)
	dirs = append(dirs, "nel's built-in defaults")
	return strings.Join(dirs, ", ")
}

type foundFile struct {
	path string
	src  []byte
}

// find looks name up in dirs, as name, name.yaml and name.yml, then among
// the defaults nel ships.
func (c *composer) find(name string, dirs []string) (foundFile, error) {
	for _, d := range dirs {
		for _, ext := range []string{"", ".yaml", ".yml"} {
			p := name + ext
			if !filepath.IsAbs(p) {
				p = filepath.Join(d, p)
			}
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				src, err := os.ReadFile(p)
				return foundFile{p, src}, err
			}
		}
	}
	for _, ext := range []string{"", ".yaml", ".yml"} {
		p := path.Join("conf", name+ext)
		if !fs.ValidPath(p) {
			break
		}
		if src, err := fs.ReadFile(builtinConf, p); err == nil {
			return foundFile{builtinPrefix + p, src}, nil
		}
	}
	return foundFile{}, fs.ErrNotExist
}

// read parses a composed file; pos and at are where the recipe names it.
func (c *composer) read(file string, src []byte, pos token.Pos, at []any) (*ast.StructLit, error) {
	if len(c.files) >= maxComposedFiles {
		return nil, errAt(pos, "", at, "more than %d files composed: is a _base_ included from many places?", maxComposedFiles)
	}
	c.files = append(c.files, file)
	x, err := parseData(file, src)
	if err != nil {
		return nil, err
	}
	if x == nil {
		return &ast.StructLit{}, nil // an empty file adds nothing
	}
	st, ok := x.(*ast.StructLit)
	if !ok {
		return nil, Errors{{File: file, Line: 1, Column: 1, Msg: "expected a mapping"}}
	}
	return st, nil
}

// parseData reads a YAML (or JSON) data file into syntax; nil when it holds
// nothing but comments.
func parseData(file string, src []byte) (ast.Expr, error) {
	if len(src) > MaxRecipeBytes {
		return nil, Errors{{File: file, Msg: fmt.Sprintf("file is %d bytes, more than the %d a recipe may have", len(src), MaxRecipeBytes)}}
	}
	f, err := cueyaml.Extract(file, src)
	if err != nil {
		return nil, yamlSyntaxHints(fromSyntaxError(file, err), src)
	}
	if len(f.Decls) == 0 {
		return nil, nil
	}
	return fileExpr(f), nil
}

// relAll shortens absolute paths to paths relative to the working
// directory where that is shorter.
func relAll(paths []string) []string {
	wd, _ := os.Getwd()
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p
		if r, err := filepath.Rel(wd, p); err == nil && len(r) < len(p) {
			out[i] = r
		}
	}
	return out
}

// selfRefRE matches NeMo Evaluator's self-references, ${.dotted.path}.
var selfRefRE = regexp.MustCompile(`\$\{\.([a-zA-Z0-9_.]+)\}`)

// resolveSelfRefs replaces ${.dotted.path} in every string of root with the
// value at that path of root (field names only, as in NeMo Evaluator). A
// string that is one reference to a number, boolean or null becomes that
// value where the schema wants one (textOrTyped). References inside the
// referenced text are resolved too; a cycle or a path root lacks is an
// error (NeMo Evaluator would leave the text as it is, to fail later).
func resolveSelfRefs(root *ast.StructLit) error {
	r := &selfRefs{root: root}
	_, err := walkStrings(root, nil, func(p []any, lit *ast.BasicLit) (ast.Expr, error) {
		s, _ := stringOf(lit)
		if !strings.Contains(s, "${.") {
			return lit, nil
		}
		return r.resolve(s, lit, p, nil)
	})
	return err
}

type selfRefs struct{ root *ast.StructLit }

// resolve is the string lit (s, at path p) with its references resolved.
func (r *selfRefs) resolve(s string, lit *ast.BasicLit, p []any, seen []string) (ast.Expr, error) {
	if m := selfRefRE.FindStringSubmatch(s); m != nil && m[0] == s {
		v, err := r.lookup(m[1], lit, p, seen)
		if err != nil {
			return nil, err
		}
		if t, ok := stringOf(v); ok {
			return stringAt(t, lit.Pos()), nil // its own references resolved by lookup
		}
		return textOrTyped(pyText(v), lit.Pos()), nil
	}
	t, err := r.text(s, lit, p, seen)
	if err != nil {
		return nil, err
	}
	return stringAt(t, lit.Pos()), nil
}

// text is s with every reference replaced by its value's text.
func (r *selfRefs) text(s string, lit *ast.BasicLit, p []any, seen []string) (string, error) {
	var err error
	out := selfRefRE.ReplaceAllStringFunc(s, func(ref string) string {
		if err != nil {
			return ref
		}
		var v *ast.BasicLit
		if v, err = r.lookup(selfRefRE.FindStringSubmatch(ref)[1], lit, p, seen); err != nil {
			return ref
		}
		if t, ok := stringOf(v); ok {
			return t
		}
		return pyText(v)
	})
	return out, err
}

// lookup finds the scalar at the dotted path name, with its own
// references resolved.
func (r *selfRefs) lookup(name string, lit *ast.BasicLit, p []any, seen []string) (*ast.BasicLit, error) {
	if slices.Contains(seen, name) {
		return nil, errAt(lit.Pos(), "", p, "${.%s} refers to itself: %s", name, strings.Join(append(seen, name), " → "))
	}
	var x ast.Expr = r.root
	for _, key := range strings.Split(name, ".") {
		st, ok := x.(*ast.StructLit)
		var f *ast.Field
		if ok {
			f = fieldOf(st, key)
		}
		if f == nil {
			return nil, errAt(lit.Pos(), "", p, "${.%s}: the composed config has no field %s", name, name)
		}
		x = f.Value
	}
	v, ok := x.(*ast.BasicLit)
	if !ok {
		return nil, errAt(lit.Pos(), "", p, "${.%s} is a mapping or list; only a string, number, boolean or null can be put into a string", name)
	}
	if s, ok := stringOf(v); ok && strings.Contains(s, "${.") {
		t, err := r.text(s, v, p, append(slices.Clip(seen), name))
		if err != nil {
			return nil, err
		}
		return stringAt(t, v.Pos()), nil
	}
	return v, nil
}

// pyText is a scalar as NeMo Evaluator (Python's str) writes it into a
// string.
func pyText(b *ast.BasicLit) string {
	switch b.Kind {
	case token.TRUE:
		return "True"
	case token.FALSE:
		return "False"
	case token.NULL:
		return "None"
	}
	return b.Value
}
