package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// openSessionT opens a local session, ending the test when bubblewrap is
// missing.
func openSessionT(t *testing.T, spec SessionSpec) *session {
	t.Helper()
	sb := openLocalT(t, Config{})
	s, err := OpenSession(context.Background(), sb, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*session)
}

func execT(t *testing.T, s Session, c Command) *Result {
	t.Helper()
	res, err := s.Exec(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func shell(script string) Command { return Command{Argv: []string{"sh", "-c", script}} }

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLocalSessionState(t *testing.T) {
	app := t.TempDir()
	writeFiles(t, app, map[string]string{"hello.txt": "hi\n", "src/run.sh": "echo ran\n"})
	s := openSessionT(t, SessionSpec{App: app})

	// The task's files are in /app, executable bits kept; the working
	// directory is /app.
	res := execT(t, s, shell("pwd; cat hello.txt; ./src/run.sh"))
	if got := string(res.Stdout); got != "/app\nhi\nran\n" || res.ExitCode != 0 {
		t.Fatalf("first command: stdout %q stderr %q exit %d", got, res.Stderr, res.ExitCode)
	}
	// What one command writes under /app, /tmp and /logs, the next sees.
	res = execT(t, s, shell("echo changed > hello.txt && echo t > /tmp/t && echo v > /logs/verifier/reward.txt && mkdir -p deep/er && echo d > deep/er/f"))
	if res.ExitCode != 0 {
		t.Fatalf("writes failed: %s", res.Stderr)
	}
	res = execT(t, s, Command{Argv: []string{"cat", "/app/hello.txt", "/tmp/t", "/logs/verifier/reward.txt", "deep/er/f"}})
	if got := string(res.Stdout); got != "changed\nt\nv\nd\n" {
		t.Errorf("second command sees %q (stderr %q)", got, res.Stderr)
	}
	// The task directory on the host is a source, never a target.
	if data, _ := os.ReadFile(filepath.Join(app, "hello.txt")); string(data) != "hi\n" {
		t.Errorf("the task's hello.txt on the host became %q", data)
	}
	if _, err := os.Stat(filepath.Join(app, "deep")); err == nil {
		t.Error("a directory made in /app appeared in the task directory on the host")
	}
	// Everything else is read-only, and there is no /tests.
	for _, p := range []string{"/x", "/usr/x", "/etc/x"} {
		if res := execT(t, s, shell("echo x > "+p)); res.ExitCode == 0 {
			t.Errorf("writing %s succeeded", p)
		}
	}
	if res := execT(t, s, shell("test -e /tests")); res.ExitCode == 0 {
		t.Error("/tests exists for a command without WithTests")
	}
	// Command.Dir and Env.
	res = execT(t, s, Command{Argv: []string{"sh", "-c", `pwd; echo "$V"`}, Dir: "/app/deep", Env: map[string]string{"V": "val"}})
	if got := string(res.Stdout); got != "/app/deep\nval\n" {
		t.Errorf("Dir/Env: got %q", got)
	}
	if _, err := s.Exec(context.Background(), Command{Argv: []string{"true"}, Dir: "app"}); err == nil {
		t.Error("a relative working directory was accepted")
	}
}

func TestLocalSessionTests(t *testing.T) {
	tests := t.TempDir()
	writeFiles(t, tests, map[string]string{"test.sh": "echo 1 > /logs/verifier/reward.txt\n"})
	s := openSessionT(t, SessionSpec{Tests: tests})

	if res := execT(t, s, shell("ls /tests")); res.ExitCode == 0 {
		t.Errorf("the agent's command sees /tests: %q", res.Stdout)
	}
	res := execT(t, s, Command{Argv: []string{"sh", "-c", "ls /tests && /tests/test.sh && ! touch /tests/new 2>/dev/null"}, WithTests: true})
	if res.ExitCode != 0 || string(res.Stdout) != "test.sh\n" {
		t.Fatalf("verifier: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The reward the verifier wrote stays for the caller to read.
	res = execT(t, s, Command{Argv: []string{"cat", "/logs/verifier/reward.txt"}})
	if string(res.Stdout) != "1\n" {
		t.Errorf("reward %q", res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(tests, "new")); err == nil {
		t.Error("the verifier wrote into the tests directory")
	}
	// Without a tests directory, WithTests is the caller's mistake.
	s2 := openSessionT(t, SessionSpec{})
	if _, err := s2.Exec(context.Background(), Command{Argv: []string{"true"}, WithTests: true}); err == nil || !strings.Contains(err.Error(), "no tests directory") {
		t.Errorf("WithTests without tests: err %v", err)
	}
}

// alive reports whether a host process runs with exactly this argv.
func alive(argv ...string) bool {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range dirs {
		if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, want) {
			return true
		}
	}
	return false
}

// waitGone waits up to 5 s for no process to run argv.
func waitGone(argv ...string) bool {
	for range 50 {
		if !alive(argv...) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func TestLocalSessionKillsProcessTree(t *testing.T) {
	s := openSessionT(t, SessionSpec{Timeout: 30 * time.Second})
	secs := strconv.Itoa(3000 + int(time.Now().UnixNano()%1000))
	// The probe itself sees a live process.
	probe := exec.Command("sleep", secs)
	if err := probe.Start(); err != nil {
		t.Fatal(err)
	}
	seen := alive("sleep", secs)
	probe.Process.Kill()
	probe.Wait()
	if !seen {
		t.Fatal("alive does not see a running sleep")
	}

	// A command past its timeout: it and every process it started die.
	start := time.Now()
	res := execT(t, s, Command{Argv: []string{"sh", "-c", "sleep " + secs + " & sleep " + secs + " & echo started; wait"}, Timeout: time.Second})
	if res.Limit != LimitTimeout || string(res.Stdout) != "started\n" {
		t.Errorf("limit %q stdout %q, want timeout after started", res.Limit, res.Stdout)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timeout of 1s took %s", d)
	}
	if !waitGone("sleep", secs) {
		t.Error("a process of the timed-out command still runs")
	}

	// A command that ends leaves nothing behind either.
	res = execT(t, s, shell("sleep "+secs+" >/dev/null 2>&1 & echo bg"))
	if res.ExitCode != 0 || res.Limit != LimitNone {
		t.Errorf("background command: exit %d limit %q", res.ExitCode, res.Limit)
	}
	if !waitGone("sleep", secs) {
		t.Error("a background process outlived its command")
	}
}

func TestLocalSessionClose(t *testing.T) {
	s := openSessionT(t, SessionSpec{})
	// A directory the program made unreadable and unwritable does not stop
	// the removal.
	if res := execT(t, s, shell("mkdir -p locked/in && echo x > locked/in/f && chmod 000 locked/in locked")); res.ExitCode != 0 {
		t.Fatalf("setup: %s", res.Stderr)
	}
	dir := s.dir.path
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session dir %s after Close: %v", dir, err)
	}
	if _, err := s.Exec(context.Background(), Command{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Exec after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenSessionRefused(t *testing.T) {
	// Every engine nel-run opens keeps sessions; one that does not is
	// refused by name.
	_, err := OpenSession(context.Background(), &fakeSandbox{name: "f"}, SessionSpec{})
	if err == nil || !strings.Contains(err.Error(), "sandbox f: not supported yet: a stateful session on this engine") {
		t.Errorf("engine without sessions: err %v", err)
	}
	// An ecs_fargate task's container engine holds one session in its
	// life: a second would share the first one's /app.
	task := openContainer("task", Config{Root: t.TempDir()})
	if _, err := OpenSession(context.Background(), task, SessionSpec{}); err != nil {
		t.Fatalf("container engine: %v", err)
	}
	if _, err := OpenSession(context.Background(), task, SessionSpec{}); err == nil || !strings.Contains(err.Error(), "sandbox task: this container holds a session already") {
		t.Errorf("container engine, second session: err %v", err)
	}
	sb := openLocalT(t, Config{})
	if _, err := OpenSession(context.Background(), sb, SessionSpec{App: filepath.Join(t.TempDir(), "missing")}); err == nil || !strings.Contains(err.Error(), "session App") {
		t.Errorf("missing App: err %v", err)
	}
}

func TestLocalSessionCloseStopsCommand(t *testing.T) {
	s := openSessionT(t, SessionSpec{Timeout: time.Minute})
	errc := make(chan error, 1)
	go func() {
		_, err := s.Exec(context.Background(), shell("sleep 60"))
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close waited %s for a running command", d)
	}
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "session closed while the command ran") {
		t.Errorf("the running command: err %v", err)
	}
}

func TestLocalSessionsAreSeparate(t *testing.T) {
	sb := openLocalT(t, Config{Concurrency: 2})
	var ss [2]Session
	for i := range ss {
		s, err := OpenSession(context.Background(), sb, SessionSpec{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ss[i] = s
	}
	execT(t, ss[0], shell("echo a > /app/f && echo a > /tmp/f && echo a > /logs/f"))
	res := execT(t, ss[1], shell("cat /app/f /tmp/f /logs/f"))
	if res.ExitCode == 0 || len(res.Stdout) != 0 {
		t.Errorf("one session sees another's files: %q", res.Stdout)
	}
}
