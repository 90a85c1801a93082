// Package gitrev brings one commit of a git repository's tree onto the
// node, through the git program, into a folder named for the commit: a
// benchmark whose tasks live in a repository (Terminal-Bench v1) is those
// files, and a rerun that finds the folder reads the same files again.
package gitrev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ValidRevision reports whether rev names one commit for good: a full
// SHA-1 (40) or SHA-256 (64) object name in lower-case hex. A branch or a
// tag may move, so it is never a pin.
func ValidRevision(rev string) bool {
	if len(rev) != 40 && len(rev) != 64 {
		return false
	}
	for _, c := range rev {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Error is a failure to bring a commit of a repository here: the network,
// the server, or a revision the repository no longer has. It is the
// infrastructure's failure, never the model's.
type Error struct {
	URL      string // as Redact shows it
	Revision string
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("infrastructure error (no task ran): fetching %s at revision %s: %v", e.URL, e.Revision, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Fetch makes dir hold the tree of commit rev of the repository at
// repoURL (any URL or path git fetches from), and nothing else (no .git).
// A dir that is there already is that tree (it only ever appears whole,
// by a rename), so Fetch returns at once. Shards that fetch at the same
// time each work in a folder of their own and the first rename wins.
func Fetch(ctx context.Context, repoURL, rev, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	fail := func(err error) error { return &Error{URL: Redact(repoURL), Revision: rev, Err: err} }
	if !ValidRevision(rev) {
		return fail(errors.New("not a full commit hash (a branch or a tag may move; pin a commit)"))
	}
	if strings.HasPrefix(repoURL, "-") {
		// git would read it as an option.
		return fail(errors.New("a repository's URL or path cannot start with -"))
	}
	// git runs in the temporary folder: a relative path must not be
	// read from there, but from where Head reads it.
	repoURL = absPath(repoURL)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	if err := checkout(ctx, repoURL, rev, tmp); err != nil {
		return fail(err)
	}
	if err := os.RemoveAll(filepath.Join(tmp, ".git")); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			return nil // another shard's rename came first: the same tree
		}
		return fail(err)
	}
	return nil
}

// checkout fetches rev alone (depth 1) when the server lets a client ask
// for a commit by its hash (GitHub does), else every branch, and checks
// the commit out in tmp, which must then be at exactly rev.
func checkout(ctx context.Context, repoURL, rev, tmp string) error {
	if _, err := git(ctx, tmp, "init", "--quiet"); err != nil {
		return err
	}
	if _, err := git(ctx, tmp, "fetch", "--quiet", "--depth", "1", repoURL, rev); err != nil {
		if _, err2 := git(ctx, tmp, "fetch", "--quiet", repoURL, "+refs/heads/*:refs/remotes/src/*"); err2 != nil {
			return err2
		}
		if _, err := git(ctx, tmp, "cat-file", "-e", rev+"^{commit}"); err != nil {
			return errors.New("the repository has no such commit (was its history rewritten? pin a commit it has)")
		}
	}
	if _, err := git(ctx, tmp, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", rev); err != nil {
		return err
	}
	head, err := git(ctx, tmp, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if head != rev {
		return fmt.Errorf("checked out %s, not the revision asked for", head)
	}
	return nil
}

// absPath is repoURL made absolute when it is a relative path, as git
// tells paths from URLs: no "://", and no ':' before the first '/' (an
// scp-like host:path). Anything else is returned as it is.
func absPath(repoURL string) string {
	if strings.Contains(repoURL, "://") || filepath.IsAbs(repoURL) {
		return repoURL
	}
	if c := strings.IndexByte(repoURL, ':'); c >= 0 && !strings.Contains(repoURL[:c], "/") {
		return repoURL
	}
	if abs, err := filepath.Abs(repoURL); err == nil {
		return abs
	}
	return repoURL
}

// Head is the commit the default branch of the repository at repoURL is
// at now (what NeMo Evaluator's clone would read): nel lock pins it.
func Head(ctx context.Context, repoURL string) (string, error) {
	fail := func(err error) error { return &Error{URL: Redact(repoURL), Revision: "HEAD", Err: err} }
	if strings.HasPrefix(repoURL, "-") {
		return "", fail(errors.New("a repository's URL or path cannot start with -"))
	}
	out, err := git(ctx, "", "ls-remote", repoURL, "HEAD")
	if err != nil {
		return "", fail(err)
	}
	rev, _, _ := strings.Cut(out, "\t")
	if !ValidRevision(rev) {
		return "", fail(fmt.Errorf("git ls-remote answered %q", out))
	}
	return rev, nil
}

// git runs git in dir and returns its output, trimmed; its error says
// what git said. It never asks for a password: a job has no one to ask.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// Redact is repoURL without the password or token a mirror's URL may
// carry, for messages and records.
func Redact(repoURL string) string {
	u, err := url.Parse(repoURL)
	if err != nil || u.User == nil {
		return repoURL
	}
	u.User = url.User("xxxxx")
	return u.String()
}
