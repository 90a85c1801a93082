package sandbox

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Sessions on a sandbox server (a slurm sandbox pool's, an apptainer
// pool's, or the one an ecs_fargate task holds): an agent's sample keeps
// one session on one server from its start to its end, so that its files
// persist from one tool call to the next. The protocol extends the one in
// server.go:
//
//	POST   /session            a wireSessionSpec; 200 with {"id", "token"}
//	POST   /session/ID/exec    a wireCommand; 200 with a wireResult
//	DELETE /session/ID         the session and all it kept are removed
//
// /app's files come with the opening; the tests come with the verifier's
// command alone (wireCommand.Tests), so that they sit nowhere the agent's
// commands reach before it runs: in an ecs_fargate task the server's host
// is the sandbox itself (remote_session.go and ecs_session.go are the two
// clients; container_session.go the task's engine).
//
// Every request about a session bears its token (SessionTokenHeader), which
// only the client that opened it knows: another shard's agent on the same
// pool cannot run commands in it. A session holds one of the server's
// slots while it lives. The server removes the sessions still open when it
// shuts down.

// SessionTokenHeader carries a session's token.
const SessionTokenHeader = "Nel-Session-Token"

// wireSessionSpec is a SessionSpec on the wire: /app travels as a tree;
// HasTests says whether the verifier's command will bring tests.
type wireSessionSpec struct {
	App       []treeEntry `json:"app,omitempty"`
	HasTests  bool        `json:"has_tests,omitempty"`
	Image     string      `json:"image,omitempty"`
	TimeoutMS int64       `json:"timeout_ms,omitempty"`
}

type wireSessionOpened struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

// wireCommand is a Command on the wire.
type wireCommand struct {
	Argv      []string          `json:"argv"`
	Stdin     []byte            `json:"stdin,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Dir       string            `json:"dir,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	WithTests bool              `json:"with_tests,omitempty"`
	// Tests are the task's tests, with a WithTests command alone.
	Tests []treeEntry `json:"tests,omitempty"`
}

// served is one open session of a server.
type served struct {
	id, token string
	sess      Session
	staging   string // the host directory the trees were written to
	tests     string // under staging: where a command's tests are put; "" with none
	// mu keeps one command at a time: the verifier's tests are never
	// there beside an agent's command.
	mu        sync.Mutex
	closeOnce sync.Once
	// last is when a request last came (UnixNano) and busy how many
	// commands run, for the idle reaper.
	last atomic.Int64
	busy atomic.Int32
}

// idleSince says how long v has had no request and no command running
// (0 while one runs).
func (v *served) idleSince(now time.Time) time.Duration {
	if v.busy.Load() > 0 {
		return 0
	}
	return now.Sub(time.Unix(0, v.last.Load()))
}

// close removes the session and its staging directory, and frees its slot.
func (v *served) close(s *Server) error {
	var err error
	v.closeOnce.Do(func() {
		err = v.sess.Close()
		if rerr := os.RemoveAll(v.staging); rerr != nil && err == nil {
			err = rerr
		}
		s.running.Add(-1)
		<-s.slots
	})
	return err
}

// sessionTable is a server's open sessions by id.
type sessionTable struct {
	mu   sync.Mutex
	open map[string]*served
}

func (t *sessionTable) add(v *served) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open == nil {
		t.open = map[string]*served{}
	}
	t.open[v.id] = v
}

// takeIdle removes from the table the sessions idle for at least d and
// returns them.
func (t *sessionTable) takeIdle(now time.Time, d time.Duration) []*served {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*served
	for id, v := range t.open {
		if v.idleSince(now) >= d {
			out = append(out, v)
			delete(t.open, id)
		}
	}
	return out
}

// take removes the session id from the table and returns it.
func (t *sessionTable) take(id string) *served {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.open[id]
	delete(t.open, id)
	return v
}

func (t *sessionTable) get(id string) *served {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open[id]
}

// all removes every session from the table and returns them.
func (t *sessionTable) all() []*served {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*served, 0, len(t.open))
	for id, v := range t.open {
		out = append(out, v)
		delete(t.open, id)
	}
	return out
}

// sessionHTTP answers the /session paths.
func (s *Server) sessionHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/session")
	switch {
	case rest == "" && r.Method == http.MethodPost:
		s.openSession(w, r)
	case strings.HasSuffix(rest, "/exec") && r.Method == http.MethodPost:
		if v := s.authorized(w, r, strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/exec")); v != nil {
			s.execSession(w, r, v)
		}
	case strings.HasPrefix(rest, "/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(rest, "/")
		if v := s.authorized(w, r, id); v != nil {
			if s.sessions.take(id) == nil {
				writeError(w, http.StatusNotFound, "no such session (already closed)")
				return
			}
			if err := v.close(s); err != nil {
				s.log.Warn("session removed with an error", "session", id, "err", err)
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
			s.log.Info("session closed", "session", id)
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		writeError(w, http.StatusNotFound, "no such session request: "+r.Method+" "+r.URL.Path+" (POST /session, POST /session/ID/exec, DELETE /session/ID)")
	}
}

// authorized returns session id when the request bears its token; else it
// answers 404 (no such session) or 403 (not its token) and returns nil.
// Telling the two apart gives nothing away: ids are not secrets, and the
// token is compared in constant time.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, id string) *served {
	v := s.sessions.get(id)
	if v == nil {
		writeError(w, http.StatusNotFound, "no such session: "+id)
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(SessionTokenHeader)), []byte(v.token)) != 1 {
		writeError(w, http.StatusForbidden, "this session needs its token ("+SessionTokenHeader+")")
		return nil
	}
	v.last.Store(time.Now().UnixNano())
	return v
}

// openSession opens a session on the server's engine once a slot is free.
func (s *Server) openSession(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	o, ok := s.sb.(SessionOpener)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("sandbox %s: not supported yet: sessions on this server's engine", s.sb.Name()))
		return
	}
	var ws wireSessionSpec
	if !s.decode(w, r, &ws) {
		return
	}
	if !s.takeSlot(r.Context(), s.log) {
		return
	}
	v, err := s.newServed(r.Context(), o, ws)
	if err != nil {
		s.running.Add(-1)
		<-s.slots
		s.log.Error("session not opened", "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if s.draining.Load() {
		// The server began shutting down while the session opened: the
		// shutdown may have closed the table already.
		_ = v.close(s)
		writeError(w, http.StatusServiceUnavailable, "sandbox server is shutting down")
		return
	}
	s.sessions.add(v)
	s.log.Info("session opened", "session", v.id, "image", ws.Image, "client", r.RemoteAddr)
	writeJSON(w, http.StatusOK, wireSessionOpened{ID: v.id, Token: v.token})
}

// newServed writes the trees to a staging directory and opens the session
// from it.
func (s *Server) newServed(ctx context.Context, o SessionOpener, ws wireSessionSpec) (*served, error) {
	id, err := newToken()
	if err != nil {
		return nil, err
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	id = id[:16]
	staging, err := os.MkdirTemp("", "nel-pool-session-")
	if err != nil {
		return nil, fmt.Errorf("session staging: %w", err)
	}
	spec := SessionSpec{Image: ws.Image, Timeout: time.Duration(ws.TimeoutMS) * time.Millisecond}
	fail := func(err error) (*served, error) {
		_ = os.RemoveAll(staging)
		return nil, err
	}
	if len(ws.App) > 0 {
		spec.App = filepath.Join(staging, "app")
		if err := writeStaged(spec.App, ws.App); err != nil {
			return fail(fmt.Errorf("session %s: %w", SessionApp, err))
		}
	}
	if ws.HasTests {
		// Empty until the verifier's command brings the tests.
		spec.Tests = filepath.Join(staging, "tests")
		if err := os.Mkdir(spec.Tests, 0o700); err != nil {
			return fail(fmt.Errorf("session %s: %w", SessionTests, err))
		}
	}
	sess, err := o.OpenSession(ctx, spec)
	if err != nil {
		return fail(err)
	}
	// The engine copied the task's files into the session: the staged
	// copy of /app is no longer needed.
	if spec.App != "" {
		_ = os.RemoveAll(spec.App)
	}
	v := &served{id: id, token: token, sess: sess, staging: staging, tests: spec.Tests}
	v.last.Store(time.Now().UnixNano())
	return v, nil
}

// exec runs c, one command of v at a time; a WithTests command has tests
// at /tests for it alone. An engine that takes them with the command
// (testsExecer: the container a task's server runs in) places them
// itself; for the others they are staged in v's tests directory, which
// the engine mounts for that command, and removed after it.
func (v *served) exec(ctx context.Context, c Command, tests []treeEntry) (*Result, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if te, ok := v.sess.(testsExecer); ok {
		return te.ExecTests(ctx, c, tests)
	}
	if c.WithTests && v.tests != "" {
		defer emptyDir(v.tests)
		if err := writeTree(v.tests, tests); err != nil {
			return nil, fmt.Errorf("stage %s: %w", SessionTests, err)
		}
	}
	return v.sess.Exec(ctx, c)
}

// emptyDir removes what dir holds, keeping dir.
func emptyDir(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

func writeStaged(dir string, tree []treeEntry) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return writeTree(dir, tree)
}

// execSession runs one command in session v.
func (s *Server) execSession(w http.ResponseWriter, r *http.Request, v *served) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	var wc wireCommand
	if !s.decode(w, r, &wc) {
		return
	}
	v.busy.Add(1)
	defer func() {
		v.last.Store(time.Now().UnixNano())
		v.busy.Add(-1)
	}()
	c := Command{Argv: wc.Argv, Stdin: wc.Stdin, Env: wc.Env, Dir: wc.Dir, Timeout: time.Duration(wc.TimeoutMS) * time.Millisecond, WithTests: wc.WithTests}
	res, err := v.exec(r.Context(), c, wc.Tests)
	switch {
	case r.Context().Err() != nil:
		s.log.Info("client gone; session command killed", "session", v.id)
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.log.Debug("session command done", "session", v.id, "command", wc.Argv[0], "exit", res.ExitCode, "duration", res.Duration.Round(time.Millisecond))
	writeJSON(w, http.StatusOK, toWireResult(res))
}

// decode reads a JSON request body of at most the server's limit into v;
// on failure it answers and returns false.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, "sandbox server is shutting down")
		return false
	}
	if r.ContentLength > s.maxReq {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request of %d bytes is over the limit of %d (sandbox-serve --max-request)", r.ContentLength, s.maxReq))
		return false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.maxReq)).Decode(v); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request is over the limit of %d bytes (sandbox-serve --max-request)", s.maxReq))
			return false
		}
		writeError(w, http.StatusBadRequest, "decode request: "+err.Error())
		return false
	}
	return true
}

// takeSlot waits for a free slot and counts it as running; false when the
// client went away first.
func (s *Server) takeSlot(ctx context.Context, log *slog.Logger) bool {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case s.slots <- struct{}{}:
		s.running.Add(1)
		return true
	case <-ctx.Done():
		log.Info("client gone before a slot was free")
		return false
	}
}

// CloseSessions removes every open session: the server is shutting down,
// or (a test's fake ECS) the task it runs in was stopped, which on ECS
// takes the container's files with it.
func (s *Server) CloseSessions() {
	for _, v := range s.sessions.all() {
		if err := v.close(s); err != nil {
			s.log.Warn("session removed with an error", "session", v.id, "err", err)
		} else {
			s.log.Info("session closed at shutdown", "session", v.id)
		}
	}
}

// reapIdle removes, until ctx ends, the sessions idle for s.idle.
func (s *Server) reapIdle(ctx context.Context) {
	tick := time.NewTicker(min(max(s.idle/4, 10*time.Millisecond), time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			for _, v := range s.sessions.takeIdle(now, s.idle) {
				if err := v.close(s); err != nil {
					s.log.Warn("idle session removed with an error", "session", v.id, "err", err)
				} else {
					s.log.Info("idle session removed", "session", v.id, "idle", s.idle)
				}
			}
		}
	}
}
