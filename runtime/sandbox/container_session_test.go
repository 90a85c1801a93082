package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// pid1Env makes this test binary play an ecs_fargate task's exec server:
// the first process of its own PID namespace.
const pid1Env = "NEL_TEST_CONTAINER_PID1"

// What an agent's command leaves running cannot read /tests: in a task,
// where the exec server is the first process, the processes left behind
// are killed before the verifier's tests are written. The scenario runs
// in a PID namespace of its own (bubblewrap --as-pid-1): a detached
// process waits for /tests, and the verifier runs long enough for it to
// copy them, had it survived.
func TestContainerSessionKillsLeftovers(t *testing.T) {
	if os.Getenv(pid1Env) != "" {
		leftoverScenario(t, os.Getenv(pid1Env))
		return
	}
	openLocalT(t, Config{}) // bubblewrap runs here, or the test ends
	root := t.TempDir()
	cmd := exec.Command("bwrap", "--unshare-pid", "--as-pid-1", "--dev-bind", "/", "/", "--proc", "/proc", "--",
		os.Args[0], "-test.run=^TestContainerSessionKillsLeftovers$", "-test.v")
	cmd.Env = append(os.Environ(), pid1Env+"="+root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the scenario as PID 1: %v\n%s", err, out)
	}
	for _, f := range []string{"stolen", "tried"} {
		if _, err := os.Stat(filepath.Join(root, "app", f)); !os.IsNotExist(err) {
			t.Errorf("the leftover process wrote %s: it outlived the agent's command into the verifier's (err %v)\n%s", f, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "app", "started")); err != nil {
		t.Errorf("the leftover process never started: %v\n%s", err, out)
	}
}

func leftoverScenario(t *testing.T, root string) {
	if os.Getpid() != 1 {
		t.Fatalf("pid %d, want 1", os.Getpid())
	}
	c := openContainer("task", Config{Root: root})
	// Tests names a directory only to say the session has tests: their
	// files come with the verifier's command, as they do to a task.
	s, err := c.openSession(nil, SessionSpec{Timeout: 30 * time.Second, Tests: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	run := func(cmd Command, tests []treeEntry) string {
		res, err := s.ExecTests(context.Background(), cmd, tests)
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Stdout) + string(res.Stderr)
	}
	// Detached from the command's process group and session, as an
	// agent's daemon would be.
	thief := `touch started; until [ -e ../tests/test.sh ]; do sleep 0.05; done; cp ../tests/test.sh stolen; echo > tried`
	run(Command{Argv: []string{"sh", "-c", "setsid sh -c '" + thief + "' >/dev/null 2>&1 < /dev/null &"}}, nil)
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(filepath.Join(root, "app", "started")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	tests := []treeEntry{{Path: "test.sh", Data: []byte("echo secret\n"), Mode: 0o755}}
	if got := run(Command{Argv: []string{"sh", "-c", "sleep 1; cat ../tests/test.sh"}, WithTests: true}, tests); got != "echo secret\n" {
		t.Errorf("verifier: %q", got)
	}
}
