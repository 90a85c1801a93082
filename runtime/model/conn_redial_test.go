package model

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawServer accepts connections and hands the i-th (from 0) to serve[i];
// one past the list is closed at once. It records the bodies of the
// requests it read, in order.
type rawServer struct {
	ln     net.Listener
	mu     sync.Mutex
	bodies []string
	conns  int
}

func newRawServer(t *testing.T, serve ...func(s *rawServer, c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			if i >= len(serve) {
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				serve[i](s, c, bufio.NewReader(c))
			}()
		}
	}()
	return s
}

// read reads one request and records its body.
func (s *rawServer) read(br *bufio.Reader) bool {
	r, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	return true
}

func (s *rawServer) seen() (conns int, bodies []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns, append([]string(nil), s.bodies...)
}

// answer reads a request and answers it, keeping the connection (no
// "Connection: close").
func answer(s *rawServer, c net.Conn, br *bufio.Reader) bool {
	if !s.read(br) {
		return false
	}
	_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(okChat))+"\r\n\r\n"+okChat)
	return err == nil
}

func testTransport() *plainTransport {
	return newPlainTransport(4, &http.Transport{IdleConnTimeout: time.Minute, Proxy: http.ProxyFromEnvironment}, (&net.Dialer{}).DialContext)
}

func post(t *testing.T, tr http.RoundTripper, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// answerThenRead answers the first request on a connection, then reads
// the next one and closes the connection without answering it.
func answerThenRead(s *rawServer, c net.Conn, br *bufio.Reader) {
	if answer(s, c, br) {
		s.read(br)
	}
}

// answerOne answers one request.
func answerOne(s *rawServer, c net.Conn, br *bufio.Reader) { answer(s, c, br) }

// afterFirst starts a server whose first connection first serves, and
// whose second answers, and sends "first" to it through a new transport,
// which it returns with the URL.
func afterFirst(t *testing.T, first func(*rawServer, net.Conn, *bufio.Reader)) (*rawServer, *plainTransport, string) {
	t.Helper()
	s := newRawServer(t, first, answerOne)
	tr := testTransport()
	t.Cleanup(tr.CloseIdleConnections)
	url := "http://" + s.ln.Addr().String() + "/v1/chat/completions"
	if _, err := post(t, tr, url, "first"); err != nil {
		t.Fatal(err)
	}
	return s, tr, url
}

// A server that closes a kept-alive connection once it has read the next
// request, without answering (what a client sees when the server's idle
// close crosses the request on the wire, after the liveness peek): the
// transport resends the request at once on a new connection, with its
// whole body, and the caller sees the answer.
func TestRedialKeptAliveClosed(t *testing.T) {
	s, tr, url := afterFirst(t, answerThenRead)
	resp, err := post(t, tr, url, "second")
	if err != nil {
		t.Fatalf("request on a kept-alive connection the server closed: %v, want the answer after a redial", err)
	}
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	conns, bodies := s.seen()
	if conns != 2 || strings.Join(bodies, ",") != "first,second,second" {
		t.Errorf("server saw %d connections and bodies %q, want 2 and first,second,second", conns, bodies)
	}
}

// Through Client, the redial is no retry: the request succeeds at its
// first attempt (without the redial, at its second, after a backoff).
func TestRedialIsNoAttempt(t *testing.T) {
	s := newRawServer(t, answerThenRead, answerOne)
	c, err := New(Config{BaseURL: "http://" + s.ln.Addr().String() + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 2 {
		r, err := c.Complete(context.Background(), chatReq())
		if err != nil || r.Attempts != 1 {
			t.Fatalf("request %d: %+v, %v; want success at attempt 1", i+1, r, err)
		}
	}
}

// No redial where it could be wrong or is no help: a new connection closed
// before its answer (the server refuses this request, not an idle
// connection), an answer cut after its first bytes (the server answered),
// a body that cannot be read again.
func TestNoRedial(t *testing.T) {
	keptThenCut := func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if answer(s, c, br) && s.read(br) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		}
	}
	closed := func(s *rawServer, c net.Conn, br *bufio.Reader) { s.read(br) }
	for _, tc := range []struct {
		name   string
		serve  func(*rawServer, net.Conn, *bufio.Reader)
		first  bool // the first request is answered, the second fails
		body   func(string) io.Reader
		bodies string
	}{
		{"new connection", closed, false, func(s string) io.Reader { return strings.NewReader(s) }, "second"},
		{"answer cut", keptThenCut, true, func(s string) io.Reader { return strings.NewReader(s) }, "first,second"},
		{"body not rewindable", answerThenRead, true, func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }, "first,second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A second connection, if one were dialed, would be answered.
			s := newRawServer(t, tc.serve, answerOne)
			tr := testTransport()
			defer tr.CloseIdleConnections()
			url := "http://" + s.ln.Addr().String() + "/"
			if tc.first {
				if _, err := post(t, tr, url, "first"); err != nil {
					t.Fatal(err)
				}
			}
			req, _ := http.NewRequest("POST", url, tc.body("second"))
			if _, err := tr.RoundTrip(req); err == nil {
				t.Fatal("no error, want the failure of the request")
			}
			conns, bodies := s.seen()
			if conns != 1 || strings.Join(bodies, ",") != tc.bodies {
				t.Errorf("server saw %d connections and bodies %q, want 1 and %s", conns, bodies, tc.bodies)
			}
		})
	}
}

// A cancelled request is not resent: its error is the context's.
func TestNoRedialCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, tr, url := afterFirst(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if answer(s, c, br) {
			s.read(br)
			cancel() // before the close reaches the client
			time.Sleep(20 * time.Millisecond)
		}
	})
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader([]byte("second")))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if conns, _ := s.seen(); conns != 1 {
		t.Errorf("%d connections, want 1", conns)
	}
}

// A connection idle for longer than trustIdle is peeked before it is
// used: one the server closed (here only its writing side, so that a
// request sent on it would still be read and show) is dropped, and the
// request goes out once, on a new connection. Idle for less, it is used
// without the peek and the request, unanswered, is resent.
func TestIdlePeekedAfterTrustIdle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		idle   time.Duration
		bodies string
	}{
		{"peeked", 2 * trustIdle, "first,second"},
		{"trusted", 0, "first,second,second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tr, url := afterFirst(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
				if answer(s, c, br) {
					c.(*net.TCPConn).CloseWrite()
					s.read(br)
				}
			})
			time.Sleep(20 * time.Millisecond) // the FIN crosses loopback
			tr.mu.Lock()
			for _, pc := range tr.hosts[s.ln.Addr().String()].idle {
				pc.idleSince = pc.idleSince.Add(-tc.idle)
			}
			tr.mu.Unlock()
			if _, err := post(t, tr, url, "second"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // the first server reads what it got
			if _, bodies := s.seen(); strings.Join(bodies, ",") != tc.bodies {
				t.Errorf("server saw bodies %q, want %s", bodies, tc.bodies)
			}
		})
	}
}

// A server that closes every connection after its response, without
// saying "Connection: close": each next request, sent on the closed
// connection within trustIdle (no peek), is resent at once on a new one
// and succeeds at its first attempt.
func TestServerClosesAfterEachResponse(t *testing.T) {
	const n = 5
	serve := make([]func(*rawServer, net.Conn, *bufio.Reader), n)
	for i := range serve {
		serve[i] = answerOne
	}
	s := newRawServer(t, serve...)
	c, err := New(Config{BaseURL: "http://" + s.ln.Addr().String() + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range n {
		time.Sleep(5 * time.Millisecond) // the server's close arrives first
		r, err := c.Complete(context.Background(), chatReq())
		if err != nil || r.Attempts != 1 {
			t.Fatalf("request %d: %+v, %v; want success at attempt 1", i+1, r, err)
		}
	}
	if conns, bodies := s.seen(); conns != n || len(bodies) != n {
		t.Errorf("server saw %d connections and %d requests, want %d and %d", conns, len(bodies), n, n)
	}
}
