package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
)

// fakeSandbox stands in for an engine: run decides what a job does, and
// the fake counts calls and the peak number of jobs running at once.
type fakeSandbox struct {
	name    string
	run     func(ctx context.Context, job Job) (*Result, error)
	calls   atomic.Int64
	running atomic.Int64
	peak    atomic.Int64
	mu      sync.Mutex
	jobs    []Job
}

func (f *fakeSandbox) Name() string { return f.name }
func (f *fakeSandbox) Close() error { return nil }

func (f *fakeSandbox) Run(ctx context.Context, job Job) (*Result, error) {
	f.calls.Add(1)
	f.mu.Lock()
	f.jobs = append(f.jobs, job)
	f.mu.Unlock()
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if f.run == nil {
		return &Result{}, nil
	}
	return f.run(ctx, job)
}

// fakeSleep is a job body that takes d (or until the job is killed).
func fakeSleep(d time.Duration) func(context.Context, Job) (*Result, error) {
	return func(ctx context.Context, job Job) (*Result, error) {
		select {
		case <-time.After(d):
			return &Result{}, nil
		case <-ctx.Done():
			return &Result{ExitCode: -1, Signal: "SIGKILL"}, nil
		}
	}
}

func postJob(t *testing.T, url string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url+"/run", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestServerHealthAndDrain(t *testing.T) {
	srv := NewServer(&fakeSandbox{name: "py"}, ServerOptions{Slots: 3})
	ts := httptest.NewServer(srv)
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var h Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || h.Name != "py" || h.Slots != 3 || h.Draining {
		t.Fatalf("health: %s %+v; want 200 with name py, 3 slots", resp.Status, h)
	}

	srv.Drain()
	resp, err = http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("health while draining: %s, want 503", resp.Status)
	}
	body, _ := json.Marshal(toWireJob(Job{Command: []string{"true"}}))
	resp, b := postJob(t, ts.URL, body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "shutting down") {
		t.Errorf("run while draining: %s %s, want 503 shutting down", resp.Status, b)
	}
}

func TestServerBadRequests(t *testing.T) {
	fake := &fakeSandbox{name: "py"}
	ts := httptest.NewServer(NewServer(fake, ServerOptions{Slots: 1, MaxRequestBytes: 1 << 10}))
	defer ts.Close()

	big, _ := json.Marshal(toWireJob(Job{Command: []string{"python3", "-"}, Stdin: bytes.Repeat([]byte("x"), 4<<10)}))
	for _, c := range []struct {
		name   string
		body   []byte
		chunk  bool // hide the length, so that only the body reader can refuse it
		status int
		msg    string
	}{
		{"oversized", big, false, http.StatusRequestEntityTooLarge, "over the limit"},
		{"oversized without length", big, true, http.StatusRequestEntityTooLarge, "over the limit"},
		{"no command", []byte(`{"command": []}`), false, http.StatusBadRequest, "no command"},
		{"not json", []byte(`print(1)`), false, http.StatusBadRequest, "decode job"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(c.body)
			if c.chunk {
				r = io.MultiReader(r) // not a *bytes.Reader: no Content-Length
			}
			resp, err := http.Post(ts.URL+"/run", "application/json", r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !strings.Contains(string(b), c.msg) {
				t.Errorf("got %s %s; want %d with %q", resp.Status, b, c.status, c.msg)
			}
		})
	}
	if n := fake.calls.Load(); n != 0 {
		t.Errorf("the engine ran %d job(s) from bad requests", n)
	}

	resp, err := http.Get(ts.URL + "/run")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /run: %s, want 405", resp.Status)
	}
}

// The server runs at most its slots of jobs at once; the rest wait.
func TestServerSlots(t *testing.T) {
	fake := &fakeSandbox{name: "py", run: fakeSleep(50 * time.Millisecond)}
	srv := NewServer(fake, ServerOptions{Slots: 2})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	body, _ := json.Marshal(toWireJob(Job{Command: []string{"true"}}))
	var wg sync.WaitGroup
	for range 7 {
		wg.Go(func() {
			resp, b := postJob(t, ts.URL, body)
			if resp.StatusCode != 200 {
				t.Errorf("run: %s %s", resp.Status, b)
			}
		})
	}
	wg.Wait()
	if fake.calls.Load() != 7 || fake.peak.Load() != 2 {
		t.Errorf("%d jobs ran, at most %d at once; want 7, at most 2", fake.calls.Load(), fake.peak.Load())
	}
}

// A client that goes away has its job killed: the engine sees the job's
// context end.
func TestServerClientGoneKillsJob(t *testing.T) {
	started := make(chan struct{})
	killed := make(chan struct{})
	fake := &fakeSandbox{name: "py", run: func(ctx context.Context, job Job) (*Result, error) {
		close(started)
		select {
		case <-ctx.Done():
			close(killed)
			return &Result{ExitCode: -1, Signal: "SIGKILL"}, nil
		case <-time.After(10 * time.Second):
			return &Result{}, nil
		}
	}}
	ts := httptest.NewServer(NewServer(fake, ServerOptions{Slots: 1}))
	defer ts.Close()
	sb, err := openRemote(t.Context(), Config{Name: "py", Type: "slurm", Endpoints: []string{strings.TrimPrefix(ts.URL, "http://")}, Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := sb.Run(ctx, Job{Command: []string{"sleep", "10"}})
		errc <- err
	}()
	<-started
	cancel()
	select {
	case <-killed:
	case <-time.After(5 * time.Second):
		t.Fatal("the job still runs 5s after its client went away")
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v, want context.Canceled", err)
	}
}

// Serve shuts down on ctx: a job that finishes within the grace period
// gets its answer; one that does not is killed.
func TestServeShutdown(t *testing.T) {
	for _, c := range []struct {
		name      string
		job       time.Duration
		grace     time.Duration
		wantKill  bool
		maxReturn time.Duration
	}{
		{"finishes within grace", 300 * time.Millisecond, 10 * time.Second, false, 5 * time.Second},
		{"killed after grace", time.Hour, 200 * time.Millisecond, true, 5 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			var killed atomic.Bool
			fake := &fakeSandbox{name: "py", run: func(ctx context.Context, job Job) (*Result, error) {
				started <- struct{}{}
				select {
				case <-time.After(c.job):
					return &Result{ExitCode: 7}, nil
				case <-ctx.Done():
					killed.Store(true)
					return &Result{ExitCode: -1, Signal: "SIGKILL"}, nil
				}
			}}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(t.Context())
			served := make(chan error, 1)
			go func() { served <- Serve(ctx, ln, NewServer(fake, ServerOptions{Slots: 1}), c.grace) }()

			body, _ := json.Marshal(toWireJob(Job{Command: []string{"true"}}))
			type answer struct {
				status int
				body   []byte
				err    error
			}
			answered := make(chan answer, 1)
			go func() {
				resp, err := http.Post("http://"+ln.Addr().String()+"/run", "application/json", bytes.NewReader(body))
				if err != nil {
					answered <- answer{err: err}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				answered <- answer{status: resp.StatusCode, body: b}
			}()
			<-started
			stop()
			begin := time.Now()
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("Serve: %v", err)
				}
			case <-time.After(c.maxReturn):
				t.Fatalf("Serve still running %v after shutdown began", c.maxReturn)
			}
			if killed.Load() != c.wantKill {
				t.Errorf("job killed: %v, want %v", killed.Load(), c.wantKill)
			}
			a := <-answered
			if !c.wantKill {
				var wr wireResult
				if a.err != nil || a.status != 200 || json.Unmarshal(a.body, &wr) != nil || wr.ExitCode != 7 {
					t.Errorf("in-flight job's answer: %d %s %v; want 200 with exit 7", a.status, a.body, a.err)
				}
			} else if time.Since(begin) < c.grace {
				t.Errorf("Serve returned before the grace period")
			}
			// No new connections after shutdown.
			if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
				t.Errorf("the server still accepts connections after shutdown")
			}
		})
	}
}

// The server with the real local engine, through the remote client: a
// program passes or fails, its files come back, and a job that runs past
// its timeout is killed by the engine. Skipped where bubblewrap cannot run.
func TestServerLocalEngine(t *testing.T) {
	local, err := Open(t.Context(), Config{Type: "local", Concurrency: 2})
	if errors.Is(err, ErrUnavailable) {
		testenv.Missing(t, testenv.LocalSandbox, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	ts := httptest.NewServer(NewServer(local, ServerOptions{Slots: 2}))
	defer ts.Close()
	sb := openRemoteT(t, t.Context(), []string{ts.URL}, nil)

	prog := "def add(a, b):\n    return a + b\n\nassert add(2, 3) == 5\nopen('out.txt', 'w').write('ok')\n"
	res, err := sb.Run(t.Context(), Job{Command: []string{"python3", "-"}, Stdin: []byte(prog), Collect: []string{"out.txt"}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Files["out.txt"]) != "ok" {
		t.Errorf("passing program: exit %d, files %q, stderr %s", res.ExitCode, res.Files, res.Stderr)
	}
	res, err = sb.Run(t.Context(), Job{Command: []string{"python3", "-"}, Stdin: []byte("assert 1 + 1 == 3\n"), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 1 || !strings.Contains(string(res.Stderr), "AssertionError") {
		t.Errorf("failing program: exit %d, stderr %s; want 1 with AssertionError", res.ExitCode, res.Stderr)
	}
	res, err = sb.Run(t.Context(), Job{Command: []string{"python3", "-c", "while True: pass"}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit != LimitTimeout && res.Limit != LimitCPU {
		t.Errorf("endless program: limit %q, exit %d; want timeout", res.Limit, res.ExitCode)
	}
}

// A server with a token answers only requests that bear it.
func TestServerToken(t *testing.T) {
	srv := NewServer(&fakeSandbox{name: "py"}, ServerOptions{Token: "s3cret"})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for _, auth := range []string{"", "Bearer wrong", "s3cret", "Bearer s3cre"} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/health", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %s, want 401", auth, resp.Status)
		}
	}
	r := &remote{name: "py", client: ts.Client(), token: "s3cret"}
	if h, err := r.health(t.Context(), strings.TrimPrefix(ts.URL, "http://")); err != nil || h.Name != "py" {
		t.Errorf("health with the token: %+v %v", h, err)
	}
	r.token = ""
	if _, err := r.health(t.Context(), strings.TrimPrefix(ts.URL, "http://")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("health without the token: %v, want 401", err)
	}
}

// A pool's client takes its servers' token from Config.Token (the shard
// reads it from PoolTokenEnv): with it, it opens the pool and runs a job;
// without it, the pool's servers refuse it.
func TestRemotePoolToken(t *testing.T) {
	srv := NewServer(&fakeSandbox{name: "py"}, ServerOptions{Token: "s3cret"})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ep := strings.TrimPrefix(ts.URL, "http://")
	sb, err := openRemote(t.Context(), Config{Name: "py", Type: "slurm", Endpoints: []string{ep}, Token: "s3cret", Logger: discardLog})
	if err != nil {
		t.Fatalf("open with the token: %v", err)
	}
	defer sb.Close()
	if _, err := sb.Run(t.Context(), Job{Command: []string{"true"}, Timeout: 5 * time.Second}); err != nil {
		t.Errorf("a job with the token: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if sb, err := openRemote(ctx, Config{Name: "py", Type: "slurm", Endpoints: []string{ep}, Logger: discardLog}); err == nil {
		sb.Close()
		t.Error("a client without the pool's token opened it")
	}
	if got, want := PoolTokenEnv("py-exec.v2"), "NEL_SANDBOX_PY_EXEC_V2_TOKEN"; got != want {
		t.Errorf("PoolTokenEnv = %s, want %s", got, want)
	}
}
