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
// spec's directories are read here and sent with the request.
func (r *remote) OpenSession(ctx context.Context, spec SessionSpec) (Session, error) {
	if err := checkSpec(r.name, spec); err != nil {
		return nil, err
	}
	ws := wireSessionSpec{Image: spec.Image, TimeoutMS: spec.Timeout.Milliseconds(), HasTests: spec.Tests != ""}
	var err error
	if ws.App, err = readTree(spec.App); err != nil {
		return nil, fmt.Errorf("sandbox %s: session %s: %w", r.name, SessionApp, err)
	}
	if ws.Tests, err = readTree(spec.Tests); err != nil {
		return nil, fmt.Errorf("sandbox %s: session %s: %w", r.name, SessionTests, err)
	}
	body, err := json.Marshal(ws)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: encode session: %w", r.name, err)
	}
	var opened wireSessionOpened
	ep, err := r.onServer(ctx, true, func(ep *endpoint) error {
		if err := r.call(ctx, http.MethodPost, ep.addr, "/session", "", body, &opened); err != nil {
			return fmt.Errorf("open session: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.log.Debug("session opened", "endpoint", ep.addr, "session", opened.ID)
	return &remoteSession{r: r, ep: ep, id: opened.ID, token: opened.Token}, nil
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

// remoteSession is a session on one server of a pool.
type remoteSession struct {
	r         *remote
	ep        *endpoint
	id, token string
	closeOnce sync.Once
	closeErr  error
}

// Exec runs one command in the session. The sandbox's container_env is
// the environment's base; the command's own variables win.
func (s *remoteSession) Exec(ctx context.Context, c Command) (*Result, error) {
	c.Env = withBase(s.r.env, c.Env)
	body, err := json.Marshal(wireCommand{Argv: c.Argv, Stdin: c.Stdin, Env: c.Env, Dir: c.Dir, TimeoutMS: c.Timeout.Milliseconds(), WithTests: c.WithTests})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: encode command: %w", s.r.name, err)
	}
	var wr wireResult
	if err := s.r.call(ctx, http.MethodPost, s.ep.addr, "/session/"+s.id+"/exec", s.token, body, &wr); err != nil {
		return nil, fmt.Errorf("sandbox %s: %s: session %s: %w", s.r.name, s.ep.addr, s.id, err)
	}
	return wr.result(), nil
}

// Close removes the session on its server and frees the slot it held.
func (s *remoteSession) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		err := s.r.call(ctx, http.MethodDelete, s.ep.addr, "/session/"+s.id, s.token, nil, nil)
		var ce *connError
		s.r.release(s.ep, err == nil, errors.As(err, &ce))
		if err != nil {
			s.closeErr = fmt.Errorf("sandbox %s: %s: close session %s: %w", s.r.name, s.ep.addr, s.id, err)
		}
	})
	return s.closeErr
}
