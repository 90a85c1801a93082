package sandbox

import (
	"context"
	"time"
)

// Session is one sample's sandbox that keeps its files from one command to
// the next: an agent's tools run in it one after another, then the task's
// verifier, which sees what the agent left. What a command writes under
// /app, /logs or /tmp persists until Close; everything else is the
// sandbox's read-only view, and there is no network unless the session was
// opened with one.
type Session interface {
	// Exec runs one command. As with Run, the program failing is a
	// Result; the error means the session could not run it.
	Exec(ctx context.Context, c Command) (*Result, error)
	// Close stops the session and removes what it kept.
	Close() error
}

// Command is one program run in a Session.
type Command struct {
	Argv  []string
	Stdin []byte
	// Env is the program's whole environment (nothing is inherited).
	Env map[string]string
	// Dir is the working directory inside the sandbox; "" is /app.
	Dir string
	// Timeout is the wall-clock limit; 0 means the session's default.
	Timeout time.Duration
	// WithTests mounts the task's tests (SessionSpec.Tests) read-only at
	// /tests for this command only: the verifier sees them, the agent
	// never does.
	WithTests bool
	// Network shares the host's network with the command, and ReadOnly
	// binds host paths read-only at the same paths: for an agent CLI that
	// runs in the session (the openclaw solver) and must reach nel-run's
	// model proxy on the host's loopback with its own install. Only the
	// local engine honours them; others refuse such a command.
	Network  bool
	ReadOnly []string
}

// SessionSpec is what a session starts from.
type SessionSpec struct {
	// App is a host directory copied into /app when the session opens (a
	// Harbor task's environment files); "" starts /app empty.
	App string
	// Tests is a host directory mounted at /tests for WithTests commands.
	Tests string
	// Image is the container image (docker, apptainer, Pyxis); the local
	// sandbox ignores it.
	Image string
	// Build is a folder with a Dockerfile (a Harbor task's environment/)
	// that the docker engine (docker build) or the apptainer engine (the
	// Dockerfile converted, apptainer_build.go) builds, once per engine,
	// into the session's image in place of Image; /app then starts as the
	// built image's /app (what the Dockerfile put there), not as App.
	// Other engines refuse it.
	Build string
	// Timeout is the default per-command wall-clock limit.
	Timeout time.Duration
}
