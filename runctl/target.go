package runctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/nel-eval/nel/runtime/rundir"
)

// Target is what nel status, logs and stop were pointed at: a run folder,
// or a SLURM job id.
type Target struct {
	Dir rundir.Dir
	Job string
}

// ErrNotTarget is Resolve's error for an argument that is neither.
var ErrNotTarget = errors.New("neither a run folder nor a SLURM job id")

// Resolve reads the argument: an existing folder is a run folder, else a
// job id (123, 123_4) is a job.
func Resolve(arg string) (Target, error) {
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return Target{Dir: rundir.Dir(arg)}, nil
	}
	if IsJobID(arg) {
		return Target{Job: arg}, nil
	}
	return Target{}, fmt.Errorf("%s: %w", arg, ErrNotTarget)
}

// Status reads the target's status.
func (t Target) Status(ctx context.Context, s Slurm) (*Status, error) {
	if t.Job != "" {
		return OfJob(ctx, t.Job, s)
	}
	return Of(ctx, t.Dir, s)
}

// Stop stops the target: a local run by SIGTERM to its nel run, which
// stops its shards and keeps every finished sample in their journals
// (waiting up to wait for it to exit); a SLURM run by scancel of its
// queued and running jobs, successors included. It says what it did; it
// is an error when nothing of the target runs.
func (t Target) Stop(ctx context.Context, s Slurm, wait time.Duration) (string, error) {
	st, err := t.Status(ctx, s)
	if err != nil {
		return "", err
	}
	if p := st.Process; p != nil && p.Check() == Alive {
		if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil {
			return "", fmt.Errorf("stop nel run (pid %d): %w", p.PID, err)
		}
		deadline := time.Now().Add(wait)
		for p.Check() == Alive && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		if p.Check() == Alive {
			return fmt.Sprintf("sent SIGTERM to nel run (pid %d); it is still stopping", p.PID), nil
		}
		return fmt.Sprintf("stopped nel run (pid %d); its finished samples are kept: nel run --resume %s continues it", p.PID, t.Dir), nil
	}
	if p := st.Process; p != nil && p.Check() == Elsewhere {
		return "", fmt.Errorf("the run's nel run (pid %d) runs on host %s: stop it there", p.PID, p.Host)
	}
	ids := st.Active()
	if len(ids) == 0 {
		return "", fmt.Errorf("nothing to stop: %s", st.Note)
	}
	if err := s.Cancel(ctx, ids); err != nil {
		return "", err
	}
	msg := "cancelled SLURM jobs " + strings.Join(ids, ", ")
	if t.Dir != "" {
		msg += fmt.Sprintf("; their finished samples are kept: sbatch %s continues the run", t.Dir.Job(st.PlanHash))
	}
	return msg, nil
}
