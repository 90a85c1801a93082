// Package clidoc generates the command reference in docs/cli/ from the
// commands themselves (one Markdown page per command, by cobra/doc), and
// checks that the checked-in reference is what they generate. Only the
// tests import it: the binaries stay free of the Markdown renderer.
package clidoc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Generate renders root's reference: file name → content, one page per
// command, named after its path (nel_compile.md).
func Generate(root *cobra.Command) (map[string][]byte, error) {
	root.DisableAutoGenTag = true // no date: the same commands, the same pages
	tmp, err := os.MkdirTemp("", "clidoc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := doc.GenMarkdownTree(root, tmp); err != nil {
		return nil, fmt.Errorf("generate %s's reference: %w", root.Name(), err)
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return nil, err
	}
	pages := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(tmp, e.Name()))
		if err != nil {
			return nil, err
		}
		pages[e.Name()] = b
	}
	return pages, nil
}

// Owned says whether a page in dir belongs to the reference of the
// command named root: root.md and root_*.md (nel-run's pages are not
// nel's).
func Owned(root, name string) bool {
	return name == root+".md" || strings.HasPrefix(name, root+"_") && strings.HasSuffix(name, ".md")
}

// Check compares dir's pages of root with what the commands generate and
// returns one line per page that differs, is missing or is left over.
// With update it rewrites dir instead, and returns nothing.
func Check(root *cobra.Command, dir string, update bool) ([]string, error) {
	pages, err := Generate(root)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var stale []string
	for _, e := range ents {
		if _, ok := pages[e.Name()]; !ok && Owned(root.Name(), e.Name()) {
			stale = append(stale, e.Name()+": no such command any more")
			if update {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					return nil, err
				}
			}
		}
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil && bytes.Equal(got, want) {
			continue
		}
		stale = append(stale, name+": not what the command generates")
		if update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, name), want, 0o644); err != nil {
				return nil, err
			}
		}
	}
	if update {
		return nil, nil
	}
	slices.Sort(stale)
	return stale, nil
}

// Test fails t for each page of dir that is stale (Check), naming the
// command that makes it again; with update it rewrites them instead.
func Test(t testing.TB, root *cobra.Command, dir string, update bool) {
	t.Helper()
	stale, err := Check(root, dir, update)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		t.Errorf("%s: %s; run make docs", filepath.Join(dir, s[:strings.Index(s, ":")]), s[strings.Index(s, ":")+2:])
	}
}
