package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SessionOpener is a Sandbox that can open stateful sessions: the local,
// docker and apptainer engines, and a sandbox pool's servers (which open
// them on their own engine).
type SessionOpener interface {
	OpenSession(ctx context.Context, spec SessionSpec) (Session, error)
}

// OpenSession opens a session on sb, or says why sb's engine cannot keep
// one.
func OpenSession(ctx context.Context, sb Sandbox, spec SessionSpec) (Session, error) {
	if o, ok := sb.(SessionOpener); ok {
		return o.OpenSession(ctx, spec)
	}
	return nil, fmt.Errorf("sandbox %s: not supported yet: a stateful session on this engine", sb.Name())
}

// Where a session's directories are inside the sandbox.
const (
	SessionApp   = "/app"
	SessionLogs  = "/logs"
	SessionTmp   = "/tmp"
	SessionTests = "/tests"
)

// sessionDir is a session's host directory: app, logs (with logs/verifier
// and logs/agent, where a Harbor verifier and agent write) and tmp, each
// bound writable into every command.
type sessionDir struct {
	*workDir
}

// The host directories mirror the sandbox's paths under the session's
// root.
func (d sessionDir) app() string  { return filepath.Join(d.path, SessionApp) }
func (d sessionDir) logs() string { return filepath.Join(d.path, SessionLogs) }
func (d sessionDir) tmp() string  { return filepath.Join(d.path, SessionTmp) }

// newSessionDir makes a session's directories and copies spec.App into
// app. world opens every directory and file to all users, for a container
// whose user is not ours (docker runs as the image's user, root without
// capabilities: it may not write a file it does not own unless the mode
// lets everyone).
func newSessionDir(spec SessionSpec, world bool) (sessionDir, error) {
	dir, err := os.MkdirTemp("", "nel-session-")
	if err != nil {
		return sessionDir{}, fmt.Errorf("session dir: %w", err)
	}
	d := sessionDir{&workDir{path: dir}}
	fail := func(err error) (sessionDir, error) {
		d.remove()
		return sessionDir{}, err
	}
	for _, sub := range []string{d.app(), filepath.Join(d.logs(), "verifier"), filepath.Join(d.logs(), "agent"), d.tmp()} {
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return fail(fmt.Errorf("session dir: %w", err))
		}
	}
	if spec.App != "" {
		// The task's files are copied, not bound: the agent changes them,
		// and the task directory must stay as it was for the next sample.
		// Symbolic links are copied as links; they resolve inside the
		// sandbox, where the host is not visible.
		if err := os.CopyFS(d.app(), os.DirFS(spec.App)); err != nil {
			return fail(fmt.Errorf("copy %s into %s: %w", spec.App, SessionApp, err))
		}
	}
	if world {
		if err := openToAll(dir); err != nil {
			return fail(fmt.Errorf("session dir: %w", err))
		}
	}
	return d, nil
}

// openToAll makes every directory under root 0777 and every file writable
// by all (keeping execute bits); links are left alone.
func openToAll(root string) error {
	return filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.Chmod(p, 0o777)
		case e.Type().IsRegular():
			fi, err := e.Info()
			if err != nil {
				return err
			}
			return os.Chmod(p, fi.Mode().Perm()|0o666)
		}
		return nil
	})
}

// sessionCmd is a Command checked and completed by session.Exec.
type sessionCmd struct {
	Command
	dir     string
	timeout time.Duration
	tests   string // host directory to bind at /tests, "" for none
}

// session is the Session every engine returns: the engine's run executes
// one command with the session's directories bound in.
type session struct {
	name string
	dir  sessionDir
	spec SessionSpec
	// run executes one command (the engine's part).
	run func(ctx context.Context, d sessionDir, c sessionCmd) (*Result, error)
	// cleanup, when set, removes what the host cannot (files a
	// container's root left); it runs when removal fails.
	cleanup func(d sessionDir) error
	// hostAccess: the engine honours Command.Network and ReadOnly.
	hostAccess bool
	// release, when set, gives back what the engine held for the
	// session (the apptainer sandbox's uid) once its folders are gone.
	release func()

	// stop ends the commands running when Close is called.
	stop context.CancelFunc
	done context.Context

	// mu is held for reading by a running command and for writing by
	// Close, which so never removes the directories under one.
	mu     sync.RWMutex
	closed bool
}

func (s *session) Exec(ctx context.Context, c Command) (*Result, error) {
	sc, err := s.check(c)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("sandbox %s: session is closed", s.name)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unhook := context.AfterFunc(s.done, func() { cancel(errSessionClosed) })
	defer unhook()
	return s.run(ctx, s.dir, sc)
}

// errSessionClosed ends a command that runs when its session is closed.
var errSessionClosed = errors.New("session closed while the command ran")

// check validates a command and fills in its defaults.
func (s *session) check(c Command) (sessionCmd, error) {
	sc := sessionCmd{Command: c, dir: c.Dir, timeout: c.Timeout}
	if len(c.Argv) == 0 {
		return sc, fmt.Errorf("sandbox %s: empty command", s.name)
	}
	if sc.dir == "" {
		sc.dir = SessionApp
	}
	if !path.IsAbs(sc.dir) {
		return sc, fmt.Errorf("sandbox %s: working directory %q: want an absolute path inside the sandbox", s.name, c.Dir)
	}
	if sc.timeout <= 0 {
		sc.timeout = s.spec.Timeout
	}
	if c.WithTests {
		if s.spec.Tests == "" {
			return sc, fmt.Errorf("sandbox %s: a command asks for /tests but the session has no tests directory", s.name)
		}
		sc.tests = s.spec.Tests
	}
	if (c.Network || len(c.ReadOnly) > 0) && !s.hostAccess {
		return sc, fmt.Errorf("sandbox %s: not supported yet: a session command with the host's network or host paths on this engine (only the local sandbox gives them)", s.name)
	}
	for _, p := range c.ReadOnly {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return sc, fmt.Errorf("sandbox %s: read-only host path %q: want a clean absolute path other than /", s.name, p)
		}
	}
	for _, a := range c.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return sc, fmt.Errorf("sandbox %s: an argument holds a NUL byte", s.name)
		}
	}
	return sc, nil
}

func (s *session) Close() error {
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.release != nil {
		defer s.release()
	}
	err := s.dir.remove()
	if err != nil && s.cleanup != nil {
		if cerr := s.cleanup(s.dir); cerr != nil {
			return fmt.Errorf("sandbox %s: close session: %w (and: %w)", s.name, err, cerr)
		}
		err = s.dir.remove()
	}
	if err != nil {
		return fmt.Errorf("sandbox %s: close session: %w", s.name, err)
	}
	return nil
}

// newSession checks spec and makes the session's directories (open to all
// users when world); the engine sets its run. The image is spec.Image, or
// the sandbox's when that is empty.
func newSession(name, image string, spec SessionSpec, world bool) (*session, string, error) {
	if err := checkSpec(name, spec); err != nil {
		return nil, "", err
	}
	if spec.Image != "" {
		image = spec.Image
	}
	dir, err := newSessionDir(spec, world)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox %s: %w", name, err)
	}
	done, stop := context.WithCancel(context.Background())
	return &session{name: name, dir: dir, spec: spec, done: done, stop: stop}, image, nil
}

// checkSpec refuses a spec whose directories do not exist, or whose image
// an engine would read as an option.
func checkSpec(name string, spec SessionSpec) error {
	// The image comes from task data, or from a pool server's request:
	// the engines put it on their command line before the program, where
	// one that starts with - would be an option (-v=/:/host), not an image.
	if strings.HasPrefix(spec.Image, "-") {
		return fmt.Errorf("sandbox %s: session image %q: an image reference cannot start with -", name, spec.Image)
	}
	if spec.Build != "" {
		// The docker and apptainer engines build before they get here,
		// and clear Build.
		return fmt.Errorf("sandbox %s: not supported yet: building a session's image from %s on this engine (the docker and apptainer sandboxes build images: build it, and give it as the task's docker_image)", name, spec.Build)
	}
	for _, d := range []struct{ field, dir string }{{"App", spec.App}, {"Tests", spec.Tests}} {
		if d.dir == "" {
			continue
		}
		fi, err := os.Stat(d.dir)
		if err != nil {
			return fmt.Errorf("sandbox %s: session %s: %w", name, d.field, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("sandbox %s: session %s: %s is not a directory", name, d.field, d.dir)
		}
	}
	return nil
}
