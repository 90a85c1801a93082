package sandbox

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.DockerMain(m)) }

// openDockerT opens a docker sandbox of the test daemon's base image
// (testenv.Docker), with DOCKER_HOST set for the test.
func openDockerT(t *testing.T, cfg Config) Sandbox {
	t.Helper()
	t.Setenv("DOCKER_HOST", testenv.Docker(t))
	cfg.Type = "docker"
	if cfg.Image == "" {
		cfg.Image = testenv.DockerBaseImage
	}
	sb, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// containers lists the daemon's containers, running or not, by name.
func containers(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--format", "{{.Names}}").CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps -a: %v: %s", err, out)
	}
	return strings.Fields(string(out))
}

// noContainersLeft fails the test when a sandbox container outlived its
// job: --rm, and the kill on timeout, must leave none.
func noContainersLeft(t *testing.T) {
	t.Helper()
	// --rm removes a container shortly after its CLI returns.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, c := range containers(t) {
			if strings.HasPrefix(c, "nel-sandbox-") {
				left = append(left, c)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers left after the test: %q", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A job on a real daemon: its program's output, exit status and
// environment come back; it has no network but loopback; its root is
// read-only, and only its work folder's files come back.
func TestDockerRealJob(t *testing.T) {
	sb := openDockerT(t, Config{Name: "dk"})
	res, err := sb.Run(context.Background(), Job{
		Command: []string{"bash", "-c", `read -r line; echo "$line $GREETING"; ls /sys/class/net; echo oops >&2
touch /etc/evil 2>/dev/null && echo root-writable
echo made > out.txt; echo tmp > /tmp/t && cat /tmp/t; exit 3`},
		Stdin:   []byte("hello\n"),
		Env:     map[string]string{"GREETING": "world"},
		Files:   map[string][]byte{"in.txt": []byte("x")},
		Collect: []string{"out.txt", "in.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "hello world\nlo\ntmp\n" || string(res.Stderr) != "oops\n" || res.Limit != LimitNone {
		t.Errorf("exit %d limit %q stdout %q stderr %q", res.ExitCode, res.Limit, res.Stdout, res.Stderr)
	}
	if string(res.Files["out.txt"]) != "made\n" || string(res.Files["in.txt"]) != "x" {
		t.Errorf("files %q", res.Files)
	}
	noContainersLeft(t)
}

// A job past its timeout: its container is killed (not only the docker
// CLI), so none is left running, and the result says timeout.
func TestDockerRealTimeout(t *testing.T) {
	sb := openDockerT(t, Config{})
	start := time.Now()
	res, err := sb.Run(context.Background(), Job{Command: []string{"sleep", "60"}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit != LimitTimeout {
		t.Errorf("limit %q (exit %d, signal %q, stderr %q), want timeout", res.Limit, res.ExitCode, res.Signal, res.Stderr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the job took %v: the kill did not stop it", d)
	}
	noContainersLeft(t)
}

// An image the daemon does not have and no registry serves: docker run's
// own failure (exit 125) is an error naming the image, not a program's
// exit status.
func TestDockerRealMissingImage(t *testing.T) {
	sb := openDockerT(t, Config{Name: "dk", Image: "nel-test/absent:1"})
	res, err := sb.Run(context.Background(), Job{Command: []string{"true"}})
	if err == nil {
		t.Fatalf("no error; result %+v", res)
	}
	// The daemon reaches no registry here: its error is a failed pull
	// (Unable to find image … locally, then the registry's), which must
	// read as one.
	if !strings.Contains(err.Error(), `image "nel-test/absent:1" cannot be pulled`) {
		t.Errorf("error %q does not say the image cannot be pulled", err)
	}
	noContainersLeft(t)
}

// A session on a real daemon: /app kept from one command to the next,
// /tests shown to the verifier only, the reward file read back.
func TestDockerSessionReal(t *testing.T) {
	sessionRoundTrip(t, openDockerT(t, Config{}))
	noContainersLeft(t)
}

// What a session's container leaves in /app is the container user's
// (root's, with no user namespace); Close removes it all, and what the
// model wrote cannot escape the session folder.
func TestDockerSessionRealCleanup(t *testing.T) {
	sb := openDockerT(t, Config{})
	app := t.TempDir()
	writeFiles(t, app, map[string]string{"src/main.sh": "echo hi\n"})
	s, err := OpenSession(context.Background(), sb, SessionSpec{App: app, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	root := sessionRoot(s)
	outside := filepath.Join(t.TempDir(), "escape")
	res := execT(t, s, shell(`mkdir -p deep/er && echo 1 > deep/er/f && chmod 000 deep/er && ln -s `+outside+` link && (echo x > link) 2>/dev/null; cd src && bash main.sh`))
	if res.ExitCode != 0 || string(res.Stdout) != "hi\n" {
		t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("a link in /app reached the host's %s: %v", outside, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("session folder after Close: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(app, "src", "main.sh")); err != nil || string(b) != "echo hi\n" {
		t.Errorf("the task's own /app files changed: %q %v", b, err)
	}
	noContainersLeft(t)
}

// A session command past its timeout kills its container.
func TestDockerSessionRealTimeout(t *testing.T) {
	sb := openDockerT(t, Config{})
	s, err := OpenSession(context.Background(), sb, SessionSpec{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := execT(t, s, Command{Argv: []string{"sh", "-c", "echo started; sleep 60"}, Timeout: 2 * time.Second})
	if res.Limit != LimitTimeout || string(res.Stdout) != "started\n" {
		t.Errorf("limit %q stdout %q, want timeout after the first line", res.Limit, res.Stdout)
	}
	noContainersLeft(t)
}

// A sandbox server (a pool's, nel-run sandbox-server) on the real docker
// engine, through the remote client: the session protocol (POST /session,
// its exec, the tests sent with the verifier's command) keeps /app and
// shows /tests to the verifier only, and leaves no container.
func TestServerDockerEngineSession(t *testing.T) {
	dk := openDockerT(t, Config{Concurrency: 2})
	ts := httptest.NewServer(NewServer(dk, ServerOptions{Slots: 2}))
	defer ts.Close()
	sessionRoundTrip(t, openRemoteT(t, t.Context(), []string{ts.URL}, nil))
	noContainersLeft(t)
}

// Each of docker run's limits stops a real container, and the result
// names the limit: a stand-in docker cannot say how the real one reports
// them (the CLI's exit status 128+signal, the kernel's messages).
func TestDockerRealLimits(t *testing.T) {
	sb := openDockerT(t, Config{MemoryBytes: 64 << 20, MaxProcesses: 16, OutputBytes: 1 << 16})
	for _, c := range []struct {
		name, script string
		want         Limit
	}{
		// bash holds the whole string: past 64 MiB the OOM killer ends it.
		{"memory", `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo ${#x}`, LimitMemory},
		// busybox sh gives up at the first fork refused (bash retries,
		// and may then succeed: no limit stopped it).
		{"processes", `sh -c 'for i in $(seq 40); do sleep 2 & done; wait'`, LimitProcesses},
		{"file size", `head -c 100000000 /dev/zero > /work/big`, LimitFileSize},
		{"output", `yes`, LimitOutput},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := sb.Run(context.Background(), Job{Command: []string{"bash", "-c", c.script}, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.Limit != c.want {
				t.Errorf("limit %q (exit %d, signal %q, stderr %q), want %q", res.Limit, res.ExitCode, res.Signal, firstLines(res.Stderr, 3), c.want)
			}
		})
	}
	noContainersLeft(t)
}

// A session whose image the docker engine builds (SessionSpec.Build, a
// Harbor task's environment/ with a Dockerfile that RUNs, and whose USER
// is not root, as many task images run): /app starts as the built
// image's (what the RUN step made, not the build folder's copy), the
// root is the built one, and the session's folders, made on the host by
// another user, are the container user's to write, the task's files
// included. The folder is built once for all its sessions, each starting
// afresh; Close removes what the user left. A Dockerfile whose build
// fails fails the session with docker's words.
func TestDockerSessionRealBuild(t *testing.T) {
	var logs bytes.Buffer
	sb := openDockerT(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Dockerfile": "FROM " + testenv.DockerBaseImage + "\nWORKDIR /app\nCOPY . /app\nRUN mkdir sub && echo deep > sub/f.txt && rm Dockerfile && echo os > /etc/marker\nUSER nobody\n",
		"given.txt":  "given\n",
	})
	tests := t.TempDir()
	writeFiles(t, tests, map[string]string{"test.sh": "cat /app/given.txt /app/sub/f.txt > /logs/verifier/reward.txt\n"})
	for i := range 2 {
		s, err := OpenSession(context.Background(), sb, SessionSpec{Build: dir, App: dir, Tests: tests, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		root := sessionRoot(s)
		res := execT(t, s, shell("id -u; ls; cat /etc/marker; echo more >> given.txt && echo more >> sub/f.txt && mkdir new && echo t > /tmp/t && echo a > /logs/agent/a"))
		if want := "65534\ngiven.txt\nsub\nos\n"; res.ExitCode != 0 || string(res.Stdout) != want {
			t.Errorf("session %d: exit %d stdout %q stderr %q, want %q", i, res.ExitCode, res.Stdout, res.Stderr, want)
		}
		if res := execT(t, s, Command{Argv: []string{"sh", "/tests/test.sh"}, WithTests: true}); res.ExitCode != 0 {
			t.Errorf("session %d: verifier as nobody: exit %d stderr %q", i, res.ExitCode, res.Stderr)
		}
		if res := execT(t, s, Command{Argv: []string{"cat", "/logs/verifier/reward.txt"}}); string(res.Stdout) != "given\nmore\ndeep\nmore\n" {
			t.Errorf("session %d: reward %q", i, res.Stdout)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("session %d: folder after Close: %v", i, err)
		}
	}
	if n := strings.Count(logs.String(), "session image built"); n != 1 {
		t.Errorf("built %d times for two sessions, want once:\n%s", n, logs.String())
	}

	bad := t.TempDir()
	writeFiles(t, bad, map[string]string{"Dockerfile": "FROM " + testenv.DockerBaseImage + "\nRUN echo no such step >&2; exit 3\n"})
	if s, err := OpenSession(context.Background(), sb, SessionSpec{Build: bad}); err == nil {
		s.Close()
		t.Error("a failing build opened a session")
	} else if !strings.Contains(err.Error(), "docker build of "+bad) || !strings.Contains(err.Error(), "returned a non-zero code: 3") {
		t.Errorf("failing build: %v", err)
	}
	noContainersLeft(t)
}

// Only the docker and apptainer engines build a session's image; the
// others say so.
func TestSessionBuildRefused(t *testing.T) {
	sb := openLocalT(t, Config{})
	_, err := OpenSession(context.Background(), sb, SessionSpec{Build: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not supported yet: building a session's image") {
		t.Errorf("local engine, Build: %v", err)
	}
}

// A build its caller gives up on (a sample's time budget) is not the
// Dockerfile's failure: the next session of the task builds again.
func TestDockerBuildCancelledRetried(t *testing.T) {
	sb := openDockerT(t, Config{})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"Dockerfile": "FROM " + testenv.DockerBaseImage + "\nWORKDIR /app\nRUN echo ok > ok.txt\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := OpenSession(ctx, sb, SessionSpec{Build: dir}); err == nil {
		s.Close()
		t.Fatal("a cancelled build opened a session")
	}
	s, err := OpenSession(context.Background(), sb, SessionSpec{Build: dir, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("the session after a cancelled build: %v", err)
	}
	defer s.Close()
	if res := execT(t, s, shell("cat ok.txt")); string(res.Stdout) != "ok\n" {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}
