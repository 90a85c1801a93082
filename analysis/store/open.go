package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/nel-eval/nel/runtime/retryafter"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

// Store is where entries live: a local directory or an http(s) server.
// Paths are store-relative and slash-separated.
type Store interface {
	// Location names the store for messages (a URL never carries
	// credentials here).
	Location() string
	// Get opens a file; a missing file is an error that wraps ErrNotFound.
	Get(ctx context.Context, path string) (io.ReadCloser, error)
	// Put writes size bytes from r to path, replacing what is there.
	Put(ctx context.Context, path string, r io.Reader, size int64) error
}

// Options configures Open.
type Options struct {
	// HTTP is the client for http(s) stores; nil means one with connect,
	// TLS and response-header timeouts (no overall timeout, so large
	// Parquet files can take their time; the context bounds a call).
	HTTP *http.Client
	// TokenEnv names an environment variable whose value, when set, is sent as
	// "Authorization: Bearer <value>" to http(s) stores (never logged, never in errors).
	TokenEnv string
	// Logger receives debug lines per request and warnings on retries;
	// nil discards them.
	Logger *slog.Logger
}

// Open opens the store at location: a directory path, a file:// URL, or
// an http:// or https:// URL (the store's root).
func Open(location string, opts Options) (Store, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if location == "" {
		return nil, errors.New("open store: empty location; give a directory or an http(s):// URL")
	}
	scheme, _, hasScheme := strings.Cut(location, "://")
	if !hasScheme {
		return openDir(location, log)
	}
	u, err := url.Parse(location)
	if err != nil {
		// url.Error would print the location, which may carry a password.
		return nil, fmt.Errorf("open store: %s:// location is not a valid URL", scheme)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("open store %s: file:// URLs name a local path (file:///dir)", location)
		}
		return openDir(filepath.FromSlash(u.Path), log)
	case "http", "https":
		return openHTTP(u, opts, log)
	}
	return nil, fmt.Errorf("open store: scheme %q not supported; use a directory, file://, http:// or https://", u.Scheme)
}

// errNoDir marks a directory store whose directory does not exist.
var errNoDir = errors.New("the directory does not exist")

// dirStore is a store in a local directory.
type dirStore struct {
	root string // absolute
	log  *slog.Logger
}

func openDir(dir string, log *slog.Logger) (*dirStore, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("open store %s: not a directory", abs)
	}
	return &dirStore{root: abs, log: log}, nil
}

func (s *dirStore) Location() string { return s.root }
func (s *dirStore) String() string   { return s.root }

func (s *dirStore) local(p string) (string, error) {
	if err := checkRel(p); err != nil {
		return "", fmt.Errorf("store %s: %w", s.root, err)
	}
	return filepath.Join(s.root, filepath.FromSlash(p)), nil
}

func (s *dirStore) Get(ctx context.Context, p string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := s.local(p)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err == nil {
		if fi, serr := f.Stat(); serr == nil && fi.IsDir() {
			f.Close()
			return nil, fmt.Errorf("store %s: %s: %w (a directory)", s.root, p, ErrNotFound)
		}
		return f, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		if _, rerr := os.Stat(s.root); errors.Is(rerr, fs.ErrNotExist) {
			// Not found, so that publishing creates the store; noDir
			// lets fetch say why.
			return nil, fmt.Errorf("store %s: %w", s.root, errors.Join(ErrNotFound, errNoDir))
		}
		return nil, fmt.Errorf("store %s: %s: %w", s.root, p, ErrNotFound)
	}
	return nil, fmt.Errorf("store %s: %w", s.root, err)
}

// Put writes atomically: a temporary name in the same directory, fsync,
// rename, so a reader never sees half a file.
func (s *dirStore) Put(ctx context.Context, p string, r io.Reader, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := s.local(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("store %s: %w", s.root, err)
	}
	s.log.Debug("store put", "store", s.root, "path", p, "size", size)
	return atomicfile.Create(name, func(f *os.File) error {
		n, err := io.Copy(f, r)
		if err != nil {
			return err
		}
		if size >= 0 && n != size {
			return fmt.Errorf("wrote %d bytes, expected %d (did the source change?)", n, size)
		}
		return nil
	}, nil)
}

// httpStore is a store behind a static file server; Put uses HTTP PUT.
type httpStore struct {
	base   *url.URL // root, path ending in "/", no user info
	loc    string   // base as printed
	user   *url.Userinfo
	client *http.Client
	// token is the bearer token; it must never reach an error or a log.
	token    string
	tokenEnv string
	log      *slog.Logger
	// backoff is the wait before the first retry; it doubles after.
	backoff time.Duration
}

func openHTTP(u *url.URL, opts Options, log *slog.Logger) (*httpStore, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("open store: %s:// URL has no host", u.Scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("open store: the store URL must not have a query or fragment; pass credentials with a token environment variable")
	}
	b := *u
	b.User = nil
	if !strings.HasSuffix(b.Path, "/") {
		b.Path += "/"
		b.RawPath = ""
	}
	c := opts.HTTP
	if c == nil {
		c = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   4,
			ForceAttemptHTTP2:     true,
		}}
	}
	s := &httpStore{
		base:     &b,
		loc:      strings.TrimSuffix(b.String(), "/"),
		user:     u.User,
		client:   c,
		tokenEnv: opts.TokenEnv,
		log:      log,
		backoff:  250 * time.Millisecond,
	}
	if opts.TokenEnv != "" {
		s.token = os.Getenv(opts.TokenEnv)
		if s.token == "" {
			log.Debug("store token variable not set; sending no Authorization", "variable", opts.TokenEnv)
		}
	}
	return s, nil
}

func (s *httpStore) Location() string { return s.loc }
func (s *httpStore) String() string   { return s.loc }

// GoString keeps %#v from printing the token.
func (s *httpStore) GoString() string { return "store(" + s.loc + ")" }

func (s *httpStore) url(p string) (string, error) {
	if err := checkRel(p); err != nil {
		return "", fmt.Errorf("store %s: %w", s.loc, err)
	}
	return s.base.JoinPath(strings.Split(p, "/")...).String(), nil
}

// retries is how many times a request is repeated after a 429, a 5xx or a
// connection reset.
const retries = 2

func (s *httpStore) Get(ctx context.Context, p string) (io.ReadCloser, error) {
	u, err := s.url(p)
	if err != nil {
		return nil, err
	}
	resp, err := s.do(ctx, http.MethodGet, p, u, nil, -1)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return resp.Body, nil
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		drain(resp)
		return nil, fmt.Errorf("store %s: %s: %w", s.loc, p, ErrNotFound)
	}
	drain(resp)
	return nil, fmt.Errorf("store %s: GET %s: %s%s", s.loc, p, resp.Status, s.authHint(resp.StatusCode))
}

func (s *httpStore) Put(ctx context.Context, p string, r io.Reader, size int64) error {
	u, err := s.url(p)
	if err != nil {
		return err
	}
	resp, err := s.do(ctx, http.MethodPut, p, u, r, size)
	if err != nil {
		return err
	}
	drain(resp)
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusMethodNotAllowed || code == http.StatusNotImplemented || code == http.StatusForbidden:
		return fmt.Errorf("store %s: PUT %s: %s: %w; run `nel publish --print` and upload the listed files with the tool your server takes%s",
			s.loc, p, resp.Status, ErrNoUploads, s.authHint(code))
	default:
		return fmt.Errorf("store %s: PUT %s: %s%s", s.loc, p, resp.Status, s.authHint(code))
	}
}

// authHint tells a user refused with 401/403 which variable carries the
// token (its name, never its value).
func (s *httpStore) authHint(code int) string {
	if code != http.StatusUnauthorized && code != http.StatusForbidden {
		return ""
	}
	switch {
	case s.tokenEnv == "":
		return " (if the store needs a token, pass it through an environment variable)"
	case s.token == "":
		return fmt.Sprintf(" ($%s is not set; set it to a token the store accepts)", s.tokenEnv)
	}
	return fmt.Sprintf(" (check the token in $%s)", s.tokenEnv)
}

// do sends one request, retrying 429, 5xx and connection resets with
// backoff. A body is retried only when it can be rewound.
func (s *httpStore) do(ctx context.Context, method, p, u string, body io.Reader, size int64) (*http.Response, error) {
	// A body is retried only through io.ReaderAt: each attempt reads its
	// own section, so a transport still reading a failed attempt's body
	// cannot race with the next one.
	var start int64
	ra, rewindable := body.(io.ReaderAt)
	if body == nil {
		rewindable = true
	} else if sk, ok := body.(io.Seeker); rewindable && ok && size >= 0 {
		var err error
		if start, err = sk.Seek(0, io.SeekCurrent); err != nil {
			rewindable = false
		}
	} else {
		rewindable = false
	}
	newBody := func() io.Reader {
		if rewindable {
			return io.NewSectionReader(ra, start, size)
		}
		return body
	}
	wait := s.backoff
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, fmt.Errorf("store %s: %s %s: %w", s.loc, method, p, err)
		}
		if body != nil {
			req.Body = io.NopCloser(newBody())
			req.ContentLength = size
			if rewindable {
				req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(newBody()), nil }
			}
			if ct := contentType(p); ct != "" {
				req.Header.Set("Content-Type", ct)
			}
		}
		if s.user != nil {
			pw, _ := s.user.Password()
			req.SetBasicAuth(s.user.Username(), pw)
		}
		if s.token != "" {
			req.Header.Set("Authorization", "Bearer "+s.token)
		}
		s.log.Debug("store request", "method", method, "store", s.loc, "path", p, "attempt", attempt+1)
		resp, err := s.client.Do(req)
		var retryAfter time.Duration
		switch {
		case err != nil:
			if cerr := ctx.Err(); cerr != nil {
				return nil, fmt.Errorf("store %s: %s %s: %w", s.loc, method, p, cerr)
			}
			err = unwrapURL(err)
			if !isReset(err) || attempt == retries || !rewindable {
				if isUnreachable(err) {
					return nil, fmt.Errorf("store %s unreachable: %s %s: %w", s.loc, method, p, err)
				}
				return nil, fmt.Errorf("store %s: %s %s: %w", s.loc, method, p, err)
			}
			s.log.Warn("store request failed; retrying", "method", method, "store", s.loc, "path", p, "err", err)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
			if attempt == retries || !rewindable {
				return resp, nil
			}
			retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
			drain(resp)
			s.log.Warn("store busy; retrying", "method", method, "store", s.loc, "path", p, "status", resp.Status)
		default:
			return resp, nil
		}
		d := max(wait, retryAfter)
		wait *= 2
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("store %s: %s %s: %w", s.loc, method, p, ctx.Err())
		case <-time.After(d):
		}
	}
}

// unwrapURL drops *url.Error's "Get "http://…":" prefix: the messages
// above name the store and path themselves.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

func isUnreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return true
	case errors.As(err, &dns):
		return true
	case errors.As(err, &op) && op.Op == "dial":
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	}
	return isReset(err)
}

// parseRetryAfter reads a Retry-After, capped so a server cannot park a
// publish for long.
func parseRetryAfter(v string) time.Duration {
	d, _ := retryafter.Parse(v)
	return min(d, 10*time.Second)
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// contentType helps servers that serve what they were given; optional.
func contentType(p string) string {
	switch path.Ext(p) {
	case ".json":
		return "application/json"
	case ".md":
		return "text/markdown; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".cue", ".yaml", ".yml", ".jsonl", ".txt":
		return "text/plain; charset=utf-8"
	case ".parquet":
		return "application/vnd.apache.parquet"
	}
	return "application/octet-stream"
}
