package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/cli/clidoc"
	"github.com/nel-eval/nel/internal/exitcode"
)

// update rewrites what is generated from the commands: docs/cli/ and the
// README's exit-code table (make docs runs it).
var update = flag.Bool("update", false, "rewrite docs/cli/ and the README's exit-code table from the commands")

// TestCLIReference: docs/cli/ holds exactly the reference the commands
// generate (go test ./cmd/nel -run 'TestCLIReference|TestREADMEExitCodes' -update).
func TestCLIReference(t *testing.T) {
	root := newRoot(&env{io.Discard, io.Discard})
	clidoc.Test(t, root, filepath.Join("..", "..", "docs", "cli"), *update)
}

const (
	exitBegin = "<!-- exit-codes: generated from internal/exitcode; TestREADME checks it -->\n"
	exitEnd   = "<!-- end exit-codes -->\n"
)

// TestREADMEExitCodes: the README's table of exit statuses is the one
// nel help exit-codes prints, rendered from the same rows.
func TestREADMEExitCodes(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	before, rest, ok := strings.Cut(readme, exitBegin)
	got, after, ok2 := strings.Cut(rest, exitEnd)
	if !ok || !ok2 {
		t.Fatalf("README has no %q … %q block", exitBegin, exitEnd)
	}
	var want strings.Builder
	if err := exitcode.Markdown(&want); err != nil {
		t.Fatal(err)
	}
	if got == want.String() {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+exitBegin+want.String()+exitEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the README's exit-code table is not internal/exitcode's; run make docs. Want:\n%s", want.String())
}
