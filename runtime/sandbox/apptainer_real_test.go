package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
)

// openApptainerT opens an apptainer sandbox of testenv's base SIF
// (busybox and a static bash, no prlimit) on the real CLI (apptainer or
// SingularityCE's singularity). It sets nothing in the environment, so
// that the tests run in parallel.
func openApptainerT(t *testing.T, cfg Config) Sandbox {
	t.Helper()
	_, sif := testenv.Apptainer(t)
	cfg.Type = "apptainer"
	if cfg.Image == "" {
		cfg.Image = sif
	}
	sb, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// noProcessLeft fails the test when a process whose command line holds
// marker still runs: the kill on timeout must reach the container's
// processes, not only the CLI.
func noProcessLeft(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesWith(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after the test: %q", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func processesWith(marker string) []string {
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var left []string
	for _, p := range pids {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, marker) {
			left = append(left, filepath.Base(filepath.Dir(p))+": "+cmd)
		}
	}
	return left
}

// A job on the real CLI: output, exit status, stdin and environment come
// back; the job's files are at /work and the collected ones return; the
// image's root is read-only, /tmp private, the host's files unseen, and
// nothing the job writes outside /work survives on the host.
func TestApptainerRealJob(t *testing.T) {
	t.Parallel()
	sb := openApptainerT(t, Config{Name: "ap", Env: map[string]string{"FROM_CONFIG": "cfg"}})
	hostDir := t.TempDir()
	secret := filepath.Join(hostDir, "secret")
	if err := os.WriteFile(secret, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("nel-apptainer-test-%d", time.Now().UnixNano())
	res, err := sb.Run(context.Background(), Job{
		Command: []string{"bash", "-c", `read -r line; echo "$line $GREETING $FROM_CONFIG $HOME $PWD"; cat in.txt; echo; echo oops >&2
test -e ` + secret + ` && echo host-visible
touch /etc/evil 2>/dev/null && echo root-writable
for d in /tmp /var/tmp /dev/shm /root; do { echo x > $d/` + mark + `; } 2>/dev/null; done
echo made > out.txt; echo tmp > /tmp/t && cat /tmp/t; exit 3`},
		Stdin:   []byte("hello\n"),
		Env:     map[string]string{"GREETING": "world"},
		Files:   map[string][]byte{"in.txt": []byte("given")},
		Collect: []string{"out.txt", "in.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello world cfg /work /work\ngiven\ntmp\n"; res.ExitCode != 3 || string(res.Stdout) != want || string(res.Stderr) != "oops\n" || res.Limit != LimitNone {
		t.Errorf("exit %d limit %q stdout %q stderr %q; want exit 3, stdout %q, stderr \"oops\\n\"", res.ExitCode, res.Limit, res.Stdout, res.Stderr, want)
	}
	if string(res.Files["out.txt"]) != "made\n" || string(res.Files["in.txt"]) != "given" {
		t.Errorf("files %q", res.Files)
	}
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm", "/root"} {
		if _, err := os.Stat(filepath.Join(d, mark)); err == nil {
			os.Remove(filepath.Join(d, mark))
			t.Errorf("the job wrote the host's %s", d)
		}
	}
}

// The container has loopback only: a listener on the host's 127.0.0.1
// is not reachable from inside.
func TestApptainerRealNoNetwork(t *testing.T) {
	t.Parallel()
	sb := openApptainerT(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	res, err := sb.Run(context.Background(), Job{Command: []string{"bash", "-c",
		fmt.Sprintf(`ls /sys/class/net; (echo hi > /dev/tcp/127.0.0.1/%d) 2>/dev/null && echo reached`, port)},
		Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "lo\n" {
		t.Errorf("stdout %q (stderr %q), want only the loopback device and no connection", res.Stdout, res.Stderr)
	}
	select {
	case <-accepted:
		t.Error("the host's listener accepted a connection from the container")
	default:
	}
}

// A job past its timeout is killed with everything it started in the
// container, and its result says timeout.
func TestApptainerRealTimeout(t *testing.T) {
	t.Parallel()
	sb := openApptainerT(t, Config{})
	// A sleep of a length no other test uses, to find it among processes.
	marker := "sleep 61.25"
	start := time.Now()
	res, err := sb.Run(context.Background(), Job{Command: []string{"sh", "-c", "echo started; " + marker + " & " + marker}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit != LimitTimeout || string(res.Stdout) != "started\n" {
		t.Errorf("limit %q stdout %q (exit %d, signal %q, stderr %q), want timeout after the first line", res.Limit, res.Stdout, res.ExitCode, res.Signal, res.Stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the job took %v: the kill did not stop it", d)
	}
	noProcessLeft(t, marker)
}

// The limits on the real CLI: memory, processes, file size and output
// stop the program and the result names them; the rlimits set in the
// image's shell are the Config's, soft and hard. As root too the process
// limit holds (the program runs as a uid of its own, which the kernel
// counts), and the sandbox warns of nothing when it opens.
func TestApptainerRealLimits(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	sb := openApptainerT(t, Config{MemoryBytes: 64 << 20, MaxProcesses: 16, MaxFileSizeBytes: 1 << 20, OutputBytes: 1 << 16,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if logs.Len() != 0 {
		t.Errorf("the sandbox logged when it opened:\n%s", logs.String())
	}
	cases := []struct {
		name, script string
		want         Limit
	}{
		// bash holds the whole string: past 64 MiB of address space its
		// allocation fails.
		{"memory", `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo ${#x}`, LimitMemory},
		{"file size", `head -c 10000000 /dev/zero > /work/big`, LimitFileSize},
		{"output", `yes`, LimitOutput},
		{"processes", `sh -c 'for i in $(seq 40); do sleep 2 & done; wait'`, LimitProcesses},
	}
	for _, c := range cases {
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
	res, err := sb.Run(context.Background(), Job{Command: []string{"cat", "/proc/self/limits"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// 10 s on one core is 11 CPU seconds (cpuSeconds).
	for _, want := range []string{
		"Max address space         67108864             67108864",
		"Max processes             16                   16",
		"Max file size             1048576              1048576",
		"Max cpu time              11                   11",
		"Max open files            256                  256",
		"Max core file size        0                    0",
	} {
		if !strings.Contains(string(res.Stdout), want) {
			t.Errorf("/proc/self/limits lacks %q:\n%s", want, res.Stdout)
		}
	}
}

// A limit the image's shell cannot set (a process limit above the hard
// one it inherits, which --no-privs leaves it no capability to raise) is
// the sandbox's error naming the image, not a program that failed.
func TestApptainerRealLimitRefused(t *testing.T) {
	t.Parallel()
	_, sif := testenv.Apptainer(t)
	sb := openApptainerT(t, Config{Name: "ap", MaxProcesses: 1 << 30})
	res, err := sb.Run(context.Background(), Job{Command: []string{"echo", "ran"}, Timeout: 10 * time.Second})
	if err == nil {
		t.Fatalf("no error; result exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	for _, want := range []string{"sandbox ap", fmt.Sprintf("image %q", sif), "could not set the job's limits", "1073741824 processes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), programStarts) {
		t.Errorf("error %q holds the line that says the program starts", err)
	}
}

// A program cannot make its own failure read as the sandbox's (an error,
// which is not scored): one that writes the sandbox's failure lines (the
// limit's, with the token of old read from the container's init; an
// apptainer FATAL line) and exits 125 or 255, in a job or a session
// command, has its own result, with its stderr as it wrote it.
func TestApptainerRealForgedFailure(t *testing.T) {
	t.Parallel()
	sb := openApptainerT(t, Config{Name: "ap"})
	s, err := OpenSession(context.Background(), sb, SessionSpec{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name, script string
		exit         int
	}{
		{"limit", `token=$( (tr '\0' '\n' < /proc/1/environ) 2>/dev/null | sed -n 's/.*NEL_LIMIT_TOKEN":"\([^"]*\)".*/\1/p')
echo "nel-sandbox $token: ` + limitFailed + `" >&2; echo "nel-sandbox: ` + limitFailed + `" >&2; exit 125`, 125},
		{"fatal", `echo "FATAL:   stat /app/pytest: no such file or directory" >&2; exit 255`, 255},
		{"starts", `echo "` + programStarts + `" >&2; echo "FATAL:   could not open image" >&2; exit 255`, 255},
	} {
		t.Run(c.name, func(t *testing.T) {
			job, err := sb.Run(context.Background(), Job{Command: []string{"sh", "-c", c.script}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatalf("job: the program's own failure read as the sandbox's: %v", err)
			}
			sess, err := s.Exec(context.Background(), Command{Argv: []string{"sh", "-c", c.script}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatalf("session: the program's own failure read as the sandbox's: %v", err)
			}
			for what, res := range map[string]*Result{"job": job, "session": sess} {
				lines := strings.Split(strings.TrimSuffix(string(res.Stderr), "\n"), "\n")
				if res.ExitCode != c.exit || len(lines) != strings.Count(c.script, ">&2") {
					t.Errorf("%s: exit %d stderr %q, want the program's exit %d and its lines alone", what, res.ExitCode, res.Stderr, c.exit)
				}
			}
		})
	}
}

// An image apptainer cannot open is an error naming it, with apptainer's
// FATAL line, not a program's exit status 255.
func TestApptainerRealMissingImage(t *testing.T) {
	t.Parallel()
	img := filepath.Join(t.TempDir(), "absent.sif")
	sb := openApptainerT(t, Config{Name: "ap", Image: img})
	res, err := sb.Run(context.Background(), Job{Command: []string{"true"}, Timeout: 10 * time.Second})
	if err == nil {
		t.Fatalf("no error; result %+v", res)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("cannot run image %q: FATAL:", img)) {
		t.Errorf("error %q does not name the image and apptainer's FATAL line", err)
	}
	// A session's image too.
	s, err := OpenSession(context.Background(), sb, SessionSpec{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res, err := s.Exec(context.Background(), shell("true")); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("cannot run image %q: FATAL:", img)) {
		t.Errorf("session: error %v (result %+v), want one naming the image and apptainer's FATAL line", err, res)
	}
}

// Sessions on the real CLI: /app keeps what one command wrote for the
// next; two sessions of one sandbox see only their own /app and /tmp; a
// link the model makes in /app does not reach the host; Close removes
// every folder the session made, and the task's own files stay as they
// were.
func TestApptainerSessionRealState(t *testing.T) {
	t.Parallel()
	sb := openApptainerT(t, Config{})
	app := t.TempDir()
	writeFiles(t, app, map[string]string{"src/main.sh": "echo hi\n"})
	outside := filepath.Join(t.TempDir(), "escape")
	var sessions [2]Session
	for i := range sessions {
		s, err := OpenSession(context.Background(), sb, SessionSpec{App: app, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sessions[i] = s
	}
	a, b := sessions[0], sessions[1]
	res := execT(t, a, shell(`echo $HOME; echo a > mine && echo t > /tmp/t && mkdir -p deep/er && echo 1 > deep/er/f && chmod 000 deep/er && ln -s `+outside+` link && (echo x > link) 2>/dev/null; cd src && sh main.sh`))
	if res.ExitCode != 0 || string(res.Stdout) != "/tmp\nhi\n" {
		t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res := execT(t, a, shell("cat mine /tmp/t")); string(res.Stdout) != "a\nt\n" {
		t.Errorf("the session's next command read %q (stderr %q), want its /app and /tmp kept", res.Stdout, res.Stderr)
	}
	if res := execT(t, b, shell("ls; ls /tmp")); string(res.Stdout) != "src\n" {
		t.Errorf("the other session sees %q (stderr %q), want only its own src", res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("a link in /app reached the host's %s: %v", outside, err)
	}
	for i, s := range sessions {
		root := sessionRoot(s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("session %d: folder after Close: %v", i, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(app, "src", "main.sh")); err != nil || string(b) != "echo hi\n" {
		t.Errorf("the task's own /app files changed: %q %v", b, err)
	}
}

// A session command past its timeout is killed with what it started.
func TestApptainerSessionRealTimeout(t *testing.T) {
	t.Parallel()
	s, err := OpenSession(context.Background(), openApptainerT(t, Config{}), SessionSpec{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	marker := "sleep 62.75"
	res := execT(t, s, Command{Argv: []string{"sh", "-c", "echo started; " + marker + " & " + marker}, Timeout: 2 * time.Second})
	if res.Limit != LimitTimeout || string(res.Stdout) != "started\n" {
		t.Errorf("limit %q stdout %q, want timeout after the first line", res.Limit, res.Stdout)
	}
	noProcessLeft(t, marker)
}

// A session's image (a task's, SessionSpec.Image) replaces the
// sandbox's: here the sandbox's own is a file that does not exist.
func TestApptainerSessionRealTaskImage(t *testing.T) {
	t.Parallel()
	_, sif := testenv.Apptainer(t)
	sb := openApptainerT(t, Config{Image: filepath.Join(t.TempDir(), "absent.sif")})
	s, err := OpenSession(context.Background(), sb, SessionSpec{Image: sif, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res := execT(t, s, shell("echo ok")); res.ExitCode != 0 || string(res.Stdout) != "ok\n" {
		t.Errorf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// An apptainer sandbox pool's server (nel-run sandbox-server --engine
// apptainer) on the real CLI, through the remote client a shard uses:
// the session protocol keeps /app and shows /tests to the verifier only.
func TestServerApptainerEngineSession(t *testing.T) {
	t.Parallel()
	ap := openApptainerT(t, Config{Concurrency: 2})
	ts := httptest.NewServer(NewServer(ap, ServerOptions{Slots: 2}))
	defer ts.Close()
	sessionRoundTrip(t, openRemoteT(t, t.Context(), []string{ts.URL}, nil))
}

// An image with no /bin/sh (which sets the limits) is an error naming the
// image and the shell, not a program that failed.
func TestApptainerRealNoShell(t *testing.T) {
	t.Parallel()
	bin, _ := testenv.Apptainer(t)
	root, img := t.TempDir(), filepath.Join(t.TempDir(), "nosh.sif")
	writeFiles(t, root, map[string]string{"etc/motd": "no shell here\n"})
	if out, err := exec.Command(bin, "build", "-F", img, root).CombinedOutput(); err != nil {
		t.Fatalf("%s build: %v: %s", bin, err, out)
	}
	sb := openApptainerT(t, Config{Name: "ap", Image: img})
	res, err := sb.Run(context.Background(), Job{Command: []string{"true"}, Timeout: 10 * time.Second})
	if err == nil {
		t.Fatalf("no error; result exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	for _, want := range []string{"sandbox ap", fmt.Sprintf("cannot run image %q: FATAL:", img), "/bin/sh", "the image's /bin/sh, which sets its limits"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// As root, the program is not root: not uid 0, and neither the host's
// kernel settings (/proc/sys) nor /sys are open to it for writing, in a
// job or in a session command (with --no-privs alone, uid 0 without
// capabilities could still write kernel.core_pattern). Opening for
// append writes nothing, so the test changes no setting even where the
// sandbox fails it. What the job wrote in /work is collected, and its
// folder is gone after.
func TestApptainerRealNotRoot(t *testing.T) {
	t.Parallel()
	sb := openApptainerT(t, Config{Name: "ap"})
	mark := fmt.Sprintf("nel-notroot-%d", time.Now().UnixNano())
	script := `id -u
for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/modprobe /proc/sysrq-trigger /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/uevent_helper; do
	(: >> $f) 2>/dev/null && echo "writable $f"
done
touch /sys/` + mark + ` 2>/dev/null && echo "writable /sys"
echo made > ` + mark
	check := func(what string, res *Result) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
		if res.ExitCode != 0 || len(lines) != 1 || lines[0] == "0" {
			t.Errorf("%s: exit %d stdout %q stderr %q, want only a uid other than 0", what, res.ExitCode, res.Stdout, res.Stderr)
		}
		if os.Geteuid() == 0 && lines[0] == fmt.Sprint(os.Getuid()) {
			t.Errorf("%s: the program ran as nel's own uid %s", what, lines[0])
		}
		if len(res.Stderr) != 0 {
			t.Errorf("%s: stderr %q, want none (no warning of apptainer's about the uid)", what, res.Stderr)
		}
	}
	res, err := sb.Run(context.Background(), Job{Command: []string{"sh", "-c", script}, Collect: []string{mark}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	check("job", res)
	if string(res.Files[mark]) != "made\n" {
		t.Errorf("collected %q, want the file the job wrote in /work", res.Files)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "nel-sandbox-*", mark)); len(left) > 0 {
		t.Errorf("the job's folder is left on the host: %q", left)
	}
	s, err := OpenSession(context.Background(), sb, SessionSpec{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("session", execT(t, s, Command{Argv: []string{"sh", "-c", script}}))
	root := sessionRoot(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("session folder after Close: %v", err)
	}
}

// Each job has a process limit of its own, as root too: one job's fork
// loop stops at its max_processes while a job beside it starts the few
// processes it needs (with one uid for both, the first would take the
// second's share). The container's init (sinit, a Go program) counts
// its threads against the limit too, hence the room.
func TestApptainerRealProcessLimitPerJob(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		// As nel's own user the jobs are that user's: on a setuid
		// install (no user namespace) they share its process count.
		t.Skip("only as root does each job run as a uid of its own")
	}
	sb := openApptainerT(t, Config{MaxProcesses: 24, Concurrency: 2})
	var (
		bomb, calm *Result
		errs       [2]error
		wg         sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		// The loop's shell stops at the refused fork; its sleeps go on,
		// holding their share, while the job waits for the first.
		bomb, errs[0] = sb.Run(context.Background(), Job{Command: []string{"sh", "-c",
			`sleep 8 & (for i in $(seq 40); do sleep 8 & done); s=$?; wait; exit $s`}, Timeout: 60 * time.Second})
	}()
	go func() {
		defer wg.Done()
		// Its processes start while the other job holds its sixteen.
		calm, errs[1] = sb.Run(context.Background(), Job{Command: []string{"sh", "-c",
			`sleep 2; for i in 1 2 3 4 5; do sleep 2 & done; wait; echo done`}, Timeout: 60 * time.Second})
	}()
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if bomb.Limit != LimitProcesses {
		t.Errorf("fork loop: limit %q (exit %d, stderr %q), want processes", bomb.Limit, bomb.ExitCode, firstLines(bomb.Stderr, 3))
	}
	if calm.ExitCode != 0 || string(calm.Stdout) != "done\n" || len(calm.Stderr) != 0 {
		t.Errorf("the job beside it: exit %d stdout %q stderr %q, want its five processes run", calm.ExitCode, calm.Stdout, calm.Stderr)
	}
}
