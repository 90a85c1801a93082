package compiler

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// NeMo Evaluator's v1 launcher configs (nemo-evaluator-launcher, branch
// main-legacy) are read as one more spelling of a recipe: the config is
// composed with the launcher's packaged defaults (Hydra's defaults list:
// {execution: local}, {deployment: vllm}, _self_), the -O overrides on its
// own sections are applied, the tasks --task names are kept, OmegaConf's
// interpolations are resolved (${path.to.key}; ${oc.env:VAR} and
// ${oc.env:VAR,default} become nel's ${VAR} and ${VAR:-default}, which
// envexpand.go expands as for every recipe), every ??? left is reported, and
// the result is translated into the services/benchmarks/cluster/output
// recipe it means (launcher_translate.go). From there on it is a recipe
// like any other: a v1 config and its nel-format equivalent (nel convert)
// are the same recipe and hash the same.

//go:embed launcher
var launcherFS embed.FS

// launcherGroups are the config groups a v1 defaults list may name, and
// the option the launcher's own default.yaml picks when a config names
// none.
var launcherGroups = map[string]string{"execution": "local", "deployment": "none"}

// launcherSections are the top-level keys of a v1 config; -O overrides
// under them edit the config, any other override edits the recipe it
// becomes (output.dir, which -o sets, for one).
var launcherSections = []string{"defaults", "execution", "deployment", "target", "evaluation", "env_vars", "auxiliary_deployments", "export"}

// isLauncher reports whether a file's top-level keys are a v1 launcher
// config's: one of its sections and none of a recipe's.
func isLauncher(keys []topKey) bool {
	launcher := false
	for _, k := range keys {
		if slices.Contains(recipeKeys, k.name) {
			return false
		}
		launcher = launcher || slices.Contains(launcherKeys, k.name)
	}
	return launcher
}

// recipeOverrides are the overrides that edit the recipe a launcher config
// becomes (loadLauncher applied the others).
func recipeOverrides(os []Override) []Override {
	var out []Override
	for _, o := range os {
		if !launcherOverride(o) {
			out = append(out, o)
		}
	}
	return out
}

// TaskFlag is the override --task NAME makes: it keeps the named task of a
// launcher config's evaluation.tasks (repeatable, like the launcher's -t).
func TaskFlag(name string) Override {
	return Override{Text: "--task " + name, Value: name, task: true}
}

// Args is the override as command-line arguments, for the command a job
// records that makes it again.
func (o Override) Args() []string {
	if o.task {
		return []string{"--task", o.Value.(string)}
	}
	return []string{"-O", o.Text}
}

// launcherOverride reports whether o edits a v1 config rather than the
// recipe it becomes.
func launcherOverride(o Override) bool {
	return o.task || len(o.Path) > 0 && slices.Contains(launcherSections, o.Path[0])
}

// loadLauncher turns a v1 config (its syntax st, read from path) into
// recipe syntax. It returns the files composed and the warnings worth
// saying (what the launcher does that nel leaves to the user).
func loadLauncher(path string, st *ast.StructLit, overrides []Override) (ast.Expr, []string, Errors, error) {
	files := []string{path}
	st, more, err := composeLauncher(path, st)
	files = append(files, more...)
	if err != nil {
		return nil, files, nil, err
	}
	var tasks []Override
	var x ast.Expr = st
	for _, o := range overrides {
		switch {
		case o.task:
			tasks = append(tasks, o)
		case launcherOverride(o):
			if x, err = o.apply(x); err != nil {
				return nil, files, nil, Errors{{File: path, Msg: err.Error()}}
			}
		}
	}
	st = x.(*ast.StructLit)
	keep, err := selectTasks(path, st, tasks)
	if err != nil {
		return nil, files, nil, err
	}
	if err := interpolate(st); err != nil {
		return nil, files, nil, err
	}
	if errs := mandatory(path, optionalMissing(st), keep); len(errs) > 0 {
		return nil, files, nil, errs.sorted().truncated()
	}
	out, warnings, err := translateLauncher(path, st, keep)
	return out, files, warnings, err
}

// composeLauncher applies a v1 config's defaults list: each {group: option}
// entry is the group's file (next to the config in group/option.yaml, else
// the launcher's packaged one) under the group's key, _self_ is the config
// itself (last when not named), and a group the list leaves out gets the
// launcher's default option.
func composeLauncher(path string, st *ast.StructLit) (*ast.StructLit, []string, error) {
	var list []ast.Expr
	if df := removeField(st, "defaults"); df != nil {
		l, ok := df.Value.(*ast.ListLit)
		if !ok {
			return nil, nil, errAt(df.Value.Pos(), path, []any{"defaults"}, "expected a list of {group: option} entries and _self_")
		}
		list = l.Elts
	}
	var layers []*ast.StructLit
	var files []string
	named := map[string]bool{}
	self := -1
	for i, e := range list {
		at := []any{"defaults", i}
		if s, ok := stringOf(e); ok && s == "_self_" {
			self = len(layers)
			continue
		}
		if s, ok := stringOf(e); ok && s != "" {
			// A config of the primary config's own folder, merged at the
			// top level, as Hydra places an entry without a group; or
			// group/option@key, an option placed at another key.
			load := ownConfig
			if strings.Contains(s, "@") {
				load = auxLayer
			}
			layer, file, err := load(path, s, e.Pos(), at)
			if err != nil {
				return nil, nil, err
			}
			files = append(files, file)
			layers = append(layers, layer)
			continue
		}
		group, option, pos, ok := groupOption(e)
		if !ok {
			return nil, nil, errAt(e.Pos(), path, at, "expected a {group: option} entry (execution: local, deployment: vllm, …) or _self_")
		}
		if _, known := launcherGroups[group]; !known {
			return nil, nil, errAt(pos, path, append(at, group), "unknown config group %q: a launcher config's defaults name execution and deployment", group)
		}
		named[group] = true
		layer, file, err := groupFile(path, group, option, pos, append(at, group))
		if err != nil {
			return nil, nil, err
		}
		files = append(files, file)
		layers = append(layers, layer)
	}
	for _, group := range sortedKeys(launcherGroups) {
		if !named[group] {
			layer, file, err := groupFile(path, group, launcherGroups[group], token.NoPos, nil)
			if err != nil {
				return nil, nil, err
			}
			files = append(files, file)
			layers = slices.Insert(layers, 0, layer)
			self += min(self+1, 1) // _self_ keeps its place after the inserted layer
		}
	}
	return withSelf(layers, self, st), files, nil
}

// withSelf merges a defaults list's layers in order with the config st
// itself at index self (_self_'s place; last when self < 0), as both
// NeMo Evaluator's composition and Hydra's do.
func withSelf(layers []*ast.StructLit, self int, st *ast.StructLit) *ast.StructLit {
	if self < 0 {
		self = len(layers)
	}
	layers = slices.Insert(layers, self, st)
	out := &ast.StructLit{Lbrace: st.Lbrace}
	for _, l := range layers {
		out = deepMerge(out, l)
	}
	return out
}

// groupOption reads a {group: option} defaults entry.
func groupOption(e ast.Expr) (group, option string, pos token.Pos, ok bool) {
	st, isStruct := e.(*ast.StructLit)
	if !isStruct || len(st.Elts) != 1 {
		return "", "", token.NoPos, false
	}
	f, isField := st.Elts[0].(*ast.Field)
	if !isField {
		return "", "", token.NoPos, false
	}
	option, ok = stringOf(f.Value)
	return labelOf(f), option, f.Value.Pos(), ok && option != ""
}

// groupFile reads a group's option: the config's own
// <dir>/group/option.yaml first, as Hydra searches the primary config's
// folder, then nel's copy of the launcher's packaged defaults.
func groupFile(path, group, option string, pos token.Pos, at []any) (*ast.StructLit, string, error) {
	name := group + "/" + option + ".yaml"
	file := filepath.Join(filepath.Dir(path), name)
	src, err := os.ReadFile(file)
	if err != nil {
		file = builtinPrefix + "launcher/" + name
		src, err = fs.ReadFile(launcherFS, "launcher/"+name)
	}
	if err != nil || !fs.ValidPath(name) {
		return nil, "", errAt(pos, path, at, "%s %q not found next to the config (%s) or among the launcher's packaged %s options (%s)",
			group, option, filepath.Join(filepath.Dir(path), name), group, strings.Join(packagedOptions(group), ", "))
	}
	st, err := (&composer{}).read(file, src, pos, at) // as composition reads a fragment
	if err != nil {
		return nil, "", err
	}
	return &ast.StructLit{Elts: []ast.Decl{&ast.Field{Label: ast.NewIdent(group), Value: st}}}, file, nil
}

// ownConfig reads a defaults entry without a group: name.yaml next to the
// config.
func ownConfig(path, name string, pos token.Pos, at []any) (*ast.StructLit, string, error) {
	file := filepath.Join(filepath.Dir(path), name+".yaml")
	src, err := os.ReadFile(file)
	if err != nil || !fs.ValidPath(name) {
		return nil, "", errAt(pos, path, at, "%s not found next to the config (%s)", name, file)
	}
	st, err := (&composer{}).read(file, src, pos, at)
	return st, file, err
}

// packagedOptions lists the options nel carries for a group.
func packagedOptions(group string) []string {
	var out []string
	_ = fs.WalkDir(launcherFS, "launcher/"+group, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(p, "launcher/"+group+"/"), ".yaml"))
		}
		return nil
	})
	return out
}

// selectTasks returns which of evaluation.tasks --task names (by index;
// nil: all of them, no --task given); a name the config does not have is
// an error that lists those it has. The list itself is kept, so that every
// task keeps the index -O and messages give it.
func selectTasks(path string, st *ast.StructLit, sel []Override) (map[int]bool, error) {
	if len(sel) == 0 {
		return nil, nil
	}
	var list *ast.ListLit
	if ev, ok := valueAt(st, "evaluation").(*ast.StructLit); ok && ev != nil {
		list, _ = valueAt(ev, "tasks").(*ast.ListLit)
	}
	if list == nil {
		return nil, Errors{{File: path, Msg: sel[0].Text + ": the config has no evaluation.tasks to select from"}}
	}
	var names []string
	for _, e := range list.Elts {
		names = append(names, taskName(e))
	}
	keep := map[int]bool{}
	for _, o := range sel {
		i := slices.Index(names, o.Value.(string))
		if i < 0 {
			return nil, Errors{{File: path, Msg: fmt.Sprintf("%s: no such task in evaluation.tasks (it has %s)", o.Text, strings.Join(names, ", "))}}
		}
		keep[i] = true
	}
	return keep, nil
}

// deselected reports whether the value at path p is in a task --task
// left out (keep as selectTasks returns it).
func deselected(p []any, keep map[int]bool) bool {
	if keep == nil || len(p) < 3 || p[0] != "evaluation" || p[1] != "tasks" {
		return false
	}
	i, ok := p[2].(int)
	return ok && !keep[i]
}

// taskName is a task entry's name ("" when it has none).
func taskName(e ast.Expr) string {
	if st, ok := e.(*ast.StructLit); ok {
		s, _ := stringOf(valueAt(st, "name"))
		return s
	}
	return ""
}

// valueAt is the value of st's field name, nil when there is none.
func valueAt(st *ast.StructLit, name string) ast.Expr {
	if f := fieldOf(st, name); f != nil {
		return f.Value
	}
	return nil
}

// ocEnvRE is OmegaConf's environment resolver: ${oc.env:VAR} or
// ${oc.env:VAR,default}.
var ocEnvRE = regexp.MustCompile(`\$\{oc\.env:(\w+)(?:,([^}]*))?\}`)

// ocPathRE is an absolute OmegaConf interpolation, ${path.to.key}.
var ocPathRE = regexp.MustCompile(`\$\{([a-zA-Z_]\w*(?:\.\w+)*)\}`)

// interpolate resolves OmegaConf's interpolations in every string: a path
// through compose.go's self-reference resolver (written as its
// ${.path.to.key}), an environment variable turned into nel's ${VAR}
// syntax for envexpand.go. Other resolvers (select_not_null, in the
// launcher's server commands) stay as text: nel builds its own commands.
func interpolate(st *ast.StructLit) error {
	_, err := walkStrings(st, nil, func(p []any, lit *ast.BasicLit) (ast.Expr, error) {
		s, _ := stringOf(lit)
		if !strings.Contains(s, "${") {
			return lit, nil
		}
		t := ocEnvRE.ReplaceAllStringFunc(s, func(ref string) string {
			m := ocEnvRE.FindStringSubmatch(ref)
			if strings.Contains(ref, ",") {
				return "${" + m[1] + ":-" + strings.TrimSpace(m[2]) + "}"
			}
			return "${" + m[1] + "}"
		})
		t = ocPathRE.ReplaceAllStringFunc(t, func(ref string) string {
			m := ocPathRE.FindStringSubmatch(ref)
			if !strings.Contains(m[1], ".") {
				return ref // ${VAR}: an environment reference by now
			}
			return "${." + m[1] + "}"
		})
		return stringAt(t, lit.Pos()), nil
	})
	if err != nil {
		return err
	}
	if err := resolveSelfRefs(st); err != nil {
		return err
	}
	typed(st)
	return nil
}

// typed replaces the two readings resolveSelfRefs offers for a string that
// was one reference to a number, boolean or null (textOrTyped) with the
// value: OmegaConf keeps the referenced value's type.
func typed(x ast.Expr) ast.Expr {
	switch n := x.(type) {
	case *ast.StructLit:
		for f := range fields(n) {
			f.Value = typed(f.Value)
		}
	case *ast.ListLit:
		for i, e := range n.Elts {
			n.Elts[i] = typed(e)
		}
	case *ast.BinaryExpr:
		if lit, ok := n.Y.(*ast.BasicLit); ok && n.Op == token.OR {
			return lit
		}
	}
	return x
}

// mandatory reports every value still ??? (OmegaConf's "missing") with
// the -O that sets it, but for tasks --task left out.
func mandatory(path string, x ast.Expr, keep map[int]bool) Errors {
	var errs Errors
	_, _ = walkStrings(x, nil, func(p []any, lit *ast.BasicLit) (ast.Expr, error) {
		if s, _ := stringOf(lit); s == "???" && !deselected(p, keep) {
			errs = append(errs, errAt(lit.Pos(), path, p, "missing mandatory value (???): set it in the config or with -O %s=VALUE", dotted(p))...)
		}
		return lit, nil
	})
	return errs
}

// optionalMissing is st without the ??? the launcher never reads: a
// deployment's checkpoint_path when it serves hf_model_handle (its command
// takes the first that is set).
func optionalMissing(st *ast.StructLit) *ast.StructLit {
	out := &ast.StructLit{Lbrace: st.Lbrace}
	for f := range fields(st) {
		switch labelOf(f) {
		case "deployment":
			d, ok := f.Value.(*ast.StructLit)
			if ok && getIn(d, "hf_model_handle") != nil {
				kept := &ast.StructLit{Lbrace: d.Lbrace}
				for g := range fields(d) {
					if labelOf(g) != "checkpoint_path" {
						kept.Elts = append(kept.Elts, g)
					}
				}
				f = &ast.Field{Label: f.Label, Value: kept}
			}
		}
		out.Elts = append(out.Elts, f)
	}
	return out
}

// dotted writes a path as -O takes it: a.b.0.c.
func dotted(p []any) string {
	parts := make([]string, len(p))
	for i, s := range p {
		parts[i] = fmt.Sprint(s)
	}
	return strings.Join(parts, ".")
}
