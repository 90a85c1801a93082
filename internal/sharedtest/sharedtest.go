// Package sharedtest finds the real benchmark files tests read:
// ../shared/datasets beside the project root (the directory holding
// go.mod), never copied into the repository. A test that needs them skips
// with a clear message when they are absent (DEVELOPERS: "tests that need
// them skip with a clear message when the folder is absent").
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
)

// Datasets returns ../shared/datasets/<rel...> from the project root,
// skipping the test when the project root or that path cannot be found.
func Datasets(tb testing.TB, rel ...string) string {
	tb.Helper()
	dir, err := testenv.FindRoot()
	if err != nil {
		tb.Skip(err)
	}
	p := filepath.Join(append([]string{dir, "..", "shared", "datasets"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("real benchmark data not found at %s (see shared/datasets/README.md): %v", p, err)
	}
	return p
}

// Reference returns ../shared/reference/<rel...> from the project root (the
// published formats nel's output is checked against, e.g. Inspect's log
// schema), skipping the test when it cannot be found.
func Reference(tb testing.TB, rel ...string) string {
	tb.Helper()
	dir, err := testenv.FindRoot()
	if err != nil {
		tb.Skip(err)
	}
	p := filepath.Join(append([]string{dir, "..", "shared", "reference"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("reference files not found at %s: %v", p, err)
	}
	return p
}
