// Package sandbox runs untrusted programs (model-written code) isolated from
// the host: no network, a read-only view of the system, a private writable
// work directory, limits on CPU, memory, processes, file size and output,
// and a wall-clock timeout after which the whole process tree is killed.
//
// Every engine (local bubblewrap, docker, apptainer, a SLURM sandbox pool)
// implements Sandbox. A Job's program failing — a non-zero exit, a signal, a
// limit hit — is a Result, not an error: Run's error means the sandbox
// itself could not run the job (engine missing, image not pullable, pool
// unreachable), and the caller records an infrastructure failure.
package sandbox

import (
	"context"
	"errors"
	"time"
)

// Job is one program run.
type Job struct {
	// Command is the argv run in the work directory, e.g. {"python3", "-"}.
	Command []string
	// Stdin is fed to the program's standard input.
	Stdin []byte
	// Files are written into the work directory before the run, by path
	// relative to it.
	Files map[string][]byte
	// Collect names files (relative to the work directory) to return.
	Collect []string
	// Env is the program's whole environment (nothing is inherited from
	// the host: secrets stay out).
	Env map[string]string
	// Timeout is the wall-clock limit; 0 means the sandbox's default.
	Timeout time.Duration
}

// Limit names the limit that stopped a program.
type Limit string

// The limits a Result can report.
const (
	LimitNone      Limit = ""
	LimitTimeout   Limit = "timeout"   // wall clock
	LimitCPU       Limit = "cpu"       // CPU seconds (RLIMIT_CPU)
	LimitMemory    Limit = "memory"    // address space / cgroup memory
	LimitProcesses Limit = "processes" // process count
	LimitFileSize  Limit = "file_size" // a file grew past the limit
	LimitOutput    Limit = "output"    // stdout/stderr past the capture limit
)

// Result is what a program did.
type Result struct {
	// ExitCode is the program's exit status; -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended it ("SIGKILL"), if any.
	Signal string
	// Limit is the limit that stopped it, when the sandbox knows.
	Limit Limit
	// Stdout and Stderr are captured up to the sandbox's output limit;
	// Truncated says either was cut.
	Stdout, Stderr []byte
	Truncated      bool
	// Files holds the Collect files that existed after the run.
	Files map[string][]byte
	// Duration is the program's wall-clock time (start-up included).
	Duration time.Duration
}

// Sandbox runs jobs. Implementations are safe for concurrent use and bound
// their own concurrency (a sandbox's `concurrency` or slots).
type Sandbox interface {
	Run(ctx context.Context, job Job) (*Result, error)
	// Name is the sandbox's name in the recipe (or its type for an inline
	// one), for logs and errors.
	Name() string
	Close() error
}

// ErrUnavailable is wrapped by errors saying an engine is not installed or
// cannot run here (no bwrap, no docker daemon); tests skip on it with the
// message.
var ErrUnavailable = errors.New("sandbox engine unavailable")
