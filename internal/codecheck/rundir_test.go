package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
)

// runFolderLiteral matches a Go string literal that spells a path of the
// run folder, whose layout runtime/rundir owns: a file name only a run
// folder has, .nel/, a plan file's or a shard file's name.
var runFolderLiteral = regexp.MustCompile(`results\.parquet|trajectories\.parquet|eval\.json|published\.json|merge\.lock|source\.json|\.journal|\.nel/|^\.nel$|^logs$|shard-%|(^|/)plan-`)

// runFolderTemplate matches the same in a job template, where paths
// follow $NEL_OUT.
var runFolderTemplate = regexp.MustCompile(`\.nel|/logs|/shards|\.parquet|\.sbatch|\.journal`)

// runFolderPending are the files and folders that still spell run-folder
// paths, each with what is left to do. A file listed here that spells none
// fails the test, so the list only shrinks. It is empty: every file asks
// rundir; an entry belongs here only while code is being moved.
var runFolderPending = map[string]string{}

// TestRunFolderOwner checks that only runtime/rundir spells the run
// folder's paths (issue 18: "the literal results.parquet appears in one
// non-test file"): everyone else asks it, so the layout changes in one
// place. Comments and tests may spell paths; code may not.
func TestRunFolderOwner(t *testing.T) {
	root := testenv.Root(t)
	spelled := map[string][]string{} // file → the literals
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin" || rel == "runtime/rundir") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go"):
			lits, err := goRunFolderLiterals(path)
			if err != nil {
				return err
			}
			if len(lits) > 0 {
				spelled[rel] = lits
			}
		case strings.HasSuffix(rel, ".tmpl"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if m := runFolderTemplate.FindAllString(string(b), -1); len(m) > 0 {
				spelled[rel] = m
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, file := range sortedKeys(spelled) {
		if p := pendingFor(file); p != "" {
			used[p] = true
			continue
		}
		t.Errorf("%s spells run-folder paths %q: ask runtime/rundir instead", file, spelled[file])
	}
	for p, why := range runFolderPending {
		if !used[p] {
			t.Errorf("%s no longer spells run-folder paths: take it off runFolderPending (%s)", p, why)
		}
	}
}

// pendingFor returns the runFolderPending entry that covers file, or "".
func pendingFor(file string) string {
	for p := range runFolderPending {
		if file == p || strings.HasSuffix(p, "/") && strings.HasPrefix(file, p) {
			return p
		}
	}
	return ""
}

// goRunFolderLiterals returns the string literals of a Go file that
// spell run-folder paths. Struct tags are literals too, and never do. A
// literal of several lines is prose (a command's help, which tells a
// person where the files are), not a path the code uses, and is left out.
func goRunFolderLiterals(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	// A literal that only looks like a run-folder path (an AWS service
	// named "logs") is marked on its line with notRunPath.
	exempt := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			if strings.Contains(c.Text, notRunPath) {
				exempt[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING || exempt[fset.Position(lit.Pos()).Line] {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err == nil && !strings.Contains(s, "\n") && runFolderLiteral.MatchString(s) {
			out = append(out, s)
		}
		return true
	})
	return out, nil
}

// notRunPath, in a comment on a literal's line, says the literal is not a
// run-folder path.
const notRunPath = "nel:not-a-run-path"

// The marker exempts its own line only.
func TestNotRunPathMarker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.go")
	src := "package x\n\nconst (\n\ta = \"logs\" // " + notRunPath + ": an AWS service\n\tb = \"logs\"\n)\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := goRunFolderLiterals(path)
	if err != nil || len(got) != 1 || got[0] != "logs" {
		t.Errorf("literals %q (err %v), want the unmarked \"logs\" only", got, err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
