package serve

import (
	"os/exec"
	"runtime"
)

// Tie says how StartTied binds a child to this process.
type Tie struct {
	// Group puts the child in a process group of its own, so that stopping
	// it also stops whatever it starts (vLLM's workers). A child that must
	// get the terminal's Ctrl-C with this process stays in its group.
	Group bool
	// Term makes the child get SIGTERM rather than SIGKILL when this
	// process dies: for a child that passes it on (make stops its jobs on
	// SIGTERM, and is killed on SIGKILL with its jobs left running).
	Term bool
}

// StartTied starts cmd so that it does not outlive this process: on Linux
// it gets a parent-death signal (SIGKILL, or SIGTERM with t.Term), so even
// a kill -9 of this process takes it along. Elsewhere only t.Group applies.
// The returned channel receives cmd.Wait's result once cmd has exited.
//
// Linux sends the parent-death signal when the thread that forked the child
// exits, not the process; Go ends a thread when a goroutine locked to it
// returns, which any library may do. So the child is forked from a
// goroutine locked to its thread that stays there, waiting, until the
// child is gone: that thread lives exactly as long as the child needs it
// (and dies only with this process, which is the point).
func StartTied(cmd *exec.Cmd, t Tie) (<-chan error, error) {
	tie(cmd, t)
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			runtime.UnlockOSThread()
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
		// The child has gone: its thread may serve others again.
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}

// RunTied is cmd.Run for a child started with StartTied: it starts cmd
// tied to this process and waits for it to exit.
func RunTied(cmd *exec.Cmd, t Tie) error {
	waited, err := StartTied(cmd, t)
	if err != nil {
		return err
	}
	return <-waited
}

// StopGroup asks a child started with Tie{Group: true} and everything it
// started to stop (SIGTERM to its process group): an exec.Cmd's Cancel.
func StopGroup(cmd *exec.Cmd) error {
	signalGroup(cmd, false)
	return nil
}
