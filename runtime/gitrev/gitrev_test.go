package gitrev

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a git repository with two commits and returns its folder and
// the commits' hashes, oldest first.
func repo(t *testing.T) (string, []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %s", args, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "--quiet", "-b", "main")
	var revs []string
	for _, v := range []string{"one", "two"} {
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", "f.txt")
		run("commit", "--quiet", "-m", v)
		revs = append(revs, run("rev-parse", "HEAD"))
	}
	return dir, revs
}

func TestFetch(t *testing.T) {
	src, revs := repo(t)
	ctx := context.Background()
	// The older commit, not the branch's head: the pin, not what upstream
	// holds today.
	dst := filepath.Join(t.TempDir(), "cache", revs[0])
	if err := Fetch(ctx, src, revs[0], dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "f.txt")); err != nil || string(b) != "one" {
		t.Errorf("f.txt = %q, %v; want the first commit's", b, err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".git")); err == nil {
		t.Error(".git is left in the tree")
	}
	// A folder that is there is the tree: the source may be gone.
	if err := Fetch(ctx, filepath.Join(t.TempDir(), "gone"), revs[0], dst); err != nil {
		t.Errorf("a cached revision: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Dir(dst))
	if len(ents) != 1 {
		t.Errorf("the cache holds %d entries, want the tree alone (no temporary folder)", len(ents))
	}
}

// A revision the repository lacks, or a repository that is not there, is
// an *Error naming the URL and the revision, with no password in it.
func TestFetchFailures(t *testing.T) {
	src, _ := repo(t)
	ctx := context.Background()
	missing := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		url, rev, want string
	}{
		{src, missing, "fetching " + src + " at revision " + missing + ": the repository has no such commit"},
		{filepath.Join(src, "nope"), missing, "fetching " + filepath.Join(src, "nope") + " at revision " + missing + ": git fetch:"},
		{"https://user:s3cret@127.0.0.1:1/tb.git", missing, "fetching https://xxxxx@127.0.0.1:1/tb.git at revision " + missing + ": git fetch:"},
		{src, "main", "at revision main: not a full commit hash"},
		{"--upload-pack=touch /tmp/x", missing, "cannot start with -"},
	} {
		dst := filepath.Join(t.TempDir(), "x")
		err := Fetch(ctx, tc.url, tc.rev, dst)
		var ge *Error
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "infrastructure error") {
			t.Errorf("Fetch(%s, %s) = %v, want an *Error with %q", tc.url, tc.rev, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the password is in the message: %v", err)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Errorf("%s: a failed fetch left the folder", tc.url)
		}
	}
}

func TestValidRevision(t *testing.T) {
	for rev, want := range map[string]bool{
		strings.Repeat("a1", 20): true, strings.Repeat("0f", 32): true,
		strings.Repeat("A1", 20): false, "main": false, "v1.0": false, strings.Repeat("a", 39): false,
	} {
		if ValidRevision(rev) != want {
			t.Errorf("ValidRevision(%q) = %v", rev, !want)
		}
	}
}

// Head is the default branch's newest commit; a repository that is not
// there is an *Error naming it.
func TestHead(t *testing.T) {
	src, revs := repo(t)
	if got, err := Head(context.Background(), src); err != nil || got != revs[1] {
		t.Errorf("Head = %s, %v; want %s", got, err, revs[1])
	}
	_, err := Head(context.Background(), filepath.Join(src, "nope"))
	var ge *Error
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), "fetching "+filepath.Join(src, "nope")+" at revision HEAD") {
		t.Errorf("a repository not there: %v", err)
	}
}

// A repository named by a relative path is the same one for Fetch as for
// Head (nel lock): the folder relative to the working directory, not to
// the temporary folder Fetch runs git in. URLs, scp-like ones included,
// are left as they are.
func TestFetchRelativePath(t *testing.T) {
	src, revs := repo(t)
	t.Chdir(filepath.Dir(src))
	rel := filepath.Base(src)
	if head, err := Head(context.Background(), rel); err != nil || head != revs[1] {
		t.Fatalf("Head(%s) = %s, %v", rel, head, err)
	}
	dst := filepath.Join(t.TempDir(), revs[0])
	if err := Fetch(context.Background(), rel, revs[0], dst); err != nil {
		t.Fatalf("Fetch(%s): %v", rel, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "f.txt")); err != nil || string(b) != "one" {
		t.Errorf("f.txt = %q, %v; want the first commit's", b, err)
	}
	for _, u := range []string{"https://example.com/r.git", "git@example.com:org/r.git", "file:///srv/r.git", "/srv/r.git"} {
		if got := absPath(u); got != u {
			t.Errorf("absPath(%q) = %q, want it as it is", u, got)
		}
	}
}
