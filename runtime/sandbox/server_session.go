package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
)

// A sandbox server also holds one stateful session, for an ecs_fargate
// task that is one sample's sandbox (ecs_session.go is its client):
//
//	POST /session        a wireSession: open the session (409 if one is open)
//	POST /session/exec   a wireCommand; 200 with a wireResult
//	POST /session/close  close it
//
// The task's files travel in the requests: /app's when the session opens,
// /tests' with the verifier's command alone.

type wireSession struct {
	App       tree  `json:"app,omitempty"`
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

type wireCommand struct {
	Argv      []string          `json:"argv"`
	Stdin     []byte            `json:"stdin,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Dir       string            `json:"dir,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	WithTests bool              `json:"with_tests,omitempty"`
	Tests     tree              `json:"tests,omitempty"`
}

func (w wireCommand) command() Command {
	return Command{Argv: w.Argv, Stdin: w.Stdin, Env: w.Env, Dir: w.Dir,
		Timeout: time.Duration(w.TimeoutMS) * time.Millisecond, WithTests: w.WithTests}
}

// serverSession is the server's session, if open.
type serverSession struct {
	mu    sync.Mutex
	s     Session
	tests string // a host directory the tests are staged in, for engines that bind one
}

// serveSession answers the /session paths; false for any other path.
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) bool {
	var do func(w http.ResponseWriter, r *http.Request)
	switch r.URL.Path {
	case "/session":
		do = s.openSession
	case "/session/exec":
		do = s.execSession
	case "/session/close":
		do = s.closeSession
	default:
		return false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "POST "+r.URL.Path)
		return true
	}
	do(w, r)
	return true
}

// decodeBody reads a request's JSON into v within the server's limit; on
// failure it has answered.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.maxReq)).Decode(v)
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request is over the limit of %d bytes (sandbox-serve --max-request)", s.maxReq))
		return false
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "decode request: "+err.Error())
		return false
	}
	return true
}

// lockFor decodes the request into v and locks the session for the
// request's handler, which unlocks it; nil when it has answered.
func (s *Server) lockFor(w http.ResponseWriter, r *http.Request, v any) *serverSession {
	if !s.decodeBody(w, r, v) {
		return nil
	}
	s.sess.mu.Lock()
	return &s.sess
}

func (s *Server) openSession(w http.ResponseWriter, r *http.Request) {
	var ws wireSession
	ss := s.lockFor(w, r, &ws)
	if ss == nil {
		return
	}
	defer ss.mu.Unlock()
	if ss.s != nil {
		writeError(w, http.StatusConflict, "this sandbox server already holds a session")
		return
	}
	spec := SessionSpec{Timeout: time.Duration(ws.TimeoutMS) * time.Millisecond}
	var sess Session
	var err error
	switch sb := s.sb.(type) {
	case *container:
		sess, err = sb.openSession(ws.App, spec)
	case SessionOpener:
		sess, err = s.openStaged(r, sb, ws.App, spec)
	default:
		writeError(w, http.StatusNotImplemented, "sandbox "+s.sb.Name()+": this engine keeps no session")
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	ss.s = sess
	s.log.Info("session open", "client", r.RemoteAddr, "app_files", len(ws.App))
	writeJSON(w, http.StatusOK, struct{}{})
}

// openStaged opens a session of an engine that reads its /app and /tests
// from host directories: /app's files are staged for the opening, and an
// empty directory waits for the verifier's tests.
func (s *Server) openStaged(r *http.Request, o SessionOpener, app tree, spec SessionSpec) (Session, error) {
	appDir, err := os.MkdirTemp("", "nel-session-app-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(appDir)
	if err := app.write(appDir); err != nil {
		return nil, err
	}
	tests, err := os.MkdirTemp("", "nel-session-tests-")
	if err != nil {
		return nil, err
	}
	spec.App, spec.Tests = appDir, tests
	sess, err := o.OpenSession(r.Context(), spec)
	if err != nil {
		os.RemoveAll(tests)
		return nil, err
	}
	s.sess.tests = tests
	return sess, nil
}

func (s *Server) execSession(w http.ResponseWriter, r *http.Request) {
	var wc wireCommand
	ss := s.lockFor(w, r, &wc)
	if ss == nil {
		return
	}
	defer ss.mu.Unlock()
	if ss.s == nil {
		writeError(w, http.StatusConflict, "no session is open on this sandbox server")
		return
	}
	start := time.Now()
	res, err := ss.exec(r, wc)
	if r.Context().Err() != nil {
		s.log.Info("client gone; session command killed", "after", time.Since(start).Round(time.Millisecond))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, toWireResult(res))
}

// exec runs one command, with the tests in place for it alone when it
// asks for them. ss.mu is held: one command at a time.
func (ss *serverSession) exec(r *http.Request, wc wireCommand) (*Result, error) {
	c := wc.command()
	if te, ok := ss.s.(testsExecer); ok {
		return te.ExecTests(r.Context(), c, wc.Tests)
	}
	if c.WithTests {
		if err := wc.Tests.write(ss.tests); err != nil {
			return nil, fmt.Errorf("stage %s: %w", SessionTests, err)
		}
		defer emptyDir(ss.tests)
	}
	return ss.s.Exec(r.Context(), c)
}

// emptyDir removes what dir holds, keeping dir.
func emptyDir(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.RemoveAll(dir + "/" + e.Name())
	}
}

func (s *Server) closeSession(w http.ResponseWriter, r *http.Request) {
	ss := &s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var err error
	if ss.s != nil {
		err = ss.s.Close()
		ss.s = nil
	}
	if ss.tests != "" {
		os.RemoveAll(ss.tests)
		ss.tests = ""
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}
