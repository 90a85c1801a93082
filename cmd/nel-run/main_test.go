package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the tests run this test binary as nel-run itself: with
// NEL_RUN_TEST_MAIN=1 in its environment it executes main instead of the
// tests. That exercises the real process: exit codes, signals, stderr.
//
// The scripts of TestScript run it as nel-run too (testscript.Main).
func TestMain(m *testing.M) {
	if os.Getenv("NEL_RUN_TEST_MAIN") == "1" {
		main()
		os.Exit(0) // unreachable: main exits
	}
	testscript.Main(m, map[string]func(){"nel-run": main})
}

// nelRun returns a command that runs nel-run with args.
func nelRun(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "NEL_RUN_TEST_MAIN=1")
	return cmd
}

// execCLI runs nel-run as a process and returns its exit code and output.
func execCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := nelRun(t, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	default:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// closedURL returns a health URL on 127.0.0.1 that nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String() + "/health"
}

func TestProcess(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	var polls atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) <= 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer slow.Close()
	down := closedURL(t)
	logFile := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(logFile, []byte("loading weights\nCUDA out of memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // regexp; "" means empty
		stderr string // regexp; "" means empty
	}{
		{"help", []string{"help"}, 0, `(?s)^nel-run is .*Commands:.*wait-ready.*shard.*merge`, ""},
		{"no command", nil, 2, "", `(?s)^nel-run is .*Commands:`},
		{"unknown", []string{"frobnicate"}, 2, "", `(?s)^nel-run: unknown command "frobnicate"\n\nnel-run is .*Commands:`},
		{"version", []string{"version"}, 0, `^nel-run dev\ncommit \S+, built \S+\n$`, ""},
		{"ready", []string{"wait-ready", "--url", ok.URL + "/health", "--name", "vllm"}, 0, "",
			`^time=\S+ level=INFO msg="server ready" cmd=wait-ready name=vllm url=http://\S+/health elapsed=\S+ polls=1\n$`},
		{"several urls", []string{"wait-ready", ok.URL + "/health", ok.URL + "/v1"}, 0, "",
			`^time=\S+ level=INFO msg="server ready" cmd=wait-ready name=\S+ url=http://\S+/health elapsed=\S+ polls=1\n` +
				`time=\S+ level=INFO msg="server ready" cmd=wait-ready name=\S+ url=http://\S+/v1/models elapsed=\S+ polls=1\n$`},
		// A Gym server without /health is up when its /openapi.json answers.
		{"or-url", []string{"wait-ready", "--url", down, "--or-url", ok.URL + "/openapi.json", "--timeout", "5s"}, 0, "", `msg="server ready" .* polls=1\n$`},
		{"503 then ready", []string{"wait-ready", "-url", slow.URL, "-interval", "10ms"}, 0, "", `msg="server ready" .* polls=4\n$`},
		{"dynamo workers not two counts", []string{"wait-ready", "--url", ok.URL + "/health", "--dynamo-workers", "1"}, 2, "", `(?s)^nel-run wait-ready: --dynamo-workers takes two counts, P,D\n`},
		// ok answers 200 with an empty body: not a dynamo frontend's /health.
		{"dynamo frontend without workers", []string{"wait-ready", "--url", ok.URL + "/health", "--dynamo-workers", "0,1", "--timeout", "300ms", "--interval", "20ms"}, 1, "",
			`not ready after \d+s \(timeout; last: dynamo /health answered 200 without a JSON body: unexpected end of JSON input\)\n$`},
		{"timeout", []string{"wait-ready", "--url", down, "--name", "sglang", "--timeout", "300ms", "--interval", "20ms", "--log", logFile}, 1, "",
			`(?s)^nel-run: server sglang at http://127\.0\.0\.1:\d+/health not ready after \d+s \(timeout; last: connection refused\)\n` +
				`--- last lines of \S+server.log ---\nloading weights\nCUDA out of memory\n--- end of log ---\n$`},
		{"shard without plan", []string{"shard", "--plan", "nope/plan.json", "--benchmark", "gsm8k", "--shard", "0", "--of", "4"}, 1, "",
			`^nel-run: shard: read plan: open nope/plan.json: no such file or directory\n$`},
		{"merge without plan", []string{"merge", "--plan", "nope/plan.json", "--if-complete"}, 1, "",
			`^nel-run: merge: read plan: open nope/plan.json: no such file or directory\n$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := execCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			for _, c := range []struct{ name, got, want string }{{"stdout", out, tt.stdout}, {"stderr", errs, tt.stderr}} {
				if c.want == "" && c.got != "" || !regexp.MustCompile(c.want).MatchString(c.got) {
					t.Errorf("%s = %q, want match for %q", c.name, c.got, c.want)
				}
			}
		})
	}
}

// TestSignal checks that SIGTERM stops wait-ready promptly.
func TestSignal(t *testing.T) {
	// The first poll shows that main has installed its signal handler.
	polled := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case polled <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	cmd := nelRun(t, "wait-ready", "--url", srv.URL, "--name", "vllm", "--interval", "10ms")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-polled:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("nel-run did not poll")
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("took %v to stop", elapsed)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 143 {
		t.Errorf("wait = %v, want exit status 143 (128 + SIGTERM)", err)
	}
	if want := "nel-run: wait-ready: waiting for vllm at "; !strings.HasPrefix(errb.String(), want) ||
		!strings.Contains(errb.String(), "SIGTERM received") {
		t.Errorf("stderr = %q, want %q... SIGTERM received", errb.String(), want)
	}
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version", "-v"} {
		code, out, errs := runCLI(t, arg)
		if code != 0 || !strings.HasPrefix(out, "nel-run dev\ncommit ") || errs != "" {
			t.Errorf("%s: code %d, stdout %q, stderr %q", arg, code, out, errs)
		}
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{nil, exitUsage, "", "Commands:"},
		{[]string{"help"}, exitOK, "wait-ready", ""},
		{[]string{"-h"}, exitOK, "Commands:", ""},
		{[]string{"--help"}, exitOK, "Commands:", ""},
		{[]string{"help", "wait-ready"}, exitOK, "-timeout duration", ""},
		{[]string{"help", "nope"}, exitUsage, "", `unknown command "nope"`},
		{[]string{"wait-ready", "-h"}, exitOK, "", "Usage: nel-run wait-ready [flags]"},
		{[]string{"frobnicate"}, exitUsage, "", "nel-run: unknown command \"frobnicate\"\n\nnel-run is"},
		{[]string{"wait-ready"}, exitUsage, "", "--url is required"},
		{[]string{"wait-ready", "--url", "http://x", "--bogus"}, exitUsage, "", "nel-run wait-ready: unknown flag: --bogus"},
		{[]string{"wait-ready", "extra"}, exitFailure, "", `nel-run: wait-ready: invalid url "extra"`},
		{[]string{"wait-ready", "--url", "http://x", "--timeout", "0s"}, exitUsage, "", "--timeout must be positive"},
		{[]string{"wait-ready", "--url", "http://x", "--interval", "soon"}, exitUsage, "", `invalid argument "soon" for "--interval" flag`},
		// One dash works for a long flag, as it did with the flag package.
		{[]string{"wait-ready", "-url", "http://x", "-timeout", "0s"}, exitUsage, "", "--timeout must be positive"},
		{[]string{"shard", "-plan=p", "-benchmark", "b", "-shard", "1", "-of", "2"}, exitFailure, "",
			"nel-run: shard: read plan: open p: no such file or directory\n"},
		{[]string{"-help"}, exitOK, "Commands:", ""},
		{[]string{"merge", "-help"}, exitOK, "", "Usage: nel-run merge [flags]"},
		{[]string{"version", "extra"}, exitUsage, "", `nel-run version: unexpected argument "extra"`},
		{[]string{"wait-ready", "--url", "localhost:8000"}, exitFailure, "", "nel-run: wait-ready: invalid url"},
		{[]string{"shard"}, exitUsage, "", "--plan is required"},
		{[]string{"shard", "--plan", "p", "--benchmark", "b", "--shard", "2", "--of", "2"}, exitUsage, "", "--shard must be in"},
		{[]string{"shard", "--plan", "p", "--benchmark", "b", "--shard", "1", "--of", "2"}, exitFailure, "",
			"nel-run: shard: read plan: open p: no such file or directory\n"},
		{[]string{"merge"}, exitUsage, "", "--plan or an output directory is required"},
		{[]string{"merge", "--plan", "p", "extra"}, exitUsage, "", "give either --plan or one output directory"},
		{[]string{"merge", "nowhere"}, exitFailure, "", "nel-run: merge: stat nowhere: no such file or directory\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, "_"), func(t *testing.T) {
			code, out, errs := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.code, errs)
			}
			if !strings.Contains(out, tt.inStdout) || tt.inStdout == "" && out != "" {
				t.Errorf("stdout %q, want it to contain %q", out, tt.inStdout)
			}
			if !strings.Contains(errs, tt.inStderr) || tt.inStderr == "" && errs != "" {
				t.Errorf("stderr %q, want it to contain %q", errs, tt.inStderr)
			}
		})
	}
}

func TestWaitReadyDeadServer(t *testing.T) {
	cmd := exec.Command("sleep", "0")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for i := 1; i <= 80; i++ {
		fmt.Fprintf(&log, "vllm line %d\n", i)
	}
	logFile := filepath.Join(t.TempDir(), "vllm.log")
	if err := os.WriteFile(logFile, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "wait-ready", "--url", closedURL(t), "--pid", fmt.Sprint(pid),
		"--log", logFile, "--name", "vllm", "--interval", "10ms")
	if code != exitFailure || out != "" {
		t.Errorf("exit code %d, stdout %q", code, out)
	}
	if !strings.HasPrefix(errs, "nel-run: server vllm exited during startup") {
		t.Errorf("stderr does not start with the exit message:\n%s", errs)
	}
	if !strings.Contains(errs, "vllm line 31\n") || !strings.Contains(errs, "vllm line 80\n") ||
		strings.Contains(errs, "vllm line 30\n") {
		t.Errorf("stderr does not hold exactly the last 50 log lines:\n%s", errs)
	}
}

// TestNoCUEDependency guards the rule that nel-run stays small and static:
// it must not link the CUE evaluator.
func TestNoCUEDependency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(gobin, "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "cuelang.org/") {
			t.Errorf("nel-run depends on %s", pkg)
		}
		if pkg == "runtime/cgo" {
			t.Errorf("nel-run needs cgo even with CGO_ENABLED=0")
		}
	}
}
