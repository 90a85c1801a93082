package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// A container session is the session of an ecs_fargate task: the task is
// one sample's sandbox, so its exec server (nel-run sandbox-serve
// --engine container) runs every command of the session as a plain
// process of the task's main container, in the container's own /app,
// /logs and /tmp, which so persist from one command to the next until the
// task stops.
//
// /tests is the verifier's alone. Its files never sit in the container
// before the verifier's command: they come with that command
// (ExecTests), are written to /tests just before it runs and
// removed when it ends. And what an agent's command left running
// (`sleep 1000 &`, a setsid daemon) cannot wait for them: when the exec
// server is the container's first process, as in the task (its entry
// point), every other process is one the session's commands started, and
// all of them are killed before /tests is written.

// testsExecer is a Session that takes the verifier's test files with the
// command that may see them, instead of reading a directory of its own
// host: the ecs_fargate task's session, whose host is the task.
type testsExecer interface {
	ExecTests(ctx context.Context, c Command, tests []treeEntry) (*Result, error)
}

type containerSession struct {
	c    *container
	root string // "/" in a task; a test's directory elsewhere
	spec SessionSpec
	// mu keeps one command at a time: a verifier never runs beside an
	// agent's command.
	mu     sync.Mutex
	closed bool
}

// OpenSession makes the session's directories under the container's root
// and copies spec.App into its /app. A container holds one session in its
// life (it is one sample's task): a second would share, and inherit, the
// first one's files.
func (c *container) OpenSession(ctx context.Context, spec SessionSpec) (Session, error) {
	if err := checkSpec(c.name, spec); err != nil {
		return nil, err
	}
	app, err := readTree(spec.App)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", c.name, err)
	}
	return c.openSession(app, spec)
}

// openSession is OpenSession with the /app files already read.
func (c *container) openSession(app []treeEntry, spec SessionSpec) (*containerSession, error) {
	if !c.held.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("sandbox %s: this container holds a session already (one per task)", c.name)
	}
	root := c.root
	if root == "" {
		root = "/"
	}
	for _, d := range []string{SessionApp, SessionLogs + "/verifier", SessionLogs + "/agent", SessionTmp} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o777); err != nil {
			return nil, fmt.Errorf("sandbox %s: session dir: %w", c.name, err)
		}
	}
	if err := writeTree(filepath.Join(root, SessionApp), app); err != nil {
		return nil, fmt.Errorf("sandbox %s: copy the task's files into %s: %w", c.name, SessionApp, err)
	}
	return &containerSession{c: c, root: root, spec: spec}, nil
}

func (s *containerSession) Exec(ctx context.Context, c Command) (*Result, error) {
	var tests []treeEntry
	if c.WithTests && s.spec.Tests != "" {
		var err error
		if tests, err = readTree(s.spec.Tests); err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", s.c.name, err)
		}
	}
	return s.ExecTests(ctx, c, tests)
}

// ExecTests runs c; with c.WithTests, the files of tests are at /tests
// for it alone.
func (s *containerSession) ExecTests(ctx context.Context, c Command, tests []treeEntry) (*Result, error) {
	// s.spec.Tests says whether the session has tests; their files are
	// the ones sent with the command.
	sc, err := (&session{name: s.c.name, spec: s.spec}).check(c)
	if err != nil {
		return nil, err
	}
	if sc.timeout <= 0 {
		sc.timeout = s.c.lim.timeout // sandbox-serve --timeout
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("sandbox %s: session is closed", s.c.name)
	}
	if c.WithTests {
		dir := filepath.Join(s.root, SessionTests)
		if err := s.placeTests(dir, tests); err != nil {
			return nil, fmt.Errorf("sandbox %s: %s: %w", s.c.name, SessionTests, err)
		}
		defer os.RemoveAll(dir)
	}
	out, err := runCLI(ctx, cliJob{
		argv:    sc.Argv,
		env:     s.c.jobEnv(filepath.Join(s.root, SessionTmp), sc.Env),
		dir:     filepath.Join(s.root, sc.dir),
		stdin:   sc.Stdin,
		timeout: sc.timeout,
		output:  s.c.lim.output,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", s.c.name, err)
	}
	out.res.Limit = classify(out.info, out.res.Stderr)
	return out.res, nil
}

// placeTests ends what earlier commands left running, then writes /tests
// afresh (an agent may have put a file or a link there).
func (s *containerSession) placeTests(dir string, tests []treeEntry) error {
	if os.Getpid() == 1 {
		killAllButSelf()
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return writeTree(dir, tests)
}

// killAllButSelf sends SIGKILL to every other process this one may
// signal. Only the first process of a container calls it: there, all
// the others are the session's.
func killAllButSelf() {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 {
			continue
		}
		// A killed process never runs again, so it cannot read what
		// is written after; its zombie goes with the task.
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Close ends the session; the task's stop removes its files.
func (s *containerSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
