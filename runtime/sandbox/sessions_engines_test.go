package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// recordingCLI fakes an engine's CLI that answers its probe (probe) and
// writes the arguments of every other call, each ended by a NUL (an
// argument may hold newlines: a script), to the file it returns.
func recordingCLI(t *testing.T, name, probe string) string {
	t.Helper()
	args := filepath.Join(t.TempDir(), "args")
	fakeCLI(t, name, `case "$1" in
`+probe+`) echo 1.0; exit 0;;
esac
printf '%s\0' "$@" > "`+args+`"`)
	return args
}

func readArgs(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// sessionRoot is the host directory of a session from OpenSession.
func sessionRoot(s Session) string { return s.(*session).dir.path }

func TestDockerSessionArgv(t *testing.T) {
	args := recordingCLI(t, "docker", "info")
	sb, err := Open(context.Background(), Config{Type: "docker", Image: "img", Network: "none"})
	if err != nil {
		t.Fatal(err)
	}
	tests := t.TempDir()
	s, err := OpenSession(context.Background(), sb, SessionSpec{Tests: tests, Image: "task-img"})
	if err != nil {
		t.Fatal(err)
	}
	root := sessionRoot(s)
	// The container's user is not ours: the directories it writes are open.
	if fi, err := os.Stat(filepath.Join(root, "app")); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("app dir mode %v, %v; want 0777", fi.Mode(), err)
	}
	if _, err := s.Exec(context.Background(), Command{Argv: []string{"ls"}, Dir: "/app/src", Env: map[string]string{"K": "v"}}); err != nil {
		t.Fatal(err)
	}
	got := readArgs(t, args)
	mounts := []string{"-v", root + "/app:/app", "-v", root + "/logs:/logs", "-v", root + "/tmp:/tmp", "-w", "/app/src", "-e", "K", "task-img", "ls"}
	if !slices.Equal(got[len(got)-len(mounts):], mounts) || !slices.Contains(got, "--read-only") || !slices.Contains(got, "--rm") {
		t.Errorf("docker argv %q\nwant it to end with %q", got, mounts)
	}
	if _, err := s.Exec(context.Background(), Command{Argv: []string{"true"}, WithTests: true}); err != nil {
		t.Fatal(err)
	}
	if got := readArgs(t, args); !slices.Contains(got, tests+":/tests:ro") || slices.Contains(got, "--tmpfs") {
		t.Errorf("verifier argv %q: want the tests bound read-only and /tmp the session's", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session dir after Close: %v", err)
	}
}

func TestApptainerSessionArgv(t *testing.T) {
	args := recordingCLI(t, "apptainer", "version")
	sb, err := Open(context.Background(), Config{Type: "apptainer", Image: "img.sif", MaxProcesses: 16})
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSession(context.Background(), sb, SessionSpec{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	root := sessionRoot(s)
	if _, err := s.Exec(context.Background(), Command{Argv: []string{"ls"}, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	want := []string{"exec", "--containall", "--no-privs", "--no-home", "--home", "/tmp", "--net", "--network", "none",
		"--bind", root + "/app:/app", "--bind", root + "/logs:/logs", "--bind", root + "/tmp:/tmp",
		"--pwd", "/app", "img.sif",
		"/bin/sh", "-c", limitScript, "sh", "2147483648", "16", "67108864", "11", "256", "ls"}
	got := readArgs(t, args)
	if os.Geteuid() == 0 {
		// As root, a uid of the session's own (apptainer_uid.go).
		var uid, gid int
		if len(got) < 11 || got[9] != "--security" {
			t.Fatalf("apptainer argv as root %q: want --security after the network", got)
		}
		if _, err := fmt.Sscanf(got[10], "uid:%d,gid:%d", &uid, &gid); err != nil || uid != gid || uid < sandboxUIDBase || uid >= sandboxUIDBase+sandboxUIDCount {
			t.Errorf("--security %q: want a uid and gid of the sandbox's range (%v)", got[10], err)
		}
		got = slices.Delete(got, 9, 11)
	}
	if !slices.Equal(got, want) {
		t.Errorf("apptainer argv\n got %q\nwant %q", got, want)
	}
}

// sessionRoundTrip checks, on a real engine, that a session keeps /app
// from one command to the next and shows /tests to the verifier only.
func sessionRoundTrip(t *testing.T, sb Sandbox) {
	app, tests := t.TempDir(), t.TempDir()
	writeFiles(t, app, map[string]string{"in.txt": "task\n"})
	writeFiles(t, tests, map[string]string{"test.sh": "cat /app/out.txt > /logs/verifier/reward.txt\n"})
	s, err := OpenSession(context.Background(), sb, SessionSpec{App: app, Tests: tests, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Exec(context.Background(), shell("cat in.txt && echo 1 > out.txt && ! test -e /tests"))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "task\n" {
		t.Fatalf("agent command: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res := execT(t, s, Command{Argv: []string{"sh", "/tests/test.sh"}, WithTests: true}); res.ExitCode != 0 {
		t.Fatalf("verifier: exit %d stderr %q", res.ExitCode, res.Stderr)
	}
	if res := execT(t, s, Command{Argv: []string{"cat", "/logs/verifier/reward.txt"}}); string(res.Stdout) != "1\n" {
		t.Errorf("reward %q", res.Stdout)
	}
}

func TestApptainerSessionReal(t *testing.T) {
	t.Parallel()
	sessionRoundTrip(t, openApptainerT(t, Config{}))
}

func TestLocalSessionRoundTrip(t *testing.T) {
	sessionRoundTrip(t, openLocalT(t, Config{}))
}

// A session's image comes from task data (a Harbor task's docker_image)
// or, on a pool's server, from the request: one that starts with "-"
// would reach docker or apptainer as an option (-v=/:/host), not as the
// image, and is refused before the engine runs.
func TestSessionImageNotAnOption(t *testing.T) {
	recordingCLI(t, "docker", "info")
	sb, err := Open(context.Background(), Config{Type: "docker", Image: "img", Network: "none"})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []string{"-v=/:/host", "--privileged"} {
		s, err := OpenSession(context.Background(), sb, SessionSpec{Image: img})
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "cannot start with -") {
			t.Errorf("image %q: %v, want it refused", img, err)
		}
	}
}
