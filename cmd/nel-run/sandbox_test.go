package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"

	"github.com/nel-eval/nel/runtime/sandbox"
)

func TestSandboxServeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sandbox-serve"}, "--listen is required"},
		{[]string{"sandbox-serve", "--listen", ":0", "--slots", "0"}, "--slots must be at least 1"},
		{[]string{"sandbox-serve", "--listen", ":0", "--memory", "lots"}, "--memory"},
	} {
		var out, errb bytes.Buffer
		if code := run(t.Context(), c.args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d with %q", c.args, code, errb.String(), exitUsage, c.want)
		}
	}
}

// sandbox-serve with an engine that cannot run exits 1 with the engine's
// reason, before it listens.
func TestSandboxServeNoEngine(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"sandbox-serve", "--listen", "127.0.0.1:0", "--engine", "custom"}, &out, &errb)
	if code != exitFailure || !strings.Contains(errb.String(), sandbox.ErrUnavailable.Error()) {
		t.Errorf("exit %d, stderr %q; want 1 with %q", code, errb.String(), sandbox.ErrUnavailable)
	}
}

// sandbox-serve with the local engine: healthy with its slots, runs a
// program, and exits 0 when its context ends (SIGTERM).
func TestSandboxServeLocal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, stop := context.WithCancel(t.Context())
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sandbox-serve", "--name", "py", "--listen", addr, "--slots", "2", "--timeout", "20s"}, &bytes.Buffer{}, &errb)
	}()
	var h sandbox.Health
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if err == nil {
				break
			}
		}
		select {
		case code := <-done:
			if strings.Contains(errb.String(), sandbox.ErrUnavailable.Error()) {
				testenv.Missing(t, testenv.LocalSandbox, errb.String())
			}
			t.Fatalf("sandbox-serve exited %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no health answer in 10s: %v\n%s", err, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h.Name != "py" || h.Slots != 2 {
		t.Errorf("health %+v, want name py with 2 slots", h)
	}
	sb, err := sandbox.Open(t.Context(), sandbox.Config{Name: "py", Type: "slurm", Endpoints: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	res, err := sb.Run(t.Context(), sandbox.Job{Command: []string{"python3", "-c", "print(6 * 7)"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "42" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and 42", res.ExitCode, res.Stdout, res.Stderr)
	}
	stop()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d after shutdown: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sandbox-serve still running 10s after its context ended")
	}
	log := errb.String()
	for _, want := range []string{"msg=listening", "addr=" + addr, "msg=\"job done\"", "command=python3", "exit=0", "msg=stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the server's writes and the test's
// reads at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// What an ecs_fargate task runs: --install copies nel-run, then
// sandbox-serve --engine container serves only requests bearing the token
// from --token-env (which no job sees) and exits at --max-lifetime.
func TestSandboxServeInTask(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "nel", "nel-run")
	var errb bytes.Buffer
	if code := run(t.Context(), []string{"sandbox-serve", "--install", dst}, &bytes.Buffer{}, &errb); code != exitOK {
		t.Fatalf("--install: exit %d: %s", code, errb.String())
	}
	self, _ := os.Executable()
	want, _ := os.ReadFile(self)
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("--install wrote %d bytes (%v), want this executable's %d", len(got), err, len(want))
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o755 {
		t.Errorf("installed mode %v, want 0755", fi.Mode().Perm())
	}
	if left, _ := os.ReadDir(filepath.Dir(dst)); len(left) != 1 {
		t.Errorf("--install left %d files beside nel-run, want none", len(left)-1)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("NEL_TEST_TOKEN", "tok123")
	done := make(chan int, 1)
	var logb syncBuffer
	go func() {
		done <- run(t.Context(), []string{"sandbox-serve", "--engine", "container", "--listen", addr, "--slots", "1",
			"--token-env", "NEL_TEST_TOKEN", "--max-lifetime", "3s"}, &bytes.Buffer{}, &logb)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("health without the token: %s, want 401", resp.Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer in 10s: %v\n%s", err, logb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, ok := os.LookupEnv("NEL_TEST_TOKEN"); ok {
		t.Error("the token is still in sandbox-serve's environment")
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/run",
		strings.NewReader(`{"command":["sh","-c","echo run:${NEL_TEST_TOKEN:-none}"]}`))
	req.Header.Set("Authorization", "Bearer tok123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Stdout []byte }
	json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(res.Stdout) != "run:none\n" {
		t.Errorf("job with the token: %s, stdout %q; want 200 and run:none", resp.Status, res.Stdout)
	}
	if strings.Contains(logb.String(), "tok123") {
		t.Errorf("the token is in the log:\n%s", logb.String())
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d at --max-lifetime: %s", code, logb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("sandbox-serve still running 15s after --max-lifetime 3s")
	}
}
