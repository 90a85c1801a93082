package model

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
)

// countConns starts a server with h that counts the connections it
// accepted.
func countConns(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

// Requests one after another share one connection; after the server
// closed it while it was idle, the next request opens another and
// succeeds at its first attempt (no retry spent on the server's close:
// the liveness peek, or the redial when the connection was idle for less
// than trustIdle and not peeked).
func TestPlainTransportKeepAlive(t *testing.T) {
	srv, conns := countConns(t, reply(200, okChat))
	c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if r, err := c.Complete(context.Background(), chatReq()); err != nil || r.Attempts != 1 {
			t.Fatalf("complete: %+v, %v", r, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 requests in a row, want 1", n)
	}
	srv.CloseClientConnections()
	time.Sleep(20 * time.Millisecond) // the FIN crosses loopback
	r, err := c.Complete(context.Background(), chatReq())
	if err != nil || r.Attempts != 1 {
		t.Errorf("after the server closed the idle connection: %+v, %v; want success at attempt 1", r, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// A response that ends "Connection: close" is not kept, and a request
// cancelled while it waits for its answer frees its connection's slot: with
// one connection allowed, the next request still goes out.
func TestPlainTransportCloseAndCancel(t *testing.T) {
	var calls atomic.Int32
	srv, conns := countConns(t, func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Connection", "close")
		case 2:
			io.Copy(io.Discard, r.Body) // so the server notices the client leave
			<-r.Context().Done()
			return
		}
		reply(200, okChat)(w, r)
	})
	c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Complete(context.Background(), chatReq()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Complete(ctx, chatReq())
	var f *failure.Error
	if !errors.As(err, &f) || f.Category != failure.Timeout {
		t.Fatalf("cancelled: %v, want a timeout", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Complete(ctx, chatReq()); err != nil {
		t.Fatalf("after a cancelled request: %v", err)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (closed by the server, by the cancel, then a new one)", n)
	}
}

// The hot path's cost per request, counted in allocations (wall time is
// noise on a shared machine): a chat completion on a kept-alive
// connection, the request written and the answer read. The count includes
// the in-process test server's own allocations. Through go-openai and
// net/http's Transport (before issue 23) it was 163; 77 once a request
// waited for its answer without a read buffer, through its socket; 64
// once the wait allocated nothing and the request head was written without
// Request.Write; now 55 (the header made once per client, the body read
// into one buffer of its size, the response's head read without
// textproto, the wire put in the context only for go-openai's path).
// The bound catches a return to reflection, to goroutines per
// request, to Request.Write, to a header per request or to
// http.ReadResponse.
func TestCompleteAllocs(t *testing.T) {
	const maxAllocs = 57
	srv, _ := countConns(t, reply(200, okChat))
	c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := chatReq()
	n := testing.AllocsPerRun(200, func() {
		if _, err := c.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per request", n)
	if n > maxAllocs {
		t.Errorf("%.0f allocations per request, want at most %d", n, maxAllocs)
	}
}

// A connection holds a read buffer only while it reads a response (issue
// 23: at 10,000 requests in flight, buffers held from the dial on were a
// fifth of the live heap): idle between requests, it holds none, and the
// next request on it reads its answer through a buffer taken again.
func TestPlainTransportIdleHoldsNoReader(t *testing.T) {
	srv, conns := countConns(t, reply(200, okChat))
	c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pt, ok := c.transport.base.(*plainTransport)
	if !ok {
		t.Fatalf("transport is %T, want *plainTransport", c.transport.base)
	}
	for i := range 2 {
		r, err := c.Complete(context.Background(), chatReq())
		if err != nil || r.Content == "" {
			t.Fatalf("request %d: %+v, %v", i, r, err)
		}
		pt.mu.Lock()
		var idle []*plainConn
		for _, h := range pt.hosts {
			idle = append(idle, h.idle...)
		}
		pt.mu.Unlock()
		if len(idle) != 1 {
			t.Fatalf("after request %d: %d idle connections, want 1", i, len(idle))
		}
		if idle[0].br != nil {
			t.Errorf("after request %d: the idle connection holds a read buffer", i)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 2 requests in a row, want 1", n)
	}
}

// An https endpoint goes through net/http, which negotiates HTTP/2 by ALPN
// where the server offers it; a plain http one is spoken HTTP/1.1 by the
// plain transport (vLLM and SGLang speak no h2c, and net/http would not
// try it either).
func TestHTTP2OverTLSOnly(t *testing.T) {
	var proto atomic.Int32
	h := func(w http.ResponseWriter, r *http.Request) {
		proto.Store(int32(r.ProtoMajor))
		reply(200, okChat)(w, r)
	}
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(h))
	tlsSrv.EnableHTTP2 = true
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainSrv := httptest.NewUnstartedServer(http.HandlerFunc(h))
	plainSrv.EnableHTTP2 = true
	plainSrv.Start()
	defer plainSrv.Close()

	tr := newTransport(4).(*plainTransport)
	// Trust the test server's certificate, as the system's roots trust a
	// real endpoint's; the rest of the fallback is as built.
	tr.fallback.TLSClientConfig = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	for _, tc := range []struct {
		url  string
		want int32
	}{{tlsSrv.URL, 2}, {plainSrv.URL, 1}} {
		c, err := New(Config{BaseURL: tc.url + "/v1", Model: "m", HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(context.Background(), chatReq()); err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if got := proto.Load(); got != tc.want {
			t.Errorf("%s: the server saw HTTP/%d, want HTTP/%d", tc.url, got, tc.want)
		}
	}
	tr.CloseIdleConnections()
}
