package openclaw

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nel-eval/nel/runtime/model"
)

// Front stands between OpenClaw and nel-run's model proxy on the host's
// loopback and keeps each session's last chat request: OpenClaw sends the
// whole conversation with every request (its tool calls and their
// results), so the last one is the run's transcript whatever OpenClaw's
// own session store looks like (a JSONL file in older releases, SQLite
// since). Responses stream through untouched.
type Front struct {
	URL string // http://127.0.0.1:PORT/v1, sessions under /s/SESSION/v1

	// simulated: an answer came from nel's simulator (its header), so
	// the rows say so as the loop's do.
	simulated atomic.Bool

	mu   sync.Mutex
	last map[string][]byte
	srv  *http.Server
	done chan struct{}
}

// maxRequestBytes bounds a request body the front keeps; a larger one is
// refused (413), as no model takes a conversation that size.
const maxRequestBytes = 64 << 20

// StartFront serves a front to upstream (the proxy's base URL, ending in
// /v1) on a free loopback port until Stop.
func StartFront(ctx context.Context, upstream string) (*Front, error) {
	u, err := url.Parse(strings.TrimSuffix(upstream, "/v1"))
	if err != nil {
		return nil, fmt.Errorf("openclaw front: upstream %q: %w", upstream, err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("openclaw front: %w", err)
	}
	f := &Front{URL: "http://" + ln.Addr().String() + "/v1", last: map[string][]byte{}, done: make(chan struct{})}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.URL.Path = r.In.URL.Path // the proxy reads /s/SESSION/v1/… itself
		},
		FlushInterval: -1, // stream each event as it comes
		ModifyResponse: func(resp *http.Response) error {
			if resp.Header.Get(model.SimulatedHeader) == "true" {
				f.simulated.Store(true)
			}
			return nil
		},
	}
	f.srv = &http.Server{Handler: f.handler(rp), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(f.done)
		// Serve ends with ErrServerClosed at Stop; a listener that fails
		// before leaves OpenClaw's requests failing, which its result says.
		_ = f.srv.Serve(ln)
	}()
	return f, nil
}

func (f *Front) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
			if err != nil {
				http.Error(w, "request body: "+err.Error(), http.StatusRequestEntityTooLarge)
				return
			}
			f.keep(sessionOf(r.URL.Path), body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

// sessionOf is the SESSION of /s/SESSION/v1/…, "" for another path.
func sessionOf(p string) string {
	rest, ok := strings.CutPrefix(p, "/s/")
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(rest, "/")
	return s
}

func (f *Front) keep(session string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last[session] = body
}

// Take returns session's last chat request body and forgets it.
func (f *Front) Take(session string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.last[session]
	delete(f.last, session)
	return b
}

// Simulated says whether any answer came from nel's simulator.
func (f *Front) Simulated() bool { return f.simulated.Load() }

// Stop closes the front and waits for it.
func (f *Front) Stop() {
	_ = f.srv.Close()
	<-f.done
}
