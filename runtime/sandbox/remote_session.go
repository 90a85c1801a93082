package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// closeTimeout bounds the request that removes a session: Close has no
// context (the sample's may be cancelled already), and a server that does
// not answer removes the session when it shuts down.
const closeTimeout = 30 * time.Second

// OpenSession opens a session on the least loaded server of the pool (see
// server_session.go). The session keeps that server's slot until Close.
// spec's directories are read here and sent with the requests.
func (r *remote) OpenSession(ctx context.Context, spec SessionSpec) (Session, error) {
	if err := checkSpec(r.name, spec); err != nil {
		return nil, err
	}
	body, tests, err := sessionRequest(r.name, spec)
	if err != nil {
		return nil, err
	}
	var conn *sessionConn
	ep, err := r.onServer(ctx, true, func(ep *endpoint) error {
		conn, err = r.openOn(ctx, ep.addr, body, tests)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.log.Debug("session opened", "endpoint", ep.addr, "session", conn.id)
	return &remoteSession{sessionConn: conn, ep: ep}, nil
}

// sessionRequest reads spec's directories on this host: the body that
// opens a session (with /app's files), and the tests that go with the
// verifier's command.
func sessionRequest(name string, spec SessionSpec) (body []byte, tests []treeEntry, err error) {
	ws := wireSessionSpec{Image: spec.Image, TimeoutMS: spec.Timeout.Milliseconds(), HasTests: spec.Tests != ""}
	if ws.App, err = readTree(spec.App); err != nil {
		return nil, nil, fmt.Errorf("sandbox %s: session %s: %w", name, SessionApp, err)
	}
	if tests, err = readTree(spec.Tests); err != nil {
		return nil, nil, fmt.Errorf("sandbox %s: session %s: %w", name, SessionTests, err)
	}
	if body, err = json.Marshal(ws); err != nil {
		return nil, nil, fmt.Errorf("sandbox %s: encode session: %w", name, err)
	}
	return body, tests, nil
}

// openOn opens a session on the server at addr.
func (r *remote) openOn(ctx context.Context, addr string, body []byte, tests []treeEntry) (*sessionConn, error) {
	var opened wireSessionOpened
	if err := r.call(ctx, http.MethodPost, addr, "/session", "", body, &opened); err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	return &sessionConn{r: r, addr: addr, id: opened.ID, token: opened.Token, tests: tests}, nil
}

// call sends one request to a server and decodes a 200 answer into out
// (nil: none expected). A failure to reach the server is a connError.
func (r *remote) call(ctx context.Context, method, addr, path, token string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	r.authorize(req)
	if token != "" {
		req.Header.Set(SessionTokenHeader, token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return &connError{transportError(err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResultBytes))
	if err != nil {
		return &connError{fmt.Errorf("read answer: %w", transportError(err))}
	}
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout:
		return &connError{fmt.Errorf("%s: %s", resp.Status, serverMessage(b))}
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s: %s", resp.Status, serverMessage(b))
	case out == nil:
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// sessionConn is one open session on one server, by its id and token:
// what a pool's session and an ecs_fargate task's have in common.
type sessionConn struct {
	r               *remote
	addr, id, token string
	tests           []treeEntry // sent with the verifier's command alone
}

// exec runs one command in the session. The sandbox's container_env is
// the environment's base; the command's own variables win.
func (s *sessionConn) exec(ctx context.Context, c Command) (*Result, error) {
	// wireCommand has no field for them: sent, the command would run
	// without what it asked for.
	if c.Network || len(c.ReadOnly) > 0 {
		return nil, fmt.Errorf("session %s: not supported yet: a command with the host's network or host paths in a sandbox server's session (only the local sandbox gives them)", s.id)
	}
	wc := wireCommand{Argv: c.Argv, Stdin: c.Stdin, Env: mergeEnv(s.r.env, c.Env), Dir: c.Dir, TimeoutMS: c.Timeout.Milliseconds(), WithTests: c.WithTests}
	if c.WithTests {
		wc.Tests = s.tests
	}
	body, err := json.Marshal(wc)
	if err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	var wr wireResult
	if err := s.r.call(ctx, http.MethodPost, s.addr, "/session/"+s.id+"/exec", s.token, body, &wr); err != nil {
		return nil, fmt.Errorf("session %s: %w", s.id, err)
	}
	return wr.result(), nil
}

// remove deletes the session and what it kept on its server.
func (s *sessionConn) remove(ctx context.Context) error {
	return s.r.call(ctx, http.MethodDelete, s.addr, "/session/"+s.id, s.token, nil, nil)
}

// remoteSession is a session on one server of a pool.
type remoteSession struct {
	*sessionConn
	ep        *endpoint
	closeOnce sync.Once
	closeErr  error
}

func (s *remoteSession) Exec(ctx context.Context, c Command) (*Result, error) {
	res, err := s.exec(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %s: %w", s.r.name, s.addr, err)
	}
	return res, nil
}

// Close removes the session on its server and frees the slot it held.
func (s *remoteSession) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		err := s.remove(ctx)
		var ce *connError
		s.r.release(s.ep, err == nil, errors.As(err, &ce))
		if err != nil {
			s.closeErr = fmt.Errorf("sandbox %s: %s: close session %s: %w", s.r.name, s.addr, s.id, err)
		}
	})
	return s.closeErr
}
