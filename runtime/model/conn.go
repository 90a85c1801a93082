package model

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// plainTransport speaks HTTP/1.1 with keep-alive over plain TCP, doing the
// I/O on the caller's goroutine. net/http's Transport runs two goroutines
// per connection (a read loop and a write loop) besides the caller's, each
// with its own stack and buffers: at 10,000 requests in flight that was
// most of a shard's memory (issue 23: 30,000 goroutines, 270 MB of stacks).
// Here a request in flight costs its caller's goroutine, the socket and a
// small read buffer. Requests it does not handle (https, a proxy from the
// environment) go to fallback, an http.Transport, which also brings HTTP/2
// where a TLS server offers it (negotiated by ALPN). Plain http:// stays
// HTTP/1.1: vLLM and SGLang speak no h2c (HTTP/2 without TLS), and
// net/http would not try it either (TestHTTP2OverTLSOnly).
type plainTransport struct {
	fallback *http.Transport
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	maxConns int           // per host, idle ones included (MaxConnsPerHost)
	idleFor  time.Duration // an idle connection older than this is closed

	mu    sync.Mutex
	hosts map[string]*hostConns
}

// hostConns are the connections to one host:port.
type hostConns struct {
	open    int               // connections open, idle or busy
	idle    []*plainConn      // most recently used last
	waiting []chan *plainConn // requests waiting: given a connection, or nil to open one
}

type plainConn struct {
	c         net.Conn
	br        *bufio.Reader // from readers while a response is read, else nil
	host      string
	idleSince time.Time
	reused    bool // it carried a request before this one
	readable  *readable
}

// trustIdle is how long a connection stays idle before get peeks whether
// the server closed it.
const trustIdle = time.Second

// readBufferSize is a connection's read buffer: an OpenAI response's
// headers fit; a larger body is read through it.
const readBufferSize = 2 << 10

// readers are the read buffers, taken once a response starts to arrive
// (readable) and given back once it is read: a request waiting for its
// answer, or an idle connection, holds none.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// dropReader gives pc's read buffer back, if it has one.
func (pc *plainConn) dropReader() {
	if pc.br != nil {
		pc.br.Reset(nil)
		readers.Put(pc.br)
		pc.br = nil
	}
}

// writers are the request write buffers, held only while a request is
// written.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}

func newPlainTransport(n int, fallback *http.Transport, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *plainTransport {
	return &plainTransport{fallback: fallback, dial: dial, maxConns: n, idleFor: fallback.IdleConnTimeout, hosts: map[string]*hostConns{}}
}

// RoundTrip sends r on a kept-alive connection, or a new one.
func (t *plainTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		return t.fallback.RoundTrip(r)
	}
	if p, err := t.fallback.Proxy(r); err != nil || p != nil {
		return t.fallback.RoundTrip(r)
	}
	ctx, host := r.Context(), hostPort(r)
	pc, err := t.get(ctx, host, false)
	if err != nil {
		closeBody(r)
		return nil, err
	}
	resp, err := t.exchange(ctx, pc, r)
	if !pc.reused || !errors.Is(err, errNoAnswer) || ctx.Err() != nil {
		return resp, err
	}
	// A kept-alive connection the server closed after the liveness peek
	// (its idle timeout, a restart) fails before any answer. Client's
	// retry policy would resend the request anyway, after a backoff and
	// counted as an attempt: resend it at once on a new connection,
	// once. net/http resends too, though for a POST only when nothing of
	// it was written; an LLM request asked twice is the same request.
	again, ok := rewound(r)
	if !ok {
		return resp, err
	}
	if pc, err = t.get(ctx, host, true); err != nil {
		closeBody(again)
		return nil, err
	}
	return t.exchange(ctx, pc, again)
}

// errNoAnswer marks a request that failed before any byte of its answer
// arrived: written in part or whole, but not answered.
var errNoAnswer = errors.New("connection closed before any response")

// rewound is r with its body from the start, when it can be sent again.
func rewound(r *http.Request) (*http.Request, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return r, true
	}
	if r.GetBody == nil {
		return nil, false
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, false
	}
	again := *r
	again.Body = body
	return &again, true
}

// exchange writes r on pc and reads the response's head. The response's
// body gives pc back to the pool once read to its end.
func (t *plainTransport) exchange(ctx context.Context, pc *plainConn, r *http.Request) (*http.Response, error) {
	// Cancelling ctx unblocks the reads and writes at once: the
	// connection, half used, is closed afterwards.
	stop := context.AfterFunc(ctx, func() { pc.c.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		t.discard(pc)
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	w := writers.Get().(*bufio.Writer)
	w.Reset(pc.c)
	err := writeRequest(w, r)
	if err == nil {
		err = w.Flush()
	}
	w.Reset(nil)
	writers.Put(w)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", errNoAnswer, err))
	}
	br, err := pc.readable.take()
	pc.br = br
	if err != nil {
		// The server's close (EOF, a reset) with nothing before it, or
		// the wait cut short.
		return fail(fmt.Errorf("%w: %w", errNoAnswer, err))
	}
	var resp *http.Response
	for {
		resp, err = readResponse(pc.br, r)
		if err != nil {
			return fail(err)
		}
		// 1xx answers (103 Early Hints) come before the real one.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	keep := !resp.Close && !r.Close && resp.StatusCode != http.StatusSwitchingProtocols
	resp.Body = &plainBody{rc: resp.Body, ctx: ctx, t: t, pc: pc, stop: stop, keep: keep}
	return resp, nil
}

// get returns an idle connection to host, or a new one once fewer than
// maxConns are open, waiting for one of the two. fresh skips the idle
// ones (a redial after one failed).
func (t *plainTransport) get(ctx context.Context, host string, fresh bool) (*plainConn, error) {
	t.mu.Lock()
	h := t.hosts[host]
	if h == nil {
		h = &hostConns{}
		t.hosts[host] = h
	}
	for len(h.idle) > 0 && !fresh {
		pc := h.idle[len(h.idle)-1]
		h.idle = h.idle[:len(h.idle)-1]
		// One the server closed while it was idle would fail the
		// request sent on it (net/http's read loop notices the close;
		// here no goroutine waits on an idle connection). Servers close
		// idle connections after seconds (uvicorn 5 s, nginx 75 s), so
		// one idle for less than trustIdle is used without the peek's
		// syscall (a syscall per request at high rates); the rare one
		// closed all the same is redialed at once (RoundTrip).
		idle := time.Since(pc.idleSince)
		if idle < t.idleFor && (idle < trustIdle || alive(pc.c)) {
			t.mu.Unlock()
			return pc, nil
		}
		pc.c.Close()
		h.open--
	}
	if h.open < t.maxConns {
		h.open++
		t.mu.Unlock()
		return t.dialConn(ctx, host, h)
	}
	wait := make(chan *plainConn, 1)
	h.waiting = append(h.waiting, wait)
	t.mu.Unlock()
	select {
	case pc := <-wait:
		if pc == nil { // a slot: a connection was closed
			return t.dialConn(ctx, host, h)
		}
		return pc, nil
	case <-ctx.Done():
		t.mu.Lock()
		i := slices.Index(h.waiting, wait)
		if i >= 0 {
			h.waiting = slices.Delete(h.waiting, i, i+1)
		}
		t.mu.Unlock()
		if i < 0 { // handed something meanwhile: pass it on
			if pc := <-wait; pc != nil {
				t.put(pc)
			} else {
				t.release(h)
			}
		}
		return nil, ctx.Err()
	}
}

// dialConn opens a connection in a slot taken for it.
func (t *plainTransport) dialConn(ctx context.Context, host string, h *hostConns) (*plainConn, error) {
	// The dial runs on a goroutine of its own: its call chain is deep,
	// and the caller's stack, grown to hold it, would stay that size
	// while the request waits for its answer.
	type dialed struct {
		c   net.Conn
		err error
	}
	done := make(chan dialed, 1)
	go func() {
		c, err := t.dial(ctx, "tcp", host)
		done <- dialed{c, err}
	}()
	d := <-done
	c, err := d.c, d.err
	if err != nil {
		t.release(h)
		return nil, err
	}
	return &plainConn{c: c, host: host, readable: newReadable(c)}, nil
}

// put gives a connection whose response was read whole to a waiting
// request, or to the pool.
func (t *plainTransport) put(pc *plainConn) {
	if pc.br.Buffered() > 0 {
		// Bytes past the response: the server broke the protocol.
		t.discard(pc)
		return
	}
	pc.dropReader()
	pc.idleSince = time.Now()
	pc.reused = true
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hosts[pc.host]
	if len(h.waiting) > 0 {
		h.waiting[0] <- pc
		h.waiting = h.waiting[1:]
		return
	}
	h.idle = append(h.idle, pc)
}

// discard closes a connection and frees its slot.
func (t *plainTransport) discard(pc *plainConn) {
	pc.c.Close()
	pc.dropReader()
	t.mu.Lock()
	h := t.hosts[pc.host]
	t.mu.Unlock()
	t.release(h)
}

// release frees a slot: a waiting request may open a connection in it.
func (t *plainTransport) release(h *hostConns) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(h.waiting) > 0 {
		h.waiting[0] <- nil
		h.waiting = h.waiting[1:]
		return
	}
	h.open--
}

// CloseIdleConnections closes the idle connections, and the fallback's.
func (t *plainTransport) CloseIdleConnections() {
	t.mu.Lock()
	for _, h := range t.hosts {
		for _, pc := range h.idle {
			pc.c.Close()
			h.open--
		}
		h.idle = nil
	}
	t.mu.Unlock()
	t.fallback.CloseIdleConnections()
}

// plainBody is a response body; read to its end, it gives the connection
// back for the next request, closed before, it closes the connection (the
// rest of the body would be in the next response's way).
type plainBody struct {
	rc   io.ReadCloser
	ctx  context.Context
	t    *plainTransport
	pc   *plainConn
	stop func() bool
	keep bool
	done bool
	eof  bool
}

func (b *plainBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("read on a closed response body")
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil && b.ctx.Err() != nil:
		// The deadline in the past that cancelling set, said as the
		// cancellation it is.
		err = fmt.Errorf("response body: %w", b.ctx.Err())
	}
	return n, err
}

func (b *plainBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if !b.eof {
		// Not read to its end, the connection goes: close it first, or
		// rc.Close (net/http's, which drains a keep-alive body) would wait
		// for the rest of the body for as long as the server takes.
		b.pc.c.Close()
	}
	b.rc.Close()
	// stop reports false when the context was cancelled and the
	// connection's deadline is in the past: it cannot be used again.
	if b.stop() && b.eof && b.keep {
		b.t.put(b.pc)
	} else {
		b.t.discard(b.pc)
	}
	return nil
}

// hostPort is r's host with the port, 80 when the URL has none.
func hostPort(r *http.Request) string {
	if r.URL.Port() != "" {
		return r.URL.Host
	}
	return net.JoinHostPort(r.URL.Hostname(), "80")
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}
