package tbench

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/gitrev"
	"github.com/nel-eval/nel/runtime/plan"
)

// gitRepo commits a Terminal-Bench v1 repository of two tasks and returns
// its folder and the commit.
func gitRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, filepath.Join(dir, "tasks", "one"), v1Task())
	writeTree(t, filepath.Join(dir, "tasks", "two"), v1Task())
	var rev string
	for _, args := range [][]string{{"init", "--quiet"}, {"add", "."}, {"commit", "--quiet", "-m", "tasks"}, {"rev-parse", "HEAD"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		rev = strings.TrimSpace(string(out))
	}
	return dir, rev
}

// Prepare fetches and converts once: a second call finds the folder (the
// repository may be gone by then), and the -hard-style list is honoured.
func TestPrepare(t *testing.T) {
	repo, rev := gitRepo(t)
	cache := filepath.Join(t.TempDir(), "sources")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := plan.HarborGit{URL: repo, Revision: rev, Tasks: []string{"two"}}
	dir, err := Prepare(context.Background(), "tb-sub", g, cache, log)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "tb-sub@"+rev); dir != want {
		t.Errorf("folder %s, want %s", dir, want)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "two" {
		t.Errorf("tasks %v, want two alone", ents)
	}
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	again, err := Prepare(context.Background(), "tb-sub", g, cache, log)
	if err != nil || again != dir {
		t.Errorf("again: %s, %v; want the same folder, nothing fetched", again, err)
	}
	// Another benchmark of the same commit converts from the cached
	// clone, without the repository.
	if _, err := Prepare(context.Background(), "tb-all", plan.HarborGit{URL: repo, Revision: rev}, cache, log); err != nil {
		t.Errorf("another list at the same commit: %v", err)
	}
	// A commit not cached and a repository gone: the infrastructure's.
	other := strings.Repeat("cd", 20)
	_, err = Prepare(context.Background(), "tb-all", plan.HarborGit{URL: repo, Revision: other}, cache, log)
	var ge *gitrev.Error
	if !errors.As(err, &ge) || ge.Revision != other || ge.URL != repo {
		t.Errorf("a repository gone: %v, want a *gitrev.Error naming it and the commit", err)
	}
}
