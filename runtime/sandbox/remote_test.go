package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

var discardLog = slog.New(slog.DiscardHandler)

// remotePool starts a sandbox server per fake, each advertising slots[i] slots
// in its health answer. The servers themselves take up to 100 jobs at once,
// so that only the client's spreading keeps within the slots.
func remotePool(t *testing.T, slots []int, fakes []*fakeSandbox) ([]*httptest.Server, []string) {
	t.Helper()
	var servers []*httptest.Server
	var eps []string
	for i, f := range fakes {
		srv := NewServer(f, ServerOptions{Slots: 100})
		n := slots[i]
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" {
				writeJSON(w, 200, Health{Name: f.name, Slots: n})
				return
			}
			srv.ServeHTTP(w, r)
		}))
		t.Cleanup(ts.Close)
		servers = append(servers, ts)
		eps = append(eps, strings.TrimPrefix(ts.URL, "http://"))
	}
	return servers, eps
}

func openRemoteT(t *testing.T, ctx context.Context, eps []string, env map[string]string) Sandbox {
	t.Helper()
	sb, err := openRemote(ctx, Config{Name: "py", Type: "slurm", Endpoints: eps, Env: env, Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// A job and its result cross the wire intact; the sandbox's container_env
// is added to the job's environment, the job's own entries winning.
func TestRemoteRoundTrip(t *testing.T) {
	want := &Result{
		ExitCode: 3, Signal: "", Limit: LimitOutput,
		Stdout: []byte("out\x00\xff"), Stderr: []byte("Traceback ...\n"), Truncated: true,
		Files:    map[string][]byte{"result.json": []byte(`{"passed": true}`)},
		Duration: 1234567 * time.Microsecond,
	}
	fake := &fakeSandbox{name: "py", run: func(ctx context.Context, job Job) (*Result, error) { return want, nil }}
	_, eps := remotePool(t, []int{2}, []*fakeSandbox{fake})
	sb := openRemoteT(t, t.Context(), eps, map[string]string{"PYTHONHASHSEED": "0", "LANG": "C"})
	if sb.Name() != "py" {
		t.Errorf("Name() = %q, want py", sb.Name())
	}
	job := Job{
		Command: []string{"python3", "-I", "main.py"},
		Stdin:   []byte("input\n"),
		Files:   map[string][]byte{"main.py": []byte("print('hi')\n"), "data/x.bin": {0, 1, 2, 255}},
		Collect: []string{"result.json"},
		Env:     map[string]string{"LANG": "C.UTF-8", "PATH": "/usr/bin"},
		Timeout: 2500 * time.Millisecond,
	}
	got, err := sb.Run(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("result:\n got %+v\nwant %+v", got, want)
	}
	sent := job
	sent.Env = map[string]string{"LANG": "C.UTF-8", "PATH": "/usr/bin", "PYTHONHASHSEED": "0"}
	if len(fake.jobs) != 1 || !reflect.DeepEqual(fake.jobs[0], sent) {
		t.Errorf("the engine got:\n %+v\nwant %+v", fake.jobs, sent)
	}
}

// Jobs go to the least loaded server with a free slot, never more than a
// server's slots at once.
func TestRemoteSpreadsBySlots(t *testing.T) {
	for _, c := range []struct {
		slots []int
		jobs  int
	}{
		{[]int{2, 2}, 12},
		{[]int{1, 3}, 12},
		{[]int{4}, 9},
	} {
		t.Run(fmt.Sprint(c.slots), func(t *testing.T) {
			var fakes []*fakeSandbox
			for i := range c.slots {
				fakes = append(fakes, &fakeSandbox{name: fmt.Sprint("node", i), run: fakeSleep(40 * time.Millisecond)})
			}
			_, eps := remotePool(t, c.slots, fakes)
			sb := openRemoteT(t, t.Context(), eps, nil)
			var wg sync.WaitGroup
			for range c.jobs {
				wg.Go(func() {
					if _, err := sb.Run(t.Context(), Job{Command: []string{"true"}}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			total := int64(0)
			for i, f := range fakes {
				total += f.calls.Load()
				// With more jobs than slots, each server is filled to its
				// slots and never beyond.
				if p := f.peak.Load(); p != int64(c.slots[i]) {
					t.Errorf("server %d (%d slots): %d jobs at once", i, c.slots[i], p)
				}
			}
			if total != int64(c.jobs) {
				t.Errorf("%d jobs ran, want %d", total, c.jobs)
			}
		})
	}
}

// A server that goes away: the job is retried once on another, and later
// jobs avoid the dead one.
func TestRemoteFailover(t *testing.T) {
	a := &fakeSandbox{name: "a"}
	b := &fakeSandbox{name: "b", run: func(context.Context, Job) (*Result, error) { return &Result{Stdout: []byte("from b")}, nil }}
	servers, eps := remotePool(t, []int{2, 2}, []*fakeSandbox{a, b})
	sb := openRemoteT(t, t.Context(), eps, nil)
	servers[0].Close() // both idle: the first would be picked

	for i := range 3 {
		res, err := sb.Run(t.Context(), Job{Command: []string{"true"}})
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if string(res.Stdout) != "from b" {
			t.Errorf("job %d: stdout %q, want from b", i, res.Stdout)
		}
	}
	if a.calls.Load() != 0 || b.calls.Load() != 3 {
		t.Errorf("calls: a %d, b %d; want 0 and 3", a.calls.Load(), b.calls.Load())
	}
}

// A server shutting down answers 503: also a reason to go elsewhere.
func TestRemoteFailoverOnDrain(t *testing.T) {
	a, b := &fakeSandbox{name: "a"}, &fakeSandbox{name: "b"}
	srvA := NewServer(a, ServerOptions{Slots: 1})
	tsA := httptest.NewServer(srvA)
	defer tsA.Close()
	tsB := httptest.NewServer(NewServer(b, ServerOptions{Slots: 1}))
	defer tsB.Close()
	sb := openRemoteT(t, t.Context(), []string{tsA.URL, tsB.URL}, nil) // http:// prefixes are accepted
	srvA.Drain()
	if _, err := sb.Run(t.Context(), Job{Command: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if a.calls.Load() != 0 || b.calls.Load() != 1 {
		t.Errorf("calls: a %d, b %d; want 0 and 1", a.calls.Load(), b.calls.Load())
	}
}

// When no server can be reached, Run fails (the caller records a
// sandbox_error) naming the servers it tried.
func TestRemoteNoneReachable(t *testing.T) {
	a, b := &fakeSandbox{name: "a"}, &fakeSandbox{name: "b"}
	servers, eps := remotePool(t, []int{1, 1}, []*fakeSandbox{a, b})
	sb := openRemoteT(t, t.Context(), eps, nil)
	servers[0].Close()
	servers[1].Close()
	_, err := sb.Run(t.Context(), Job{Command: []string{"true"}})
	if err == nil {
		t.Fatal("Run succeeded with every server gone")
	}
	for _, want := range []string{"no sandbox server reachable", eps[0], eps[1]} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// An engine failure on a reachable server is the job's error, not retried.
func TestRemoteEngineError(t *testing.T) {
	a := &fakeSandbox{name: "a", run: func(context.Context, Job) (*Result, error) {
		return nil, errors.New("image python:3.12 not pullable")
	}}
	b := &fakeSandbox{name: "b"}
	_, eps := remotePool(t, []int{1, 1}, []*fakeSandbox{a, b})
	sb := openRemoteT(t, t.Context(), eps, nil)
	_, err := sb.Run(t.Context(), Job{Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "not pullable") || !strings.Contains(err.Error(), eps[0]) {
		t.Errorf("Run: %v; want the engine's error and the server", err)
	}
	if a.calls.Load() != 1 || b.calls.Load() != 0 {
		t.Errorf("calls: a %d, b %d; want 1 and 0", a.calls.Load(), b.calls.Load())
	}
}

// The client refuses a job the server would refuse as too large, with the
// server's reason.
func TestRemoteOversized(t *testing.T) {
	fake := &fakeSandbox{name: "py"}
	ts := httptest.NewServer(NewServer(fake, ServerOptions{Slots: 1, MaxRequestBytes: 1 << 10}))
	defer ts.Close()
	sb := openRemoteT(t, t.Context(), []string{ts.URL}, nil)
	_, err := sb.Run(t.Context(), Job{Command: []string{"python3"}, Files: map[string][]byte{"big": make([]byte, 8<<10)}})
	if err == nil || !strings.Contains(err.Error(), "413") || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("Run: %v; want 413 over the limit", err)
	}
	if fake.calls.Load() != 0 {
		t.Errorf("the engine ran the oversized job")
	}
}

// deadAddr is a host:port nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A pool that never came up: Open fails within its deadline, naming every
// server and why.
func TestRemoteOpenPoolDown(t *testing.T) {
	eps := []string{deadAddr(t), deadAddr(t)}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := openRemote(ctx, Config{Name: "py", Type: "slurm", Endpoints: eps, Logger: discardLog})
	if err == nil {
		t.Fatal("Open succeeded with no server up")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open took %v past its 1s deadline", d)
	}
	for _, want := range []string{"sandbox py", "health check", eps[0], eps[1], "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// Part of the pool up: Open waits a little for the rest, then goes on
// with the servers that answered.
func TestRemoteOpenPartialPool(t *testing.T) {
	fake := &fakeSandbox{name: "a"}
	_, eps := remotePool(t, []int{2}, []*fakeSandbox{fake})
	start := time.Now()
	sb := openRemoteT(t, t.Context(), []string{deadAddr(t), eps[0]}, nil)
	if d := time.Since(start); d > straggler+2*time.Second {
		t.Errorf("Open took %v with one server up; want about %v", d, straggler)
	}
	for range 3 {
		if _, err := sb.Run(t.Context(), Job{Command: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	if fake.calls.Load() != 3 {
		t.Errorf("the live server ran %d of 3 jobs", fake.calls.Load())
	}
}

func TestRemoteOpenErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		eps  []string
		want string
	}{
		{"no endpoints", nil, "NEL_SANDBOX_PY_ENDPOINTS"},
		{"not host:port", []string{"node1"}, `expected host:port, found "node1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(t.Context(), Config{Name: "py", Type: "slurm", Endpoints: c.eps})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open: %v; want %q", err, c.want)
			}
		})
	}
}

func TestEndpointsFromEnv(t *testing.T) {
	for _, c := range []struct {
		name, key, value string
		want             []string
		err              string
	}{
		{name: "py", key: "NEL_SANDBOX_PY_ENDPOINTS", value: "n1:18800,n2:18800", want: []string{"n1:18800", "n2:18800"}},
		{name: "py-exec.v2", key: "NEL_SANDBOX_PY_EXEC_V2_ENDPOINTS", value: " n1:1 , ,[::1]:2,", want: []string{"n1:1", "[::1]:2"}},
		{name: "py", key: "NEL_SANDBOX_PY_ENDPOINTS", value: "", err: "NEL_SANDBOX_PY_ENDPOINTS is not set"},
		{name: "py", key: "NEL_SANDBOX_PY_ENDPOINTS", value: " , ", err: "lists no server"},
		{name: "py", key: "NEL_SANDBOX_PY_ENDPOINTS", value: "n1:18800,n2", err: `expected host:port, found "n2"`},
		{name: "py", key: "NEL_SANDBOX_PY_ENDPOINTS", value: "n1:0", err: "port from 1 to 65535"},
		{name: "", key: "NEL_SANDBOX__ENDPOINTS", value: "n1:1", err: "referred to by name"},
		{name: "7b", key: "NEL_SANDBOX__7B_ENDPOINTS", value: "n1:1", want: []string{"n1:1"}},
		{name: "pé", key: "NEL_SANDBOX_P__ENDPOINTS", value: "n1:1", want: []string{"n1:1"}},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			if k := EndpointsEnv(c.name); k != c.key {
				t.Errorf("EndpointsEnv(%q) = %s, want %s", c.name, k, c.key)
			}
			getenv := func(k string) string {
				if k == c.key {
					return c.value
				}
				return ""
			}
			got, err := EndpointsFromEnv(c.name, getenv)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
