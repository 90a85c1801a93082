//go:build !unix

package serve

import (
	"os"
	"os/exec"
)

// pidExists cannot check processes on this platform; it assumes the process
// is alive, so WaitReady falls back to the timeout.
func pidExists(pid int) bool { return true }

// tie has nothing to set here: no process groups, no parent-death signal.
func tie(cmd *exec.Cmd, t Tie) {}

func signalGroup(cmd *exec.Cmd, kill bool) {
	if kill {
		cmd.Process.Kill()
		return
	}
	cmd.Process.Signal(os.Interrupt)
}
