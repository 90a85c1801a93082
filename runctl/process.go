// Package runctl watches and controls a run from outside it: nel status,
// nel logs and nel stop. A local run is known by the process record nel
// run keeps in its folder while it runs; a SLURM run by the job ids its
// jobs record there (or by a job id given). Progress is read from the
// folder's shard files and journals, which are only read, never opened
// for writing: the run may be writing them.
package runctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/rundir"
)

// Process is the record of the nel run running in a folder
// (rundir.Dir.Process).
type Process struct {
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	StartedAt string `json:"started_at"`
	PlanHash  string `json:"plan_hash"`
}

// Liveness says whether a recorded process still runs.
type Liveness int

const (
	Gone      Liveness = iota // it ended (or was killed) without removing its record
	Alive                     // a process with its pid runs on this host
	Elsewhere                 // it ran on another host: this one cannot tell
)

// Check says whether p still runs. A pid reused by another process after
// the run died reads as Alive; the record is removed when a run ends
// normally, so only a run killed with -9 leaves one behind.
func (p *Process) Check() Liveness {
	if host, _ := os.Hostname(); p.Host != host {
		return Elsewhere
	}
	err := syscall.Kill(p.PID, 0)
	if err == nil || errors.Is(err, syscall.EPERM) {
		return Alive
	}
	return Gone
}

// ReadProcess reads the folder's process record; nil, nil when there is
// none (no nel run is running there, or it ended).
func ReadProcess(d rundir.Dir) (*Process, error) {
	b, err := os.ReadFile(d.Process())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p Process
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", d.Process(), err)
	}
	return &p, nil
}

// Hold records this process as the nel run of folder d, and returns the
// function that removes the record when the run ends. It refuses while
// another nel run still runs there: two runs would write the same
// shards. A record left by a run that died is replaced.
func Hold(d rundir.Dir, planHash string) (release func(), err error) {
	old, err := ReadProcess(d)
	if err != nil {
		return nil, err
	}
	if old != nil && old.PID != os.Getpid() {
		switch old.Check() {
		case Alive:
			return nil, fmt.Errorf("a nel run (pid %d, started %s) is already running in %s: wait for it, or stop it with nel stop %s", old.PID, old.StartedAt, d, d)
		case Elsewhere:
			return nil, fmt.Errorf("a nel run on host %s (pid %d, started %s) may be running in %s: stop it there, or remove %s if it is gone", old.Host, old.PID, old.StartedAt, d, d.Process())
		}
	}
	host, _ := os.Hostname()
	p := Process{PID: os.Getpid(), Host: host, StartedAt: time.Now().UTC().Format(time.RFC3339), PlanHash: planHash}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.Meta(), 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(d.Process(), append(b, '\n')); err != nil {
		return nil, fmt.Errorf("record the run's process: %w", err)
	}
	return func() { os.Remove(d.Process()) }, nil
}
