package intercept

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// maxBody bounds a request or response body the chain reads whole.
const maxBody = 64 << 20

// CachedHeader is set to "true" on a response a link answered from its
// store (a cache hit), so the caller can tell it from a model call.
const CachedHeader = "X-Nel-Cached"

// Transport runs the chain under an HTTP client (nel's model client): each
// request goes through the links, and the last step sends it with Base.
type Transport struct {
	Chain *Chain
	Base  http.RoundTripper

	once sync.Once
	h    Handler // the chain over send, built once: not a closure per link per request
}

// CloseIdleConnections passes on to Base.
func (t *Transport) CloseIdleConnections() {
	if b, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		b.CloseIdleConnections()
	}
}

// Close closes the chain (its cache).
func (t *Transport) Close() error { return t.Chain.Close() }

// Middleware returns a function that puts the chain over a transport, for
// model.Config.Middleware.
func (c *Chain) Middleware() func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper { return &Transport{Chain: c, Base: base} }
}

// RoundTrip runs r through the chain. Its frame, and the frames of the
// links and of send, are on the goroutine's stack for as long as the
// model takes to answer: what they build (the request as the chain sees
// it, the request sent) is built in helpers that are not inlined, so that
// their locals are not part of those frames. A goroutine's stack is
// copied to one twice as large when it outgrows it and shrunk only while
// it uses less than a quarter of it: 2 KB more of parked frames made each
// request in flight hold an 8 KB stack where one straight to the model
// held 4 KB (TestInflightRetention).
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	req, err := newRequest(r)
	if err != nil {
		return nil, err
	}
	t.once.Do(func() {
		t.h = t.Chain.Handler(func(ctx context.Context, req *Request) (*Response, error) {
			return send(ctx, t.Base, "", req)
		})
	})
	resp, err := t.h(r.Context(), req)
	if err != nil {
		return nil, err
	}
	return httpResponse(resp, r), nil
}

// newRequest is r as the chain sees it.
//
//go:noinline
func newRequest(r *http.Request) (*Request, error) {
	raw, err := readBody(r.Body)
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	req := &Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: decodeBody(raw),
		Sample: SampleOf(r.Context()), url: r.URL, readLen: len(raw)}
	if req.Body == nil {
		// Only a body that is not a JSON object is sent as read; a decoded
		// one is encoded again after the links: no copy of it is kept
		// while the request waits on the model.
		req.Raw = raw
	}
	req.Header.Del("Content-Length") // send sets the length of what it sends
	return req, nil
}

func readBody(b io.ReadCloser) ([]byte, error) {
	if b == nil || b == http.NoBody {
		return nil, nil
	}
	defer b.Close()
	raw, err := io.ReadAll(io.LimitReader(b, maxBody+1))
	if err == nil && len(raw) > maxBody {
		err = fmt.Errorf("body larger than %d bytes", maxBody)
	}
	return raw, err
}

// send is the chain's last step: the request, as the links left it, to
// target ("": the URL of Transport's request with the request's path).
func send(ctx context.Context, base http.RoundTripper, target string, req *Request) (*Response, error) {
	out, err := outRequest(ctx, target, req)
	if err != nil {
		return nil, err
	}
	resp, err := base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	return readResponse(resp)
}

// outRequest is the HTTP request send sends for req.
//
//go:noinline
func outRequest(ctx context.Context, target string, req *Request) (*http.Request, error) {
	body := req.Raw
	if req.Body != nil {
		// Sized for the body as read and a link's additions: the buffer
		// is held while the request waits on the model, and one grown by
		// doubling is up to twice what it holds.
		buf := make([]byte, 0, req.readLen+req.readLen/8+64)
		var err error
		if body, err = appendJSON(buf, req.Body); err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
	}
	if target == "" {
		u := *req.url
		u.Path = req.Path
		target = u.String()
	}
	out, err := http.NewRequestWithContext(ctx, req.Method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = req.Header // a RoundTripper does not change its request's
	if out.Header.Get("Content-Length") != "" {
		out.Header = out.Header.Clone()
		out.Header.Del("Content-Length")
	}
	out.ContentLength = int64(len(body))
	return out, nil
}

// readResponse is resp as the chain sees it.
//
//go:noinline
func readResponse(resp *http.Response) (*Response, error) {
	b, err := readBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func httpResponse(resp *Response, r *http.Request) *http.Response {
	h := resp.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Content-Encoding") // the body is decoded; its length is below
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	if resp.Cached {
		h.Set(CachedHeader, "true")
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", resp.Status, http.StatusText(resp.Status)), StatusCode: resp.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Request: r,
		Body: io.NopCloser(bytes.NewReader(resp.Body)), ContentLength: int64(len(resp.Body)),
	}
}

// joinURL is base's URL with path appended to its path.
func joinURL(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = u.Path + path
	return u.String(), nil
}
