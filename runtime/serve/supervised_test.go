package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A process service's command runs in the recipe's directory, so a
// relative path with a slash is found there, not in nel's own directory.
func TestSupervisedLooksInDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "srv.sh"), []byte("#!/bin/sh\necho ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // somewhere without srv.sh
	cmd, err := supervised(dir, "./srv.sh", nil)
	if err != nil {
		t.Fatalf("supervised(%s, ./srv.sh): %v", dir, err)
	}
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("ran ./srv.sh in %s: %q, %v", dir, out, err)
	}
	if _, err := supervised(t.TempDir(), "./srv.sh", nil); err == nil {
		t.Error("supervised found ./srv.sh in a directory without it")
	}
}
