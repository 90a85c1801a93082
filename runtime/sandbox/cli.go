package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/nel-eval/nel/runtime/serve"
)

// cliJob is one run of a container engine's command line (docker run,
// apptainer exec).
type cliJob struct {
	argv    []string
	env     []string // the CLI's environment
	dir     string   // its working directory; "" is ours
	stdin   []byte
	timeout time.Duration
	output  int64
	// kill stops the container on timeout, output cap or cancellation,
	// before the CLI's process group is killed; nil kills only the group.
	kill func()
}

// cliResult is how a CLI run ended.
type cliResult struct {
	res  *Result
	info exitInfo
}

// runCLI runs a container engine's command line with the job's timeout and
// output caps. Its error means the CLI could not be started or the
// caller's ctx ended.
func runCLI(ctx context.Context, j cliJob) (*cliResult, error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, j.timeout, errTimeout)
	defer cancelTimeout()
	capCancel := func() { cancel(errOutputCap) }
	stdout := newCapture(j.output, capCancel)
	stderr := newCapture(j.output, capCancel)

	cmd := exec.CommandContext(runCtx, j.argv[0], j.argv[1:]...)
	cmd.Env = j.env
	cmd.Dir = j.dir
	cmd.Stdin = bytes.NewReader(j.stdin)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Cancel = func() error {
		if j.kill != nil {
			j.kill()
		}
		return killGroup(cmd.Process.Pid)
	}
	cmd.WaitDelay = 5 * time.Second

	// Its own process group (the job's children are killed with it), and
	// on Linux SIGKILL when nel dies, even by kill -9. The parent-death
	// signal follows the thread that forked, so serve.StartTied forks
	// from a goroutine locked to its thread until the CLI exits: a thread
	// Go retires meanwhile would kill the job mid-run. What a killed
	// docker CLI leaves is its container, which runs its command to the
	// end and is removed then (--rm).
	start := time.Now()
	err := serve.RunTied(cmd, serve.Tie{Group: true})
	dur := time.Since(start)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return nil, fmt.Errorf("%s: %w", j.argv[0], err)
	}
	res := &Result{Duration: dur}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	res.ExitCode, res.Signal = statusOf(ws.ExitStatus(), ws.Signal(), ws.Signaled())
	cause := context.Cause(runCtx)
	var outCut, errCut bool
	res.Stdout, outCut = stdout.bytes()
	res.Stderr, errCut = stderr.bytes()
	res.Truncated = outCut || errCut
	return &cliResult{res: res, info: exitInfo{
		code:      res.ExitCode,
		signal:    res.Signal,
		timedOut:  errors.Is(cause, errTimeout),
		outputCap: errors.Is(cause, errOutputCap),
	}}, nil
}

// killGroup kills the process group led by pid. A group that is already
// gone (the program exited between the output cap or timeout and the
// kill) is os.ErrProcessDone: otherwise exec reports "canceling Cmd: no
// such process" for a program that finished, and its run would count as
// a failure of the sandbox.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// firstLines is the start of an engine's error output, for an error
// message.
func firstLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
