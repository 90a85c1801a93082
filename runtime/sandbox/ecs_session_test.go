package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/fakeaws"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// taskDirs writes a Harbor-like task's environment files (an executable
// script among them) and its tests.
func taskDirs(t *testing.T) (app, tests string) {
	t.Helper()
	app, tests = t.TempDir(), t.TempDir()
	for p, data := range map[string]string{
		filepath.Join(app, "hello.txt"):    "hi\n",
		filepath.Join(app, "src/run.sh"):   "#!/bin/sh\necho ran\n",
		filepath.Join(tests, "test.sh"):    "#!/bin/sh\necho verifier-secret\n",
		filepath.Join(tests, "data/x.txt"): "x\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return app, tests
}

func openECSSession(t *testing.T, ctx context.Context, sb sandbox.Sandbox, spec sandbox.SessionSpec) sandbox.Session {
	t.Helper()
	s, err := sandbox.OpenSession(ctx, sb, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sh(t *testing.T, s sandbox.Session, script string, withTests bool) string {
	t.Helper()
	res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", script}, WithTests: withTests})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stdout) + string(res.Stderr)
}

// onlyTask is the one task RunTask started.
func onlyTask(t *testing.T, f *fakeaws.ECS) string {
	t.Helper()
	tasks := f.Tasks()
	if len(tasks) != 1 {
		t.Fatalf("%d tasks started, want 1", len(tasks))
	}
	for arn := range tasks {
		return arn
	}
	return ""
}

// stopReasons are the reasons of the StopTask calls.
func stopReasons(f *fakeaws.ECS) []string {
	var out []string
	for _, c := range f.Called("StopTask") {
		out = append(out, c.Body["reason"].(string))
	}
	return out
}

// One task holds the whole session: a command sees what the one before
// it wrote, the task runs the sample's own image, and /tests exists only
// while the verifier's command runs.
func TestECSSessionState(t *testing.T) {
	f := fakeaws.New(t)
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, nil)
	app, tests := taskDirs(t)
	s := openECSSession(t, context.Background(), sb, sandbox.SessionSpec{App: app, Tests: tests, Image: "task-image:1"})
	arn := onlyTask(t, f)
	testsDir := filepath.Join(f.Root(arn), "tests")

	if got := sh(t, s, "cat hello.txt; echo made > new.txt; mkdir -p ../logs/agent && echo note > ../logs/agent/n", false); got != "hi\n" {
		t.Errorf("first command: %q", got)
	}
	if got := sh(t, s, "cat new.txt ../logs/agent/n; ./src/run.sh; test -e ../tests && echo tests-visible || echo no-tests", false); got != "made\nnote\nran\nno-tests\n" {
		t.Errorf("second command: %q, want the first one's files, the script still executable, no /tests", got)
	}
	if _, err := os.Stat(testsDir); !os.IsNotExist(err) {
		t.Errorf("before the verifier, the task holds %s (err %v)", testsDir, err)
	}
	if got := sh(t, s, "cat ../tests/data/x.txt; ../tests/test.sh; cat new.txt", true); got != "x\nverifier-secret\nmade\n" {
		t.Errorf("verifier: %q, want the tests and the agent's files", got)
	}
	if _, err := os.Stat(testsDir); !os.IsNotExist(err) {
		t.Errorf("after the verifier, the task still holds %s (err %v)", testsDir, err)
	}
	if got := sh(t, s, "test -e ../tests && echo tests-visible || echo no-tests", false); got != "no-tests\n" {
		t.Errorf("a command after the verifier: %q", got)
	}
	if n := len(f.Called("RunTask")); n != 1 {
		t.Errorf("RunTask called %d times, want 1 for the whole session", n)
	}
	reg := f.Called("RegisterTaskDefinition")
	if len(reg) != 2 || containerImage(reg[1].Body, "main") != "task-image:1" {
		t.Errorf("RegisterTaskDefinition calls %d, want the sandbox's then the task image's", len(reg))
	}
	if got := f.Called("RunTask")[0].Body["taskDefinition"]; got != "arn:aws:ecs:us-west-2:123456789012:task-definition/nel-sandbox-py:2" {
		t.Errorf("RunTask task definition %v", got)
	}
	if len(f.Called("StopTask")) != 0 {
		t.Fatal("the task was stopped before Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f.CheckAllStopped("nel-test", 1)
	if r := stopReasons(f); len(r) != 1 || r[0] != "nel: session closed" {
		t.Errorf("StopTask reasons %q", r)
	}
	if _, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "was stopped: session closed") {
		t.Errorf("Exec after Close: %v", err)
	}
	if strings.Contains(logs.String(), "verifier-secret") {
		t.Error("the tests' content is in the log")
	}
}

// containerImage is the image of the named container of a
// RegisterTaskDefinition request.
func containerImage(td map[string]any, name string) string {
	for _, c := range td["containerDefinitions"].([]any) {
		if c := c.(map[string]any); c["name"] == name {
			return c["image"].(string)
		}
	}
	return ""
}

// waitStopped waits for a StopTask call and returns its reason.
func waitStopped(t *testing.T, f *fakeaws.ECS) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r := stopReasons(f); len(r) > 0 {
			if len(r) != 1 {
				t.Errorf("StopTask called %d times: %q", len(r), r)
			}
			return r[0]
		}
	}
	t.Fatal("the task was never stopped")
	return ""
}

// The sample's cancellation and max_task_lifetime_sec stop the task
// without a Close, and the session's next command says why.
func TestECSSessionStopOnCancelAndLifetime(t *testing.T) {
	for _, c := range []struct {
		name, want string
		life       time.Duration
		cancel     bool
	}{
		{"cancel", "the sample was cancelled", time.Minute, true},
		{"lifetime", "max_task_lifetime_sec (300ms) reached", 300 * time.Millisecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fakeaws.New(t)
			var logs bytes.Buffer
			sb := openFakeECS(t, f, &logs, func(e *sandbox.ECSConfig) { e.MaxTaskLifetime = c.life })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := openECSSession(t, ctx, sb, sandbox.SessionSpec{})
			if got := sh(t, s, "echo up", false); got != "up\n" {
				t.Fatalf("command: %q", got)
			}
			if c.cancel {
				cancel()
			}
			if r := waitStopped(t, f); r != "nel: "+c.want {
				t.Errorf("StopTask reason %q, want %q", r, "nel: "+c.want)
			}
			f.CheckAllStopped("nel-test", 1)
			_, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"true"}})
			if err == nil || !strings.Contains(err.Error(), "was stopped: "+c.want) {
				t.Errorf("Exec after the stop: %v", err)
			}
		})
	}
}

// A task that ECS stops under the session (a Spot reclaim, an OOM kill)
// fails the next command with ECS's reason and the log's tail.
func TestECSSessionTaskStoppedUnder(t *testing.T) {
	f := fakeaws.New(t)
	f.LogLines = []string{"session command started"}
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, nil)
	s := openECSSession(t, context.Background(), sb, sandbox.SessionSpec{})
	sh(t, s, "echo data > kept.txt", false)
	arn := onlyTask(t, f)
	f.StopUnder(arn, "SpotInterruption", "Your Spot Task was interrupted.")
	res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"cat", "kept.txt"}})
	if err == nil {
		t.Fatalf("Exec on a stopped task = %+v, want an error", res)
	}
	for _, want := range []string{"sandbox py: ecs_fargate: task " + arn,
		"the task stopped: SpotInterruption: Your Spot Task was interrupted.",
		"ends: session command started"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
	s.Close()
	f.CheckAllStopped("nel-test", 1)
}

// Served by an engine that binds /tests from a directory (bubblewrap in
// the fake's task), the verifier's tests are staged for its command only:
// the agent's commands see the task's /app and no /tests.
func TestECSSessionStagedTests(t *testing.T) {
	f := fakeaws.New(t)
	f.TaskEngine = "local"
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, nil)
	app, tests := taskDirs(t)
	s := openECSSession(t, context.Background(), sb, sandbox.SessionSpec{App: app, Tests: tests})
	if got := sh(t, s, "echo edited > /app/hello.txt; ls /tests 2>/dev/null || echo no-tests", false); got != "no-tests\n" {
		t.Errorf("agent: %q", got)
	}
	if got := sh(t, s, "cat /app/hello.txt /tests/data/x.txt; /tests/test.sh", true); got != "edited\nx\nverifier-secret\n" {
		t.Errorf("verifier: %q", got)
	}
	if got := sh(t, s, "ls /tests 2>/dev/null || echo no-tests", false); got != "no-tests\n" {
		t.Errorf("after the verifier: %q", got)
	}
	s.Close()
	f.CheckAllStopped("nel-test", 1)
}
