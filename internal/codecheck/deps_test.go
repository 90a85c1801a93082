package codecheck

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
)

const module = "github.com/nel-eval/nel/"

// pkg is one package of the module as go list sees it.
type pkg struct {
	path    string   // module-relative: runtime/shard
	imports []string // module-relative, non-test
	tests   []string // module-relative, from _test.go files
}

// listPackages runs go list over the module.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	cmd.Dir = testenv.Root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	local := func(list string) []string {
		var ps []string
		for _, p := range strings.Fields(list) {
			if rel, ok := strings.CutPrefix(p, module); ok {
				ps = append(ps, rel)
			}
		}
		return ps
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "|", 3)
		pkgs = append(pkgs, pkg{strings.TrimPrefix(f[0], module), local(f[1]), local(f[2])})
	}
	return pkgs
}

// nelRunDeps is every package of the module nel-run links.
func nelRunDeps(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "./cmd/nel-run")
	cmd.Dir = testenv.Root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/nel-run: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, module); ok {
			deps[rel] = true
		}
	}
	return deps
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// isTestHelper is a package that exists for tests (mergetest, storetest,
// reporttest, …): named so, and imported by tests only.
func isTestHelper(p string) bool {
	last := p[strings.LastIndex(p, "/")+1:]
	return strings.HasSuffix(last, "test") && last != "test"
}

// The rules that keep the layout showing the data flow (ARCHITECTURE.md):
//   - runtime/ holds exactly what nel-run links: every package under it
//     is in nel-run's dependencies (test helpers aside);
//   - nothing under runtime/ imports analysis/, compiler/, templates/,
//     local/ or cmd/, not even in a test: the node side knows the plan
//     (runtime/plan), never the compiler or what runs afterwards;
//   - test helpers are imported by tests only;
//   - nothing imports cmd/.
func TestDependencyRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	pkgs := listPackages(t)
	deps := nelRunDeps(t)
	if !deps["runtime/shard"] || !deps["runtime/plan"] {
		t.Fatalf("nel-run's dependencies were not read: %v", deps)
	}
	forbiddenForRuntime := []string{"analysis", "compiler", "templates", "local", "cmd"}
	helpers := map[string]bool{}
	for _, p := range pkgs {
		if isTestHelper(p.path) {
			helpers[p.path] = true
		}
	}
	seen := 0
	for _, p := range pkgs {
		if under(p.path, "runtime") {
			seen++
			if !helpers[p.path] && !deps[p.path] {
				t.Errorf("%s is under runtime/ but nel-run does not link it: move it where its users are (analysis/, local/, compiler/)", p.path)
			}
			for _, imp := range append(slices.Clone(p.imports), p.tests...) {
				for _, f := range forbiddenForRuntime {
					if under(imp, f) {
						t.Errorf("%s imports %s: nothing under runtime/ may import %s/", p.path, imp, f)
					}
				}
			}
		}
		for _, imp := range p.imports {
			if helpers[imp] && !helpers[p.path] {
				t.Errorf("%s imports the test helper %s outside its tests", p.path, imp)
			}
			if under(imp, "cmd") {
				t.Errorf("%s imports %s: commands are not libraries", p.path, imp)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("only %d packages under runtime/: the list was not read", seen)
	}
}
