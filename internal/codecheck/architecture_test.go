package codecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
)

// mapEntry is a code-map line of ARCHITECTURE.md: "- `path` — its job".
var mapEntry = regexp.MustCompile("(?m)^- `([a-z0-9/_-]+)` — ")

// TestArchitecture keeps ARCHITECTURE.md's code map true: every package of
// the module has its line, and every line names a package that exists.
func TestArchitecture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, codeMap, ok := strings.Cut(string(b), "\n## Code map\n")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no Code map section")
	}
	codeMap, _, _ = strings.Cut(codeMap, "\n## ")
	named := map[string]bool{}
	for _, m := range mapEntry.FindAllStringSubmatch(codeMap, -1) {
		named[m[1]] = true
	}
	exists := map[string]bool{}
	for _, p := range listPackages(t) {
		exists[p.path] = true
		if !named[p.path] {
			t.Errorf("package %s is not in ARCHITECTURE.md's code map", p.path)
		}
	}
	for p := range named {
		if !exists[p] {
			t.Errorf("ARCHITECTURE.md's code map names %s, which is not a package", p)
		}
	}
}
