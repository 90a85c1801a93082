//go:build unix && !linux

package serve

import (
	"os/exec"
	"syscall"
)

// tie puts the child in a process group of its own with t.Group. These
// systems have no parent-death signal: a server left behind by a killed
// run keeps its port, which Start then names.
func tie(cmd *exec.Cmd, t Tie) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: t.Group}
}
