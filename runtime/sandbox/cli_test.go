package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestKillGroupGone: killing a process group that has already exited is
// os.ErrProcessDone (so exec does not turn a finished program into a
// "canceling Cmd: no such process" failure of the sandbox); a live group
// is killed.
func TestKillGroupGone(t *testing.T) {
	done := exec.Command("true")
	done.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	if err := killGroup(done.Process.Pid); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("killGroup of an exited group: %v, want os.ErrProcessDone", err)
	}

	live := exec.Command("sleep", "60")
	live.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	if err := killGroup(live.Process.Pid); err != nil {
		t.Errorf("killGroup of a live group: %v", err)
	}
	err := live.Wait()
	ws, _ := live.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the live group's leader ended with %v (%v), want SIGKILL", err, live.ProcessState)
	}
}
