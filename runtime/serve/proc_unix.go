//go:build unix

package serve

import (
	"errors"
	"os/exec"
	"syscall"
)

// pidExists reports whether a process with this pid exists. EPERM means it
// exists but belongs to someone else, so it counts as alive.
func pidExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

// signalGroup sends SIGTERM (or SIGKILL when kill) to the server's group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		cmd.Process.Signal(sig)
	}
}
