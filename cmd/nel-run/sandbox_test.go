package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
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
	code := run(t.Context(), []string{"sandbox-serve", "--listen", "127.0.0.1:0", "--engine", "ecs_fargate"}, &out, &errb)
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
