//go:build linux

package serve

import (
	"os/exec"
	"syscall"
)

// tie sets what StartTied promises: a process group of its own with
// t.Group, and a parent-death signal.
func tie(cmd *exec.Cmd, t Tie) {
	sig := syscall.SIGKILL
	if t.Term {
		sig = syscall.SIGTERM
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: t.Group, Pdeathsig: sig}
}
