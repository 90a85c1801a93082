//go:build unix

package serve

import (
	"errors"
	"syscall"
)

// pidExists reports whether a process with this pid exists. EPERM means it
// exists but belongs to someone else, so it counts as alive.
func pidExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}
