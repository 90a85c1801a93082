package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
)

// The longest a function may be, in lines from its func keyword to its
// closing brace (issue 18). A function longer than maxFuncLines does
// several things that want names of their own; a command does nothing but
// parse flags and call a package, which takes fewer.
const (
	maxFuncLines    = 120
	maxCommandLines = 60
)

// longFunc is a function over a limit.
type longFunc struct {
	pos   string // file:line, relative to the project root
	name  string // Recv.Name or Name
	lines int
}

// longFuncs returns the functions over limit in the non-test, non-generated
// Go files under the project root for which include is true (it gets the
// file's slash-separated path relative to the root).
func longFuncs(t *testing.T, limit int, include func(rel string) bool) []longFunc {
	t.Helper()
	root := testenv.Root(t)
	fset := token.NewFileSet()
	var long []longFunc
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// What the go command skips, and what it never builds here.
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || !include(rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Pos())
			n := fset.Position(fn.End()).Line - start.Line + 1
			if n > limit {
				long = append(long, longFunc{pos: rel + ":" + strconv.Itoa(start.Line), name: funcName(fn), lines: n})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no Go files found under %s", root)
	}
	return long
}

// funcName is fn's name as a reader looks it up: Recv.Name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok { // a generic receiver
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

func underCmd(rel string) bool { return strings.HasPrefix(rel, "cmd/") }

// TestFunctionLength checks that no function outside cmd/ is over
// maxFuncLines lines: split it where its steps have names.
// TestCommandFunctionLength holds cmd/ to its own, lower limit.
func TestFunctionLength(t *testing.T) {
	for _, f := range longFuncs(t, maxFuncLines, func(rel string) bool { return !underCmd(rel) }) {
		t.Errorf("%s: %s is %d lines, over %d: split it along its steps", f.pos, f.name, f.lines, maxFuncLines)
	}
}

// TestCommandFunctionLength checks that no function under cmd/ is over
// maxCommandLines lines: a command parses its flags and calls a package
// (issue 18), and what takes longer belongs in the package.
func TestCommandFunctionLength(t *testing.T) {
	for _, f := range longFuncs(t, maxCommandLines, underCmd) {
		t.Errorf("%s: %s is %d lines, over %d: a command parses flags and calls a package; move the rest into one", f.pos, f.name, f.lines, maxCommandLines)
	}
}
