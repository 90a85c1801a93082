package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fast returns options that poll quickly, for tests.
func fast(url string) WaitOptions {
	return WaitOptions{
		URL:      url,
		Name:     "test",
		Timeout:  10 * time.Second,
		Interval: 10 * time.Millisecond,
	}
}

// closedURL returns a URL on 127.0.0.1 that nothing listens on.
func closedURL(t *testing.T) (string, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/health", addr
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "0")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return pid
}

func logWithLines(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "log line %d\n", i)
	}
	return writeFile(t, b.String())
}

func TestWaitReadyAfterPolls(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/health" {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		}
		if polls.Add(1) < 5 {
			http.Error(w, "loading", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	opts := fast(srv.URL + "/health")
	opts.PID = os.Getpid() // alive: must not fail
	if err := WaitReady(context.Background(), opts); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if got := polls.Load(); got != 5 {
		t.Errorf("polls = %d, want 5", got)
	}
}

func TestWaitReady503Then200(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) <= 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()

	var mu sync.Mutex
	var progress []string
	opts := fast(srv.URL)
	opts.Progress = func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, msg)
	}
	if err := WaitReady(context.Background(), opts); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if got := polls.Load(); got != 4 {
		t.Errorf("polls = %d, want 4", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 0 {
		t.Errorf("unexpected progress messages before the first interval: %q", progress)
	}
}

func TestWaitReadyConnectionRefusedThenReady(t *testing.T) {
	url, addr := closedURL(t)
	var polls atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
	})
	started := make(chan *http.Server, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			started <- nil
			return
		}
		srv := &http.Server{Handler: handler}
		started <- srv
		_ = srv.Serve(l)
	}()

	err := WaitReady(context.Background(), fast(url))
	srv := <-started
	if srv == nil {
		t.Skip("could not listen again on", addr)
	}
	defer srv.Close()
	if err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if polls.Load() != 1 {
		t.Errorf("server saw %d polls, want 1", polls.Load())
	}
}

func TestWaitReadyTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	var mu sync.Mutex
	var progress []string
	opts := fast(srv.URL + "/health")
	opts.Name = "sglang"
	opts.Timeout = 300 * time.Millisecond
	opts.ProgressInterval = 100 * time.Millisecond
	opts.Progress = func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, msg)
	}
	opts.LogFile = logWithLines(t, 60)
	opts.PID = os.Getpid()

	start := time.Now()
	err := WaitReady(context.Background(), opts)
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("WaitReady succeeded, want timeout")
	}
	if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrExited) {
		t.Errorf("err = %v, want ErrTimeout", err)
	}
	if elapsed < 300*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("returned after %v, want about 300ms", elapsed)
	}
	msg := err.Error()
	for _, want := range []string{
		"server sglang at " + srv.URL + "/health not ready after ",
		"last: HTTP 503 Service Unavailable",
		"--- last lines of " + opts.LogFile + " ---\n",
		"log line 11\n",
		"log line 60\n--- end of log ---",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "log line 10\n") {
		t.Errorf("error message has more than 50 log lines:\n%s", msg)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(progress) == 0 {
		t.Fatal("no progress messages")
	}
	wantPrefix := "waiting for sglang at " + srv.URL + "/health ("
	wantSuffix := "s, last: HTTP 503 Service Unavailable)"
	for _, p := range progress {
		if !strings.HasPrefix(p, wantPrefix) || !strings.HasSuffix(p, wantSuffix) {
			t.Errorf("progress %q, want %q...%q", p, wantPrefix, wantSuffix)
		}
	}
}

func TestWaitReadyTimeoutConnectionRefused(t *testing.T) {
	url, _ := closedURL(t)
	opts := fast(url)
	opts.Timeout = 100 * time.Millisecond
	err := WaitReady(context.Background(), opts)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "last: connection refused") {
		t.Errorf("error message lacks the last status: %v", err)
	}
}

func TestWaitReadyRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	opts := fast(srv.URL)
	opts.Timeout = 400 * time.Millisecond
	opts.RequestTimeout = 50 * time.Millisecond
	err := WaitReady(context.Background(), opts)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "last: request timed out") {
		t.Errorf("error message lacks the last status: %v", err)
	}
}

func TestWaitReadyDeadPID(t *testing.T) {
	url, _ := closedURL(t)
	opts := fast(url)
	opts.Name = "vllm"
	opts.Timeout = time.Minute
	opts.PID = deadPID(t)
	opts.LogFile = logWithLines(t, 60)

	start := time.Now()
	err := WaitReady(context.Background(), opts)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v to notice the dead process", elapsed)
	}
	if !errors.Is(err, ErrExited) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrExited", err)
	}
	var werr *WaitError
	if !errors.As(err, &werr) || werr.PID != opts.PID {
		t.Fatalf("err = %#v, want *WaitError with pid %d", err, opts.PID)
	}
	msg := err.Error()
	for _, want := range []string{
		"server vllm exited during startup",
		fmt.Sprintf("pid %d", opts.PID),
		"last: connection refused",
		"log line 11\n",
		"log line 60\n",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "log line 10\n") {
		t.Errorf("error message has more than 50 log lines:\n%s", msg)
	}
}

func TestWaitReadyDeadPIDMissingLog(t *testing.T) {
	url, _ := closedURL(t)
	opts := fast(url)
	opts.PID = deadPID(t)
	opts.LogFile = "/nonexistent/server.log"
	err := WaitReady(context.Background(), opts)
	if !errors.Is(err, ErrExited) {
		t.Fatalf("err = %v, want ErrExited", err)
	}
	if !strings.Contains(err.Error(), "could not read log") {
		t.Errorf("error message does not mention the unreadable log: %v", err)
	}
}

func TestWaitReadyZombiePID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zombie detection uses /proc")
	}
	cmd := exec.Command("sleep", "0")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	defer func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for !isZombie(pid) {
		if time.Now().After(deadline) {
			t.Fatal("sleep 0 did not become a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}

	url, _ := closedURL(t)
	opts := fast(url)
	opts.Timeout = time.Minute
	opts.PID = pid
	if err := WaitReady(context.Background(), opts); !errors.Is(err, ErrExited) {
		t.Fatalf("err = %v, want ErrExited", err)
	}
}

func TestWaitReadyContextCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	opts := fast(srv.URL)
	opts.Timeout = time.Minute
	opts.Interval = time.Second // cancel must interrupt the pause
	start := time.Now()
	err := WaitReady(ctx, opts)
	if elapsed := time.Since(start); elapsed > 900*time.Millisecond {
		t.Errorf("took %v to stop after cancel", elapsed)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrTimeout) || errors.Is(err, ErrExited) {
		t.Errorf("err = %v, want neither timeout nor exit", err)
	}
}

func TestWaitReadyInvalid(t *testing.T) {
	for _, opts := range []WaitOptions{
		{URL: ""},
		{URL: "localhost:8000/health"},
		{URL: "ftp://localhost/health"},
		{URL: "http:///health"},
		{URL: "http://localhost:8000", PID: -1},
	} {
		err := WaitReady(context.Background(), opts)
		if err == nil || errors.Is(err, ErrTimeout) {
			t.Errorf("WaitReady(%+v) = %v, want an invalid-option error", opts, err)
		}
	}
}

func TestDefaultName(t *testing.T) {
	url, addr := closedURL(t)
	err := WaitReady(context.Background(), WaitOptions{URL: url, Timeout: 50 * time.Millisecond, Interval: 10 * time.Millisecond})
	if !strings.Contains(fmt.Sprint(err), "server "+addr+" at ") {
		t.Errorf("err = %v, want the host as name", err)
	}
}

func TestProcessAlive(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Error("own process reported dead")
	}
	if runtime.GOOS == "linux" && !processAlive(1) {
		t.Error("pid 1 reported dead")
	}
	if processAlive(deadPID(t)) {
		t.Error("reaped process reported alive")
	}
}

// Another process answers on the port while our server, which could not
// bind it, has already exited: not ready, and the message says why.
func TestWaitReadyPortTakenByAnother(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer other.Close()
	opts := fast(other.URL)
	opts.PID = deadPID(t)
	err := WaitReady(context.Background(), opts)
	if !errors.Is(err, ErrExited) {
		t.Fatalf("err = %v, want ErrExited", err)
	}
	if !strings.Contains(err.Error(), "from another process: the server exited (is its port taken?)") {
		t.Errorf("message: %v", err)
	}
}

// A server started with a key answers 401 without it: the wait sends the
// key, never fails open, and keeps the key out of what it reports.
func TestWaitReadySendsAPIKey(t *testing.T) {
	const key = "job-key-4f2a9c"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	opts := fast(srv.URL + "/v1/models")
	opts.APIKey = key
	if err := WaitReady(context.Background(), opts); err != nil {
		t.Fatalf("WaitReady with the key: %v", err)
	}

	opts = fast(srv.URL + "/v1/models")
	opts.APIKey = "wrong"
	opts.Timeout = 300 * time.Millisecond
	err := WaitReady(context.Background(), opts)
	if err == nil {
		t.Fatal("WaitReady with a wrong key succeeded; want a timeout")
	}
	if !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("error = %q; want the 401 named and the key left out", err)
	}
}

// TestWaitReadyOr: a server that answers only one of the Or URLs (a Gym
// server without /health, whose FastAPI answers /openapi.json) is ready;
// one that answers none times out.
func TestWaitReadyOr(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/openapi.json" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	o := fast(srv.URL + "/health")
	o.Or = []string{srv.URL + "/nope", srv.URL + "/openapi.json"}
	if err := WaitReady(context.Background(), o); err != nil {
		t.Fatalf("with /openapi.json among Or: %v", err)
	}
	o.Or = o.Or[:1]
	o.Timeout = 200 * time.Millisecond
	if err := WaitReady(context.Background(), o); !errors.Is(err, ErrTimeout) {
		t.Fatalf("without: %v, want a timeout", err)
	}
}
