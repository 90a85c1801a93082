package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
)

// openLocalT opens a local sandbox, ending the test through testenv.Missing when bubblewrap is
// missing or cannot make namespaces here.
func openLocalT(t testing.TB, cfg Config) Sandbox {
	t.Helper()
	cfg.Type = "local"
	sb, err := Open(context.Background(), cfg)
	if errors.Is(err, ErrUnavailable) {
		testenv.Missing(t, testenv.LocalSandbox, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func runPy(t *testing.T, sb Sandbox, prog string, timeout time.Duration) *Result {
	t.Helper()
	res, err := sb.Run(context.Background(), Job{Command: []string{"python3", "-"}, Stdin: []byte(prog), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func marker() string {
	var b [8]byte
	rand.Read(b[:])
	return "nelmark" + hex.EncodeToString(b[:])
}

func TestLocalBasics(t *testing.T) {
	sb := openLocalT(t, Config{Concurrency: 2, Env: map[string]string{"FROM_CONFIG": "c", "BOTH": "config"}})
	ctx := context.Background()

	t.Run("exit codes", func(t *testing.T) {
		for _, code := range []int{0, 1, 3, 42} {
			res, err := sb.Run(ctx, Job{Command: []string{"sh", "-c", "exit " + strconv.Itoa(code)}})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != code || res.Signal != "" || res.Limit != LimitNone {
				t.Errorf("exit %d: got code %d signal %q limit %q", code, res.ExitCode, res.Signal, res.Limit)
			}
		}
	})
	t.Run("stdin stdout stderr", func(t *testing.T) {
		res := runPy(t, sb, "import sys\nprint('out', 6*7)\nprint('err', file=sys.stderr)\n", 0)
		if string(res.Stdout) != "out 42\n" || string(res.Stderr) != "err\n" || res.ExitCode != 0 {
			t.Errorf("got %q %q exit %d", res.Stdout, res.Stderr, res.ExitCode)
		}
		res = runPy(t, sb, "assert 1 == 2\n", 0)
		if res.ExitCode != 1 || !bytes.Contains(res.Stderr, []byte("AssertionError")) || res.Limit != LimitNone {
			t.Errorf("failed assert: exit %d limit %q stderr %q", res.ExitCode, res.Limit, res.Stderr)
		}
	})
	t.Run("files in and out", func(t *testing.T) {
		res, err := sb.Run(ctx, Job{
			Command: []string{"python3", "prog.py"},
			Files: map[string][]byte{
				"prog.py":     []byte("import os\nd = open('data/in.txt').read()\nopen('out.txt', 'w').write(d.upper())\nos.symlink('/etc/hostname', 'link')\n"),
				"data/in.txt": []byte("hello"),
			},
			Collect: []string{"out.txt", "missing.txt", "link"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 {
			t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
		}
		if got := string(res.Files["out.txt"]); got != "HELLO" {
			t.Errorf("out.txt = %q", got)
		}
		if _, ok := res.Files["missing.txt"]; ok {
			t.Error("a missing file was collected")
		}
		// The link points outside the work dir: the host must not follow it.
		if data, ok := res.Files["link"]; ok {
			t.Errorf("collected a symlink out of the work dir: %q", data)
		}
	})
	t.Run("bad file names", func(t *testing.T) {
		for _, name := range []string{"../x", "/etc/x", "a/../../x", ""} {
			if _, err := sb.Run(ctx, Job{Command: []string{"true"}, Files: map[string][]byte{name: nil}}); err == nil {
				t.Errorf("file %q: no error", name)
			}
		}
	})
	t.Run("environment", func(t *testing.T) {
		secret := marker()
		t.Setenv("NEL_TEST_SECRET", secret)
		res, err := sb.Run(ctx, Job{
			Command: []string{"python3", "-c", "import os; print(sorted(os.environ.items()))"},
			Env:     map[string]string{"FROM_JOB": "j", "BOTH": "job"},
		})
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout)
		for _, want := range []string{"('FROM_JOB', 'j')", "('FROM_CONFIG', 'c')", "('BOTH', 'job')", "('HOME', '/work')"} {
			if !strings.Contains(out, want) {
				t.Errorf("environment lacks %s: %s", want, out)
			}
		}
		if strings.Contains(out, secret) || strings.Contains(out, "NEL_TEST_SECRET") {
			t.Errorf("host environment visible: %s", out)
		}
	})
}

// procsWith lists the host processes whose command line contains s.
func procsWith(s string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			found = append(found, e.Name())
		}
	}
	return found
}

func TestLocalInfiniteLoopKillsTree(t *testing.T) {
	sb := openLocalT(t, Config{})
	mark := marker()
	// The grandchild leaves the session, ignores SIGTERM and spins; the
	// program's main process sleeps. Only killing the whole tree ends both.
	prog := fmt.Sprintf(`import os, sys, signal, time
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.execv(sys.executable, [sys.executable, "-c", "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: pass", %q])
while True:
    time.sleep(1)
`, mark)
	done := make(chan *Result, 1)
	go func() {
		res, err := sb.Run(context.Background(), Job{Command: []string{"python3", "-"}, Stdin: []byte(prog), Timeout: 3 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	// The marked process is visible from the host while it runs: the
	// check below can see it.
	seen := false
	for deadline := time.Now().Add(3 * time.Second); !seen && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		seen = len(procsWith(mark)) > 0
	}
	res := <-done
	if res == nil {
		return
	}
	if !seen {
		t.Error("the grandchild never showed up in /proc")
	}
	if res.Limit != LimitTimeout || res.Signal != "SIGKILL" || res.ExitCode != -1 {
		t.Errorf("got limit %q signal %q exit %d, want timeout SIGKILL -1", res.Limit, res.Signal, res.ExitCode)
	}
	if res.Duration < 3*time.Second || res.Duration > 8*time.Second {
		t.Errorf("duration %v, want about the 3 s timeout", res.Duration)
	}
	var left []string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = procsWith(mark); len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("processes %v outlived the sandbox", left)
	}
}

func TestLocalForkBomb(t *testing.T) {
	sb := openLocalT(t, Config{MaxProcesses: 32})
	res := runPy(t, sb, "import os\nwhile True:\n    os.fork()\n", 20*time.Second)
	if res.Limit != LimitProcesses {
		t.Errorf("limit %q, want processes (exit %d signal %q, stderr %.300q)", res.Limit, res.ExitCode, res.Signal, res.Stderr)
	}
	// The host still forks.
	if err := exec.Command("true").Run(); err != nil {
		t.Errorf("host cannot fork after the fork bomb: %v", err)
	}
	// A program within the limit runs.
	res = runPy(t, sb, "import subprocess\nfor _ in range(5): subprocess.run(['true'], check=True)\nprint('ok')\n", 0)
	if string(res.Stdout) != "ok\n" {
		t.Errorf("five forks within the limit: %q %q", res.Stdout, res.Stderr)
	}
}

func TestLocalMemory(t *testing.T) {
	sb := openLocalT(t, Config{MemoryBytes: 1 << 30})
	res := runPy(t, sb, "x = bytearray(10 * 1024**3)\nprint('allocated')\n", 20*time.Second)
	if res.Limit != LimitMemory || res.ExitCode == 0 || bytes.Contains(res.Stdout, []byte("allocated")) {
		t.Errorf("limit %q exit %d stdout %q stderr %.300q, want memory", res.Limit, res.ExitCode, res.Stdout, res.Stderr)
	}
	// Within the limit, allocation works.
	res = runPy(t, sb, "x = bytearray(100 * 1024**2)\nprint(len(x))\n", 0)
	if string(res.Stdout) != "104857600\n" {
		t.Errorf("100 MiB allocation: %q %q", res.Stdout, res.Stderr)
	}
}

func TestLocalNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	sb := openLocalT(t, Config{})
	prog := fmt.Sprintf(`import socket
for addr in [("1.1.1.1", 53), ("127.0.0.1", %d)]:
    try:
        socket.create_connection(addr, timeout=3).close()
        print("connected", addr[0])
    except OSError as e:
        print("failed", addr[0], type(e).__name__)
`, port)
	res := runPy(t, sb, prog, 20*time.Second)
	out := string(res.Stdout)
	if res.ExitCode != 0 || !strings.Contains(out, "failed 1.1.1.1") || !strings.Contains(out, "failed 127.0.0.1") || strings.Contains(out, "connected") {
		t.Errorf("exit %d stdout %q stderr %q, want both connections to fail", res.ExitCode, out, res.Stderr)
	}
	ln.Close()
	if <-accepted {
		t.Error("the host's listener accepted a connection from the sandbox")
	}
}

func TestLocalWriteOutsideWorkDir(t *testing.T) {
	hostDir := t.TempDir()
	targets := []string{"/etc/nel-sandbox-test", "/usr/nel-sandbox-test", "/root/nel-sandbox-test", filepath.Join(hostDir, "escaped"), "/nel-sandbox-test"}
	sb := openLocalT(t, Config{})
	var prog strings.Builder
	prog.WriteString("import os\n")
	for _, p := range append(targets, "/work/ok", "/tmp/ok") {
		fmt.Fprintf(&prog, "try:\n    os.makedirs(os.path.dirname(%q), exist_ok=True)\n    open(%q, 'w').write('x')\n    print('wrote', %q)\nexcept OSError as e:\n    print('refused', %q, e.errno)\n", p, p, p, p)
	}
	res, err := sb.Run(context.Background(), Job{Command: []string{"python3", "-"}, Stdin: []byte(prog.String()), Collect: []string{"ok"}})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	for _, p := range targets {
		// The test's temp dir lies under /tmp, which is the sandbox's
		// own tmpfs: a write there may succeed, but must not reach the
		// host.
		if !strings.Contains(out, "refused "+p) && !strings.HasPrefix(p, hostDir) {
			t.Errorf("writing %s was not refused: %s", p, out)
		}
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s exists on the host", p)
		}
	}
	if !strings.Contains(out, "wrote /work/ok") || !strings.Contains(out, "wrote /tmp/ok") || string(res.Files["ok"]) != "x" {
		t.Errorf("writing the work dir or /tmp failed: %s %s", out, res.Stderr)
	}
}

func TestLocalOutputFlood(t *testing.T) {
	sb := openLocalT(t, Config{})
	res := runPy(t, sb, "import sys\nchunk = 'x' * 1_000_000\nfor _ in range(100):\n    sys.stdout.write(chunk)\n", 60*time.Second)
	if res.Limit != LimitOutput || !res.Truncated {
		t.Errorf("limit %q truncated %v, want output, true", res.Limit, res.Truncated)
	}
	if int64(len(res.Stdout)) != DefaultOutputBytes {
		t.Errorf("kept %d bytes of stdout, want the %d cap", len(res.Stdout), DefaultOutputBytes)
	}
	// Killed at the cap, not left to its timeout.
	if res.Duration > 20*time.Second {
		t.Errorf("took %v", res.Duration)
	}
	// Output under the cap is whole.
	res = runPy(t, sb, "print('y' * 1000)\n", 0)
	if len(res.Stdout) != 1001 || res.Truncated || res.Limit != LimitNone {
		t.Errorf("small output: %d bytes, truncated %v, limit %q", len(res.Stdout), res.Truncated, res.Limit)
	}
}

func TestLocalFileSize(t *testing.T) {
	sb := openLocalT(t, Config{MaxFileSizeBytes: 1 << 20})
	res := runPy(t, sb, "open('big', 'wb').write(b'x' * (2 << 20))\n", 0)
	if res.Limit != LimitFileSize {
		t.Errorf("limit %q exit %d signal %q stderr %.200q, want file_size", res.Limit, res.ExitCode, res.Signal, res.Stderr)
	}
}

func TestLocalSecrets(t *testing.T) {
	secret := marker()
	t.Setenv("NEL_TEST_SECRET", secret)
	if !strings.Contains(strings.Join(os.Environ(), "\n"), secret) {
		t.Fatal("the test process does not hold the secret")
	}
	sb := openLocalT(t, Config{})
	prog := `import os, glob
print(dict(os.environ))
for p in ["/proc/1/environ", "/proc/self/environ"] + glob.glob("/proc/*/environ"):
    try:
        print(p, open(p, "rb").read())
    except OSError as e:
        print(p, "unreadable", e)
for p in glob.glob("/proc/*/cmdline"):
    try:
        print(p, open(p, "rb").read())
    except OSError:
        pass
`
	res, err := sb.Run(context.Background(), Job{Command: []string{"python3", "-"}, Stdin: []byte(prog), Env: map[string]string{"VISIBLE": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(res.Stdout, []byte("VISIBLE=yes")) || !bytes.Contains(res.Stdout, []byte("'VISIBLE': 'yes'")) {
		t.Fatalf("the program did not print its own environment: %.500q %.300q", res.Stdout, res.Stderr)
	}
	if bytes.Contains(res.Stdout, []byte(secret)) || bytes.Contains(res.Stderr, []byte(secret)) {
		t.Errorf("the host's secret leaked into the sandbox")
	}
}

func TestLocalConcurrencyLimit(t *testing.T) {
	sb := openLocalT(t, Config{Concurrency: 2})
	// Each program prints when it ran by the shared wall clock; the most
	// intervals overlapping at once is the concurrency.
	const jobs = 6
	type span struct{ start, end float64 }
	spans := make([]span, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sb.Run(context.Background(), Job{Command: []string{"python3", "-c", "import time; s = time.time(); time.sleep(0.4); print(s, time.time())"}})
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := fmt.Sscan(string(res.Stdout), &spans[i].start, &spans[i].end); err != nil {
				t.Errorf("output %q: %v", res.Stdout, err)
			}
		}()
	}
	wg.Wait()
	type event struct {
		t     float64
		delta int
	}
	var events []event
	for _, s := range spans {
		events = append(events, event{s.start, 1}, event{s.end, -1})
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].t != events[j].t {
			return events[i].t < events[j].t
		}
		return events[i].delta < events[j].delta
	})
	cur, peak := 0, 0
	for _, e := range events {
		cur += e.delta
		peak = max(peak, cur)
	}
	if peak != 2 {
		t.Errorf("at most %d programs ran at once, want 2", peak)
	}
}

func TestLocalCancel(t *testing.T) {
	sb := openLocalT(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sb.Run(ctx, Job{Command: []string{"sleep", "30"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the caller's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled run took %v", d)
	}
}

// humanEvalLike is a HumanEval-sized program: a solution, its tests, the
// check call.
const humanEvalLike = `from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    for idx, elem in enumerate(numbers):
        for idx2, elem2 in enumerate(numbers):
            if idx != idx2 and abs(elem - elem2) < threshold:
                return True
    return False


def check(candidate):
    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True
    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False
    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True
    assert candidate([1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1) == True


check(has_close_elements)
`

// BenchmarkLocalStartup measures a sandboxed `true` and `python3 -c pass`
// and reports the sandbox's overhead over running them bare.
func BenchmarkLocalStartup(b *testing.B) {
	sb := openLocalT(b, Config{Concurrency: 1})
	python, err := findPython(context.Background(), "")
	if err != nil {
		b.Skip(err)
	}
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"true", []string{"true"}},
		{"python", []string{"python3", "-c", "pass"}},
	} {
		bare := c.argv
		if c.name == "python" {
			bare = []string{filepath.Join(python.bin, "python3"), "-c", "pass"}
		}
		// The bare figure, measured the same way, to subtract.
		const bareRuns = 20
		start := time.Now()
		for range bareRuns {
			if err := exec.Command(bare[0], bare[1:]...).Run(); err != nil {
				b.Fatal(err)
			}
		}
		bareNs := float64(time.Since(start).Nanoseconds()) / bareRuns
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := sb.Run(context.Background(), Job{Command: c.argv})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v %+v", err, res)
				}
			}
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(bareNs/1e6, "bare-ms/op")
			b.ReportMetric((perOp-bareNs)/1e6, "overhead-ms/op")
		})
	}
}

// BenchmarkLocalPrograms2Slots runs HumanEval-sized programs through a
// two-slot sandbox, fed by four callers so that no slot waits.
func BenchmarkLocalPrograms2Slots(b *testing.B) {
	sb := openLocalT(b, Config{Concurrency: 2})
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				res, err := sb.Run(context.Background(), Job{Command: []string{"python3", "-"}, Stdin: []byte(humanEvalLike)})
				if err != nil || res.ExitCode != 0 {
					b.Errorf("%v %+v", err, res)
				}
			}
		}()
	}
	start := time.Now()
	for range b.N {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "programs/s")
}

func TestLocalSignals(t *testing.T) {
	sb := openLocalT(t, Config{})
	// The program is not the namespace's pid 1, so the signals it does
	// not handle end it and come back by name.
	res := runPy(t, sb, "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (1, 5))\nwhile True: pass\n", 20*time.Second)
	if res.Signal != "SIGXCPU" || res.Limit != LimitCPU || res.ExitCode != -1 {
		t.Errorf("CPU seconds: signal %q limit %q exit %d, want SIGXCPU cpu -1", res.Signal, res.Limit, res.ExitCode)
	}
	res = runPy(t, sb, "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nprint('survived')\n", 0)
	if res.Signal != "SIGTERM" || len(res.Stdout) != 0 {
		t.Errorf("self-SIGTERM: signal %q stdout %q", res.Signal, res.Stdout)
	}
}
