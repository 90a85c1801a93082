package harbor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// dirSession is a test double of sandbox.Session: a temporary folder
// holds the session's /app, /logs and /tmp, and each command runs in
// bubblewrap with them bound at those paths, the host's /usr read-only,
// and /tests bound only for WithTests commands. It is what the verifier
// needs of a session and no more (no limits, no network rules): the real
// local session is runtime/sandbox's.
type dirSession struct {
	bwrap string
	root  string // holds app/, logs/, tmp/
	tests string
}

func newDirSession(t *testing.T, spec sandbox.SessionSpec) *dirSession {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		testenv.Missing(t, testenv.LocalSandbox, "bwrap is not on PATH")
	}
	s := &dirSession{bwrap: bwrap, root: t.TempDir(), tests: spec.Tests}
	for _, d := range []string{"app", "logs", "tmp"} {
		if err := os.Mkdir(filepath.Join(s.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if spec.App != "" {
		if err := os.CopyFS(filepath.Join(s.root, "app"), os.DirFS(spec.App)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// host is the host path of a folder of the session ("app", "logs").
func (s *dirSession) host(dir string) string { return filepath.Join(s.root, dir) }

func (s *dirSession) Exec(ctx context.Context, c sandbox.Command) (*sandbox.Result, error) {
	args := []string{
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin", "--ro-bind-try", "/etc", "/etc",
		"--proc", "/proc", "--dev", "/dev",
		"--bind", s.host("app"), "/app", "--bind", s.host("logs"), "/logs", "--bind", s.host("tmp"), "/tmp",
	}
	if c.WithTests {
		args = append(args, "--ro-bind", s.tests, "/tests")
	}
	dir := c.Dir
	if dir == "" {
		dir = "/app"
	}
	args = append(args, "--chdir", dir, "--clearenv", "--die-with-parent")
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--setenv", k, c.Env[k])
	}
	args = append(append(args, "--"), c.Argv...)
	timeout := c.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bwrap, args...)
	cmd.Stdin = bytes.NewReader(c.Stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second // a killed bwrap's children may hold the pipes
	start := time.Now()
	err := cmd.Run()
	res := &sandbox.Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), Duration: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.ExitCode, res.Signal, res.Limit = -1, "SIGKILL", sandbox.LimitTimeout
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case err != nil:
		return nil, err
	}
	return res, nil
}

func (s *dirSession) Close() error { return nil }

// brokenSession is a session that cannot run anything (its sandbox died).
type brokenSession struct{}

func (brokenSession) Exec(context.Context, sandbox.Command) (*sandbox.Result, error) {
	return nil, errors.New("the sandbox is gone")
}
func (brokenSession) Close() error { return nil }
