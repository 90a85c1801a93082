// Package compiler turns a recipe file into a validated recipe, its hashes, a
// plan, and the job script that runs the plan: load → validate → canonicalize
// → hash → plan → emit.
package compiler

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
	cueyaml "cuelang.org/go/encoding/yaml"

	schema "github.com/nel-eval/nel/cue"
	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/plan"
)

// Limits that keep a hostile or mistaken input from turning into minutes of
// evaluation. They are far above any real recipe.
const (
	MaxRecipeBytes = 8 << 20
	MaxBenchmarks  = 1000
	MaxServices    = 256
)

// Loader validates recipes against the embedded schema. A Loader is not safe
// for concurrent use (cue.Context is not).
type Loader struct {
	// IgnoreLock loads a recipe as if it had no lock file (nel lock,
	// which resolves everything afresh).
	IgnoreLock bool
	// LookupEnv reads the environment ${VAR} references expand from
	// (envexpand.go); nil is os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// RemotePaths says that the recipe's local datasets may be visible
	// only from the compute nodes (--remote-paths; a recipe says it with
	// cluster.remote_paths): one that is not here is a warning.
	RemotePaths bool

	ctx          *cue.Context
	schema       cue.Value // the whole schema file
	recipe       cue.Value // #Recipe
	defaultSlurm Cluster   // see Source.defaultSlurm
}

// getenv reads the environment the recipe is loaded in: LookupEnv, else
// the process's.
func (l *Loader) getenv(name string) (string, bool) {
	if l.LookupEnv != nil {
		return l.LookupEnv(name)
	}
	return os.LookupEnv(name)
}

// lookupEnv is the variable's value in the environment the recipe is
// loaded in ("" when unset).
func (l *Loader) lookupEnv(name string) string {
	v, _ := l.getenv(name)
	return v
}

// NewLoader compiles the embedded schema.
func NewLoader() (*Loader, error) {
	ctx := cuecontext.New()
	s := ctx.CompileString(schema.Source, cue.Filename(schema.Filename))
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("compile embedded schema: %w", err)
	}
	l := &Loader{ctx: ctx, schema: s, recipe: s.LookupPath(cue.ParsePath("#Recipe"))}
	def := s.LookupPath(cue.ParsePath("#SlurmCluster")).
		FillPath(cue.ParsePath("node_pools.default"), map[string]any{})
	if err := def.Decode(&l.defaultSlurm); err != nil {
		return nil, fmt.Errorf("schema default slurm cluster: %w", err)
	}
	return l, nil
}

// Source is a validated recipe.
type Source struct {
	Path      string     // as given by the user
	Files     []string   // Path, then the files it composed (fragments, _base_ files, playbooks)
	Dir       string     // directory relative paths in the recipe resolve against
	Format    string     // "cue", "yaml" or "json"
	Overrides []Override // applied before validation
	Value     cue.Value  // the recipe unified with #Recipe: concrete, defaults filled
	Recipe    *Recipe    // decoded from Value

	// Lock is the recipe's lock file (LockFile, beside it), nil when it
	// has none. The recipe's images are already pinned to it.
	Lock     *Lock
	LockFile string
	dataPins [][]plan.DataPin // per benchmark, from Lock
	// local are the local files the recipe reads, digested when it was
	// validated (LocalFiles).
	local []LocalFile
	// endpoints are services UseEndpoint pointed elsewhere, by name: the
	// plan hash covers them.
	endpoints map[string]string

	// harborEnv is $HARBOR_DATASETS_DIR as the recipe was loaded ("" when
	// unset); harbor holds each harbor:// benchmark's dataset, by index
	// (harbor.go).
	harborEnv string
	harbor    map[int]plan.HarborTasks
	// gymCmd names the gym service each gym://cmd: benchmark starts, by
	// index, once withGymCmdServers has added them (gym.go).
	gymCmd map[int]string
	// harborImage is, by benchmark index, why a task's image cannot be
	// pulled by name for a container sandbox's sessions (harbor.go).
	harborImage map[int]error
	// instruction is each benchmark's instruction_template text, by
	// index, when one was read (instruction.go).
	instruction map[int]string

	// deferredRefs are the paths of strings that hold a literal ${VAR}
	// (written $${VAR}) for the node to resolve.
	deferredRefs [][]any

	// defaultSlurm is the schema's slurm cluster with one default node
	// pool: where a recipe for a local run goes when compiled for SLURM.
	defaultSlurm Cluster

	// Warnings are what the recipe's checks found worth saying that does
	// not stop it (a dataset left to the compute nodes), positioned.
	Warnings Errors
	// remotePaths is Loader.RemotePaths as the recipe was loaded.
	remotePaths bool
}

// LoadFile reads and validates the recipe at path with the overrides applied.
func (l *Loader) LoadFile(path string, overrides []Override) (*Source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read recipe: %w", err)
	}
	if fi.IsDir() {
		return nil, Errors{{File: path, Msg: "is a directory, expected a recipe file (.cue, .yaml, .yml or .json)"}}
	}
	if fi.Size() > MaxRecipeBytes {
		return nil, Errors{{File: path, Msg: fmt.Sprintf("recipe is %d bytes, more than the %d a recipe may have", fi.Size(), MaxRecipeBytes)}}
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read recipe: %w", err)
	}
	s, err := l.Load(path, src, overrides)
	if err != nil || l.IgnoreLock {
		return s, err
	}
	if err := s.applyLock(); err != nil {
		return nil, err
	}
	return s, nil
}

// Load validates recipe source text; path names it in errors and decides
// the format by its extension.
func (l *Loader) Load(path string, src []byte, overrides []Override) (s *Source, err error) {
	// The CUE and YAML parsers are not written for hostile input; a panic
	// deep inside them must still end as a positioned error, not a trace.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, Errors{{File: path, Msg: fmt.Sprintf("cannot read recipe (parser failure: %v)", r)}}
		}
	}()
	if len(src) > MaxRecipeBytes {
		return nil, Errors{{File: path, Msg: fmt.Sprintf("recipe is %d bytes, more than the %d a recipe may have", len(src), MaxRecipeBytes)}}
	}
	format, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
		return nil, Errors{{File: path, Line: 1, Column: 1, Msg: "not a text file: expected UTF-8 " + format}}
	}
	if len(bytes.TrimSpace(src)) == 0 {
		return nil, Errors{{File: path, Msg: "recipe is empty: expected services and benchmarks"}}
	}

	pd, err := l.parse(path, format, src, overrides)
	if err != nil {
		return nil, err
	}
	data, files := pd.data, pd.files
	if err := data.Err(); err != nil {
		return nil, l.translate(files, err, data, overrides)
	}
	if k := data.IncompleteKind(); k == cue.TopKind {
		// Only comments (or a YAML document marker): nothing was written.
		return nil, Errors{{File: path, Msg: "recipe is empty: expected services and benchmarks"}}
	} else if k != cue.StructKind {
		return nil, Errors{{File: path, Line: 1, Column: 1, Msg: fmt.Sprintf("expected a mapping with services and benchmarks, found %v", k)}}
	}
	if err := checkSizes(path, data); err != nil {
		return nil, err
	}

	v := l.recipe.Unify(data)
	if err := v.Validate(cue.Concrete(true), cue.Final(), cue.All()); err != nil {
		return nil, l.translate(files, err, data, overrides)
	}
	if errs := checkNumbers(&Source{Path: path, Files: files, Value: v, Overrides: overrides}); len(errs) > 0 {
		return nil, errs.sorted().truncated()
	}
	r, err := decodeRecipe(v)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	s = &Source{
		Path:      path,
		Files:     files,
		Dir:       filepath.Dir(path),
		Format:    format,
		Overrides: overrides,
		Value:     v,
		Recipe:    r,

		Warnings:     pd.warnings,
		deferredRefs: pd.deferred,
		defaultSlurm: l.defaultSlurm,
		remotePaths:  l.RemotePaths,
		harborEnv:    l.lookupEnv(harbor.EnvDatasetsDir),
	}
	if errs := checkRules(s); len(errs) > 0 {
		return nil, errs.sorted().truncated()
	}
	return s, nil
}

// ComposedFrom lists the files besides Path that the recipe was composed
// from (defaults fragments, _base_ files, playbook files), nel's own
// built-in ones left out: they come with nel.
func (s *Source) ComposedFrom() []string {
	var out []string
	for _, f := range s.fileSet()[1:] {
		if !strings.HasPrefix(f, builtinPrefix) {
			out = append(out, f)
		}
	}
	return out
}

// fileSet is the files positions in the recipe may point into.
func (s *Source) fileSet() fileSet {
	if len(s.Files) == 0 {
		return fileSet{s.Path}
	}
	return s.Files
}

func formatOf(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".cue":
		return "cue", nil
	case ".yaml", ".yml":
		return "yaml", nil
	case ".json":
		return "json", nil
	}
	return "", Errors{{File: path, Msg: "unknown recipe format: expected a .cue, .yaml, .yml or .json file"}}
}

// parsed is a recipe's data, ready for the schema.
type parsed struct {
	data     cue.Value
	files    fileSet // the recipe, then the files it composed
	deferred [][]any // strings holding a literal ${VAR} written $${VAR}
	warnings Errors  // what a launcher (v1) config does that nel leaves to the user
}

// parse returns the recipe's data: composed (YAML and JSON, compose.go),
// with the overrides applied, playbooks merged (playbook.go) and ${VAR}
// expanded (envexpand.go), in NeMo Evaluator's order. Values keep their
// positions in the files they came from so that errors can point at them.
func (l *Loader) parse(path, format string, src []byte, overrides []Override) (parsed, error) {
	pd := parsed{files: fileSet{path}}
	var expr ast.Expr
	switch format {
	case "yaml", "json":
		x, err := parseRecipeData(path, format, src)
		if err != nil {
			return pd, err
		}
		keys := syntaxKeys(x)
		if err := checkShape(path, keys); err != nil {
			return pd, err
		}
		var files []string
		if isLauncher(keys) {
			expr, files, pd.warnings, err = loadLauncher(path, x.(*ast.StructLit), overrides)
			overrides = recipeOverrides(overrides)
		} else {
			expr, files, err = compose(path, x)
		}
		pd.files = files
		if err != nil {
			return pd, err
		}
	default:
		v, err := l.parseCUE(path, src)
		if err == nil {
			keys := valueKeys(v)
			err = checkShape(path, keys)
			if err == nil && isLauncher(keys) {
				err = Errors{{File: path, Line: 1, Column: 1, Msg: "a NeMo Evaluator launcher (v1) config is YAML: write it as a .yaml file, or write the nel recipe it means (nel convert prints it)"}}
			}
		}
		if err != nil || len(overrides) == 0 && !needsDataPass(v) {
			pd.data = v
			return pd, err
		}
		// Overrides replace values, which CUE's unification cannot do,
		// and so do playbooks and ${VAR} expansion: evaluate the user's
		// CUE (references, comprehensions, hidden fields) down to data
		// and edit that.
		x, ok := v.Syntax(cue.Final(), cue.Docs(false), cue.Hidden(false), cue.Definitions(false)).(ast.Expr)
		if !ok {
			return pd, Errors{{File: path, Line: 1, Column: 1, Msg: "expected a mapping with services and benchmarks"}}
		}
		carryPositions(x, v)
		expr = x
	}
	for _, o := range overrides {
		if o.task {
			return pd, Errors{{File: path, Msg: o.Text + ": --task selects a task of a NeMo Evaluator launcher (v1) config; this is a nel recipe (select its benchmarks with -O or edit them)"}}
		}
		var err error
		if expr, err = o.apply(expr); err != nil {
			return pd, Errors{{File: path, Msg: err.Error()}}
		}
	}
	expr, books, err := applyPlaybooks(expr, path)
	pd.files = append(pd.files, books...)
	if err != nil {
		return pd, err
	}
	expr, exp, err := expandEnv(expr, path, overrides, l.getenv)
	if err != nil {
		return pd, err
	}
	pd.deferred = exp.deferred
	pd.data = l.ctx.BuildExpr(expr, cue.Filename(path))
	return pd, nil
}

// parsePlain reads a data or CUE file as it is: no composition, overrides,
// playbooks or ${VAR} expansion (a gate policy, whose defaults key is its
// own).
func (l *Loader) parsePlain(path, format string, src []byte) (cue.Value, error) {
	if format == "cue" {
		return l.parseCUE(path, src)
	}
	x, err := parseRecipeData(path, format, src)
	if err != nil {
		return cue.Value{}, err
	}
	return l.ctx.BuildExpr(x, cue.Filename(path)), nil
}

// parseRecipeData reads a YAML or JSON recipe into syntax.
func parseRecipeData(path, format string, src []byte) (ast.Expr, error) {
	if format == "json" {
		x, err := cuejson.Extract(path, src)
		if err != nil {
			return nil, fromSyntaxError(path, err)
		}
		return x, nil
	}
	f, err := cueyaml.Extract(path, src)
	if err != nil {
		return nil, yamlSyntaxHints(fromSyntaxError(path, err), src)
	}
	return fileExpr(f), nil
}

// needsDataPass reports whether a CUE recipe has what only its data form
// can take: a playbook, or ${VAR} text outside the fields that keep it.
func needsDataPass(v cue.Value) bool {
	found := false
	var walk func(v cue.Value, path []any)
	walk = func(v cue.Value, path []any) {
		if found {
			return
		}
		switch v.IncompleteKind() {
		case cue.StructKind:
			it, err := v.Fields()
			for err == nil && it.Next() {
				name := it.Selector().Unquoted()
				found = found || len(path) == 2 && path[0] == "benchmarks" && name == "playbook"
				walk(it.Value(), append(slices.Clip(path), name))
			}
		case cue.ListKind:
			it, err := v.List()
			for i := 0; err == nil && it.Next(); i++ {
				walk(it.Value(), append(slices.Clip(path), i))
			}
		case cue.StringKind:
			s, err := v.String()
			found = err == nil && strings.Contains(s, "${") && !keepsReferences(path)
		}
	}
	walk(v, nil)
	return found
}

func (l *Loader) parseCUE(path string, src []byte) (cue.Value, error) {
	f, err := parser.ParseFile(path, src, parser.ParseComments)
	if err != nil {
		return cue.Value{}, fromSyntaxError(path, err)
	}
	for spec := range f.ImportSpecs() {
		p := spec.Pos()
		return cue.Value{}, Errors{{File: path, Line: p.Line(), Column: p.Column(), Msg: "imports are not supported in recipes: a recipe must be self-contained so its hash means one thing"}}
	}
	v := l.ctx.BuildFile(f)
	if err := v.Err(); err != nil {
		return cue.Value{}, l.translate(fileSet{path}, err, v, nil)
	}
	return v, nil
}

// carryPositions copies the positions of v's values onto x, the syntax
// exported from v, which has none of its own: errors in a CUE recipe given
// -O overrides still point into the file.
func carryPositions(x ast.Expr, v cue.Value) {
	switch n := x.(type) {
	case *ast.StructLit:
		for f := range fields(n) {
			name, _, err := ast.LabelName(f.Label)
			if err != nil {
				continue
			}
			fv := v.LookupPath(cue.MakePath(cue.Str(name)))
			if !fv.Exists() {
				continue
			}
			label, value := fv.Pos(), fv.Pos()
			if src, ok := fv.Source().(*ast.Field); ok && src.Value != nil {
				label, value = src.Label.Pos(), src.Value.Pos()
			}
			setPos(f.Label, label)
			setPos(f.Value, value)
			carryPositions(f.Value, fv)
		}
	case *ast.ListLit:
		for i, e := range n.Elts {
			ev := v.LookupPath(cue.MakePath(cue.Index(i)))
			if !ev.Exists() {
				continue
			}
			if src := ev.Source(); src != nil {
				setPos(e, src.Pos())
			}
			carryPositions(e, ev)
		}
	}
}

func setPos(n ast.Node, p token.Pos) {
	if p.IsValid() {
		ast.SetPos(n, p)
	}
}

// fileExpr turns a data file (YAML or JSON extracted into CUE syntax) into
// one struct expression.
func fileExpr(f *ast.File) ast.Expr {
	if len(f.Decls) == 1 {
		if e, ok := f.Decls[0].(*ast.EmbedDecl); ok {
			return e.Expr // a top-level list or scalar
		}
	}
	return &ast.StructLit{Elts: f.Decls, Lbrace: f.Pos()}
}

// yamlErrRE matches the YAML decoder's plain errors: "file:line: message".
var yamlErrRE = regexp.MustCompile(`^(?:yaml: )?(?:.*?):(\d+):(?:(\d+):)? (.*)$`)

func fromSyntaxError(path string, err error) error {
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		p := e.Position()
		msg := msgOf(e)
		if !p.IsValid() {
			if m := yamlErrRE.FindStringSubmatch(err.Error()); m != nil {
				line, _ := strconv.Atoi(m[1])
				col, _ := strconv.Atoi(m[2])
				out = append(out, Error{File: path, Line: line, Column: max(col, 1), Msg: "invalid syntax: " + m[3]})
				continue
			}
		}
		if msg == "" {
			msg = err.Error()
		}
		out = append(out, Error{File: path, Line: p.Line(), Column: p.Column(), Msg: "invalid syntax: " + strings.TrimPrefix(msg, path+": ")})
	}
	if len(out) == 0 {
		out = Errors{{File: path, Msg: err.Error()}}
	}
	return out.sorted().truncated()
}

// yamlParserProblems are the messages of yaml.v3's parser (as opposed to
// its scanner). For these it reports a 0-based line: the line where the
// enclosing block or flow collection starts, or, when that is the first
// line, the offending token's.
var yamlParserProblems = []string{
	"did not find expected",
	"found duplicate %",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// yamlSyntaxHints corrects the line of the YAML parser's errors and says
// what two of its terse messages usually mean.
func yamlSyntaxHints(err error, src []byte) error {
	es, ok := err.(Errors)
	if !ok {
		return err
	}
	lines := bytes.Split(src, []byte("\n"))
	for i, e := range es {
		msg := strings.TrimPrefix(e.Msg, "invalid syntax: ")
		if e.Line > 0 && slices.ContainsFunc(yamlParserProblems, func(p string) bool { return strings.HasPrefix(msg, p) }) {
			es[i].Line++
			if msg == "did not find expected key" {
				es[i].Msg += " (in the mapping that starts on this line: is a line below it indented differently from its siblings?)"
			}
			continue
		}
		if e.Line < 1 || e.Line > len(lines) || !strings.Contains(msg, "cannot start any token") {
			continue
		}
		if t := bytes.IndexByte(lines[e.Line-1], '\t'); t >= 0 {
			es[i].Column = t + 1
			es[i].Msg += " (a tab: YAML indents with spaces only)"
		}
	}
	return es
}

func msgOf(e cueerrors.Error) string {
	format, args := e.Msg()
	return fmt.Sprintf(format, args...)
}

// checkSizes refuses recipes too large to be real before the schema spends
// time on them.
func checkSizes(path string, data cue.Value) error {
	for _, c := range []struct {
		field string
		max   int
	}{{"benchmarks", MaxBenchmarks}, {"services", MaxServices}} {
		f := data.LookupPath(cue.MakePath(cue.Str(c.field)))
		if !f.Exists() {
			continue
		}
		n := 0
		switch f.IncompleteKind() {
		case cue.ListKind:
			if it, err := f.List(); err == nil {
				for it.Next() {
					n++
				}
			}
		case cue.StructKind:
			if it, err := f.Fields(); err == nil {
				for it.Next() {
					n++
				}
			}
		}
		if n > c.max {
			p := f.Pos()
			return Errors{{File: path, Line: p.Line(), Column: p.Column(), Path: c.field,
				Msg: fmt.Sprintf("expected at most %d entries, found %d", c.max, n)}}
		}
	}
	return nil
}

// posOf finds where the value at path (or its nearest ancestor) was written
// in the user's file.
func posOf(files fileSet, v cue.Value, sels []cue.Selector) token.Pos {
	for n := len(sels); n >= 0; n-- {
		x := v.LookupPath(cue.MakePath(sels[:n]...))
		if !x.Exists() {
			continue
		}
		if p := x.Pos(); p.IsValid() && files.has(p.Filename()) {
			return p
		}
		// A value unified with the schema may report the schema's
		// position; the user's own conjunct still has the file's.
		if op, args := x.Expr(); op == cue.AndOp {
			for _, a := range args {
				if p := a.Pos(); p.IsValid() && files.has(p.Filename()) {
					return p
				}
			}
		}
	}
	return token.NoPos
}
