package intercept

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
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

func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	raw, err := readBody(r.Body)
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	req := &Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw,
		Body: decodeBody(raw), Sample: SampleOf(r.Context())}
	u := *r.URL
	h := t.Chain.Handler(func(ctx context.Context, req *Request) (*Response, error) {
		u.Path = req.Path
		return send(ctx, t.Base, u.String(), req)
	})
	resp, err := h(r.Context(), req)
	if err != nil {
		return nil, err
	}
	return httpResponse(resp, r), nil
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
// target.
func send(ctx context.Context, base http.RoundTripper, target string, req *Request) (*Response, error) {
	body := req.Raw
	if req.Body != nil {
		var err error
		if body, err = encodeJSON(req.Body); err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
	}
	out, err := http.NewRequestWithContext(ctx, req.Method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = req.Header.Clone()
	out.Header.Del("Content-Length")
	out.ContentLength = int64(len(body))
	resp, err := base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
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
