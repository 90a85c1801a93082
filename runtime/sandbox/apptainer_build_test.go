package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
)

// baseRef is the FROM of the tests' Dockerfiles: no registry is reachable
// from a test, so the cache is seeded with testenv's base SIF under the
// name a pull of it would write.
const baseRef = "nel.test/base:1"

// seedBase copies sif into cache as the pull of ref: base-, then the first
// 8 bytes of the reference's SHA-256 in hex.
func seedBase(t *testing.T, cache, ref, sif string) {
	t.Helper()
	sum := sha256.Sum256([]byte(ref))
	b, err := os.ReadFile(sif)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "base-"+hex.EncodeToString(sum[:8])+".sif"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// taskContext writes a build context: files for each name.
func taskContext(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestApptainerBuildReal builds a task's Dockerfile with the real
// SingularityCE and runs the image: the steps ran in the Dockerfile's
// order (a COPY after a RUN that reads nothing yet, then a RUN that reads
// what was copied), ENV reaches the image's commands, the session's /app
// is the image's. Samples of the task at once share one build.
func TestApptainerBuildReal(t *testing.T) {
	allowRootBuilds(t)
	bin, sif := testenv.Apptainer(t)
	cache := filepath.Join(t.TempDir(), "images")
	seedBase(t, cache, baseRef, sif)
	dir := taskContext(t, map[string]string{
		"Dockerfile": "FROM " + baseRef + "\nENV GREETING=\"hello there\"\nWORKDIR /app\n" +
			"RUN test ! -e /opt/tool/v.txt && mkdir -p /opt/tool && echo before > /opt/tool/order\n" +
			"COPY v.txt /opt/tool/\nRUN cat /opt/tool/v.txt >> /opt/tool/order\nCOPY src/ ./src/\n" +
			"RUN echo \"$GREETING\" > made.txt\n",
		"v.txt":       "copied\n",
		"src/main.sh": "echo main\n",
	})
	var logs bytes.Buffer
	var mu sync.Mutex
	sb, err := Open(context.Background(), Config{Type: "apptainer", BuildCache: cache,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sessions := make([]Session, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() { sessions[i], errs[i] = OpenSession(ctx, sb, SessionSpec{Build: dir}) })
	}
	wg.Wait()
	for i, s := range sessions {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		defer s.Close()
	}
	if n := strings.Count(logs.String(), "session image built"); n != 1 {
		t.Errorf("%d builds for three sessions of one task, want 1:\n%s", n, logs.String())
	}
	app := filepath.Join(sessionRoot(sessions[2]), "app")
	for file, want := range map[string]string{"made.txt": "hello there\n", "src/main.sh": "echo main\n"} {
		if b, err := os.ReadFile(filepath.Join(app, file)); err != nil || string(b) != want {
			t.Errorf("session /app/%s: %q, %v; want %q", file, b, err, want)
		}
	}
	built, _ := filepath.Glob(filepath.Join(cache, "task-*.sif"))
	if len(built) != 1 {
		t.Fatalf("built images in the cache: %q", built)
	}
	// A session's command runs in the built image, in its /app.
	res, err := sessions[0].Exec(ctx, Command{Argv: []string{"/bin/sh", "-c", `cat /opt/tool/order; echo "$GREETING"; ls -a / | grep -c nel-build-context; pwd; cat made.txt`}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "before\ncopied\nhello there\n0\n/app\nhello there\n"; string(res.Stdout) != want {
		t.Errorf("a session's command: %q (stderr %q), want %q", res.Stdout, res.Stderr, want)
	}
	// The image is a SIF the CLI reads as such.
	if out, err := exec.CommandContext(ctx, bin, "inspect", "--deffile", built[0]).CombinedOutput(); err != nil || !strings.Contains(string(out), "Bootstrap: localimage") {
		t.Errorf("%s inspect --deffile: %v: %s", bin, err, out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestApptainerBuildFails: a Dockerfile whose RUN fails is the session's
// error with the build's last lines, and the next session of the task
// gets the same error without building again.
func TestApptainerBuildFails(t *testing.T) {
	allowRootBuilds(t)
	_, sif := testenv.Apptainer(t)
	cache := t.TempDir()
	seedBase(t, cache, baseRef, sif)
	dir := taskContext(t, map[string]string{"Dockerfile": "FROM " + baseRef + "\nRUN echo installing-the-tool && exit 3\n"})
	sb, err := Open(context.Background(), Config{Type: "apptainer", Name: "ap", BuildCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenSession(context.Background(), sb, SessionSpec{Build: dir})
	if err == nil || !strings.Contains(err.Error(), "sandbox ap: apptainer build of "+dir+"/Dockerfile") || !strings.Contains(err.Error(), "installing-the-tool") {
		t.Fatalf("a failed build: %v", err)
	}
	// The failure is kept: the second session fails at once, with it.
	start := time.Now()
	_, err2 := OpenSession(context.Background(), sb, SessionSpec{Build: dir})
	if err2 == nil || err2.Error() != err.Error() || time.Since(start) > time.Second {
		t.Errorf("second session: %v after %v; want the first's error at once", err2, time.Since(start))
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "task-*")); len(m) != 0 {
		t.Errorf("a failed build left %q in the cache", m)
	}
	bad := taskContext(t, map[string]string{"Dockerfile": "FROM " + baseRef + "\nADD https://example.com/x /x\n"})
	_, err = OpenSession(context.Background(), sb, SessionSpec{Build: bad})
	if err == nil || !strings.Contains(err.Error(), bad+"/Dockerfile:2: ADD https://example.com/x /x: not supported yet: ADD of a URL") {
		t.Errorf("a Dockerfile that does not convert: %v", err)
	}
}

// fakeApptainer puts an apptainer on PATH that records its argv (one
// line each) in the file it returns; build sleeps while the file named by
// $FAKE_BUILD_SLOW exists, then writes its image.
func fakeApptainer(t *testing.T) string {
	t.Helper()
	calls := filepath.Join(t.TempDir(), "calls")
	fakeCLI(t, "apptainer", `echo "$*" >> `+calls+`
case "$1" in
version) echo 1.3;;
pull) echo pulled > "$3";;
build) while [ -e "$FAKE_BUILD_SLOW" ]; do sleep 0.05; done; echo built > "$4";;
esac`)
	return calls
}

// TestApptainerBuildPull: FROM's image is pulled into the cache once
// (docker:// added to a registry reference) and every task FROM it builds
// on the one file; a build its caller cancelled is not the task's
// failure: the next session builds it.
func TestApptainerBuildPull(t *testing.T) {
	allowRootBuilds(t)
	calls := fakeApptainer(t)
	slow := filepath.Join(t.TempDir(), "slow")
	t.Setenv("FAKE_BUILD_SLOW", slow)
	cache := t.TempDir()
	sb, err := Open(context.Background(), Config{Type: "apptainer", BuildCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	ss := sb
	one := taskContext(t, map[string]string{"Dockerfile": "FROM ghcr.io/org/env:2\nRUN true\n"})
	two := taskContext(t, map[string]string{"Dockerfile": "FROM ghcr.io/org/env:2\nRUN echo two\n"})
	if err := os.WriteFile(slow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = OpenSession(ctx, ss, SessionSpec{Build: one})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a build its caller stopped: %v", err)
	}
	os.Remove(slow)
	for _, dir := range []string{one, two} {
		s, err := OpenSession(context.Background(), ss, SessionSpec{Build: dir})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		s.Close()
	}
	b, _ := os.ReadFile(calls)
	var pulls, builds []string
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "pull "):
			pulls = append(pulls, l)
		case strings.HasPrefix(l, "build "):
			builds = append(builds, l)
		}
	}
	if len(pulls) != 1 || !strings.HasSuffix(pulls[0], " docker://ghcr.io/org/env:2") {
		t.Errorf("pulls %q, want one of docker://ghcr.io/org/env:2", pulls)
	}
	if len(builds) != 3 || builds[2] != "build --fakeroot --force image.sif image.def" {
		t.Errorf("builds %q: want the cancelled one, then one per task, with --fakeroot", builds)
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "task-*.sif")); len(m) != 2 {
		t.Errorf("cache: %q, want two images", m)
	}
}

func TestPullArgv(t *testing.T) {
	for _, c := range []struct {
		ref  string
		want []string
	}{
		{"python:3.12-slim", []string{"apptainer", "pull", "--force", "/c/x.sif", "docker://python:3.12-slim"}},
		{"ghcr.io/org/env@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", []string{"apptainer", "pull", "--force", "/c/x.sif", "docker://ghcr.io/org/env@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}},
		{"localhost:5000/team/env:v1.2", []string{"apptainer", "pull", "--force", "/c/x.sif", "docker://localhost:5000/team/env:v1.2"}},
		// Another transport reads the host's files or daemon: refused.
		{"oras://reg/env:1", nil},
		{"oci-archive:///tmp/x.tar", nil},
		{"docker-daemon:img:1", nil},
		{"docker://python:3", nil},
	} {
		got, err := pullArgv("apptainer", "/c/x.sif", c.ref)
		if !slices.Equal(got, c.want) || (err == nil) != (c.want != nil) {
			t.Errorf("%s: %q, %v; want %q", c.ref, got, err, c.want)
		}
	}
}

// TestApptainerBuildCancelledReal: a build whose caller gives up is
// interrupted, and the CLI removes its temporary folders and the
// processes %post started; nothing of it is cached.
func TestApptainerBuildCancelledReal(t *testing.T) {
	allowRootBuilds(t)
	_, sif := testenv.Apptainer(t)
	cache := t.TempDir()
	seedBase(t, cache, baseRef, sif)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := taskContext(t, map[string]string{"Dockerfile": "FROM " + baseRef + "\nRUN echo started > /dev/null; sleep 47\n"})
	sb, err := Open(context.Background(), Config{Type: "apptainer", BuildCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := OpenSession(ctx, sb, SessionSpec{Build: dir}); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("a build past its caller's deadline: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the interrupted build took %v to stop", d)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the interrupted build left %v in $TMPDIR", left)
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "*")); len(m) != 1 {
		t.Errorf("cache after an interrupted build: %q, want only the base image", m)
	}
	// The CLI has exited; the container's processes die with their
	// namespace a moment later (SIGKILL from its init), so wait a little.
	var out []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _ = exec.Command("sh", "-c", "ps -eo args | grep -c '^sleep [4]7$' || true").Output()
		if strings.TrimSpace(string(out)) == "0" || time.Now().After(deadline) {
			break
		}
	}
	if strings.TrimSpace(string(out)) != "0" {
		t.Errorf("%s processes of the build's %%post still run 10 s after the build stopped", out)
	}
}

// allowRootBuilds lets the test build task images as root (CI runs as
// root; the test's Dockerfiles are its own).
func allowRootBuilds(t *testing.T) {
	t.Setenv(RootBuildsEnv, "1")
}

// As root, a task image is not built unless RootBuildsEnv says the
// datasets are trusted: build --fakeroot by root would run the
// Dockerfile's RUN steps as the host's root. The refusal says why and
// what to do, and nothing is built or cached.
func TestApptainerBuildRefusedAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the refusal is root's; an unprivileged user's build maps its root to the user")
	}
	_, sif := testenv.Apptainer(t)
	t.Setenv(RootBuildsEnv, "")
	cache := t.TempDir()
	seedBase(t, cache, baseRef, sif)
	dir := taskContext(t, map[string]string{"Dockerfile": "FROM " + baseRef + "\nRUN touch /built\n"})
	sb, err := Open(context.Background(), Config{Type: "apptainer", BuildCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenSession(context.Background(), sb, SessionSpec{Build: dir})
	if err == nil || !strings.Contains(err.Error(), "building a task image as root is refused") || !strings.Contains(err.Error(), RootBuildsEnv+"=1") {
		t.Fatalf("a build as root: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "*")); len(m) != 1 {
		t.Errorf("cache after a refused build: %q, want only the base image", m)
	}
}
