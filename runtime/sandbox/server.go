package sandbox

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The sandbox server (nel-run sandbox-serve) runs jobs for the shards of a
// SLURM job: one server per node of a sandbox pool, each running up to its
// slots of jobs with a local engine. The protocol is plain JSON over HTTP:
//
//	POST /run     a wireJob; 200 with a wireResult, or an error status
//	              with {"error": "..."}
//	GET  /health  200 with a Health while the server takes jobs, 503 while
//	              it shuts down
//	/session…     an agent's stateful session (server_session.go)
//
// A job whose client goes away is killed: the job runs under the request's
// context.

// DefaultMaxRequestBytes bounds a /run request (the program, its stdin and
// files). Model-written programs and test files are kilobytes; the bound
// keeps one bad request from exhausting the server's memory.
const DefaultMaxRequestBytes = 64 << 20

// maxResultBytes bounds a /run answer the client reads: the engine's capture
// limits keep real answers far below it.
const maxResultBytes = 1 << 30

// wireJob is a Job on the wire. []byte fields travel as base64.
type wireJob struct {
	Command   []string          `json:"command"`
	Stdin     []byte            `json:"stdin,omitempty"`
	Files     map[string][]byte `json:"files,omitempty"`
	Collect   []string          `json:"collect,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
}

// wireResult is a Result on the wire.
type wireResult struct {
	ExitCode   int               `json:"exit_code"`
	Signal     string            `json:"signal,omitempty"`
	Limit      Limit             `json:"limit,omitempty"`
	Stdout     []byte            `json:"stdout,omitempty"`
	Stderr     []byte            `json:"stderr,omitempty"`
	Truncated  bool              `json:"truncated,omitempty"`
	Files      map[string][]byte `json:"files,omitempty"`
	DurationNS int64             `json:"duration_ns"`
}

type wireError struct {
	Error string `json:"error"`
}

func toWireJob(j Job) wireJob {
	return wireJob{Command: j.Command, Stdin: j.Stdin, Files: j.Files, Collect: j.Collect, Env: j.Env, TimeoutMS: j.Timeout.Milliseconds()}
}

func (w wireJob) job() Job {
	return Job{Command: w.Command, Stdin: w.Stdin, Files: w.Files, Collect: w.Collect, Env: w.Env, Timeout: time.Duration(w.TimeoutMS) * time.Millisecond}
}

func toWireResult(r *Result) wireResult {
	return wireResult{ExitCode: r.ExitCode, Signal: r.Signal, Limit: r.Limit, Stdout: r.Stdout, Stderr: r.Stderr,
		Truncated: r.Truncated, Files: r.Files, DurationNS: int64(r.Duration)}
}

func (w wireResult) result() *Result {
	return &Result{ExitCode: w.ExitCode, Signal: w.Signal, Limit: w.Limit, Stdout: w.Stdout, Stderr: w.Stderr,
		Truncated: w.Truncated, Files: w.Files, Duration: time.Duration(w.DurationNS)}
}

// Health is what GET /health answers.
type Health struct {
	Name  string `json:"name"`
	Slots int    `json:"slots"`
	// Running and Waiting count the jobs on a slot and those queued for one.
	Running  int64 `json:"running"`
	Waiting  int64 `json:"waiting"`
	Draining bool  `json:"draining,omitempty"`
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// Slots is how many jobs run at once; more wait for a slot. 0 means 1.
	Slots int
	// MaxRequestBytes bounds a request body; 0 means DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// Logger receives a line per job; nil discards them.
	Logger *slog.Logger
	// Token, when set, must come with every request as "Authorization:
	// Bearer TOKEN": a server on a shared network (an ECS task's VPC)
	// runs only its own client's jobs.
	Token string
	// SessionIdle, when set, removes a session that has had no request
	// for that long: its client is gone without closing it (a shard
	// killed outright), and it would hold its slot until the server ends.
	SessionIdle time.Duration
}

// Server serves a Sandbox over HTTP (see the protocol above).
type Server struct {
	sb       Sandbox
	slots    chan struct{}
	maxReq   int64
	log      *slog.Logger
	token    string
	idle     time.Duration
	draining atomic.Bool
	running  atomic.Int64
	waiting  atomic.Int64
	seq      atomic.Int64
	inflight sync.WaitGroup // /run and /session handlers, for Serve's shutdown
	sessions sessionTable
}

// NewServer returns a server that runs jobs in sb.
func NewServer(sb Sandbox, opts ServerOptions) *Server {
	if opts.Slots <= 0 {
		opts.Slots = 1
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{sb: sb, slots: make(chan struct{}, opts.Slots), maxReq: opts.MaxRequestBytes, log: opts.Logger, token: opts.Token, idle: opts.SessionIdle}
}

// Drain makes the server refuse new jobs (503) and report itself unhealthy,
// so that clients send their jobs to other servers of the pool.
func (s *Server) Drain() { s.draining.Store(true) }

// Health reports the server's state.
func (s *Server) Health() Health {
	return Health{Name: s.sb.Name(), Slots: cap(s.slots), Running: s.running.Load(), Waiting: s.waiting.Load(), Draining: s.draining.Load()}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+s.token)) != 1 {
		writeError(w, http.StatusUnauthorized, "this sandbox server needs its token (Authorization: Bearer)")
		return
	}
	switch r.URL.Path {
	case "/health":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "GET /health")
			return
		}
		h := s.Health()
		status := http.StatusOK
		if h.Draining {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, h)
	case "/run":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeError(w, http.StatusMethodNotAllowed, "POST /run")
			return
		}
		s.run(w, r)
	case "/session":
		s.sessionHTTP(w, r)
	default:
		if strings.HasPrefix(r.URL.Path, "/session/") {
			s.sessionHTTP(w, r)
			return
		}
		writeError(w, http.StatusNotFound, "no such path: "+r.URL.Path+" (POST /run, GET /health, /session)")
	}
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, "sandbox server is shutting down")
		return
	}
	if r.ContentLength > s.maxReq {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request of %d bytes is over the limit of %d (sandbox-serve --max-request)", r.ContentLength, s.maxReq))
		return
	}
	var wj wireJob
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.maxReq))
	if err := dec.Decode(&wj); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request is over the limit of %d bytes (sandbox-serve --max-request)", s.maxReq))
			return
		}
		writeError(w, http.StatusBadRequest, "decode job: "+err.Error())
		return
	}
	if len(wj.Command) == 0 {
		writeError(w, http.StatusBadRequest, "job has no command")
		return
	}
	id := s.seq.Add(1)
	log := s.log.With("job", id, "client", r.RemoteAddr)
	ctx := r.Context()

	// Wait for a slot; a client that gives up leaves the queue.
	if !s.takeSlot(ctx, log) {
		return
	}
	defer func() {
		s.running.Add(-1)
		<-s.slots
	}()

	start := time.Now()
	res, err := s.sb.Run(ctx, wj.job())
	switch {
	case ctx.Err() != nil:
		// The client went away (its sample timed out, its shard stopped):
		// the engine has killed the program; nobody reads an answer.
		log.Info("client gone; job killed", "command", wj.Command[0], "after", time.Since(start).Round(time.Millisecond))
		return
	case err != nil:
		log.Error("job not run", "command", wj.Command[0], "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	log.Info("job done", "command", wj.Command[0], "exit", res.ExitCode, "signal", res.Signal, "limit", string(res.Limit),
		"duration", res.Duration.Round(time.Millisecond))
	writeJSON(w, http.StatusOK, toWireResult(res))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encode answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(wireError{Error: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Serve answers requests on ln until ctx is done, then shuts down: it
// stops taking jobs, gives the jobs in flight up to grace to finish, kills
// those still running and returns. The error is nil after such a shutdown.
func Serve(ctx context.Context, ln net.Listener, s *Server, grace time.Duration) error {
	// Jobs run under their own base context, not ctx: a SIGTERM must let
	// them finish within the grace period, not kill them at once.
	jobs, kill := context.WithCancel(context.WithoutCancel(ctx))
	defer kill()
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return jobs },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	if s.idle > 0 {
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		go s.reapIdle(rctx)
	}
	select {
	case err := <-done:
		return fmt.Errorf("sandbox server: %w", err)
	case <-ctx.Done():
	}
	s.Drain()
	h := s.Health()
	s.log.Info("shutting down", "running", h.Running, "waiting", h.Waiting, "grace", grace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		s.log.Warn("jobs still running after the grace period; killing them", "running", s.running.Load())
		kill()
		_ = hs.Close()
		// Engines kill a program's whole process tree when its context
		// ends; wait for them so that nothing outlives the server.
		s.inflight.Wait()
	}
	<-done
	// Sessions outlive their requests: nothing else removes them now.
	s.CloseSessions()
	return nil
}
