// Package serve holds the compute-node side of model serving: starting
// managed servers so that they do not outlive the run (StartTied), recording
// them in the run folder so that a later run stops what a killed one left
// behind, and waiting for a freshly started inference server (vLLM,
// SGLang, ...) to become ready.
//
// It is used by nel-run, which must stay a small static binary, so it depends
// on the standard library and nel's runtime only.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Defaults used by WaitReady for zero-valued WaitOptions fields.
const (
	DefaultTimeout          = 600 * time.Second
	DefaultInterval         = 2 * time.Second
	DefaultProgressInterval = 30 * time.Second
	DefaultRequestTimeout   = 10 * time.Second
	DefaultLogLines         = 50
)

// ErrExited is wrapped by the error WaitReady returns when the server
// process died before it became ready.
var ErrExited = errors.New("server exited during startup")

// ErrTimeout is wrapped by the error WaitReady returns when the server did
// not become ready within WaitOptions.Timeout.
var ErrTimeout = errors.New("server not ready before timeout")

// WaitOptions configures WaitReady. Only URL is required.
type WaitOptions struct {
	// URL is polled with HTTP GET until it answers 200 OK, e.g.
	// http://localhost:8000/health.
	URL string
	// Or are URLs that, answering 200 OK, make the server ready too: a
	// Gym server answers /health (NeMo's evaluator servers, nel serve) or
	// only FastAPI's /openapi.json (Gym's own), and NeMo takes either.
	Or []string
	// Name identifies the server in messages. Defaults to the URL's host.
	Name string
	// PID, when non-zero, is the server's process. If it disappears while
	// waiting, WaitReady fails at once instead of waiting for the timeout.
	PID int
	// OtherPIDs are processes the server cannot answer without (dynamo's
	// workers, its NATS and etcd): the wait fails at once if one exits, as
	// for PID.
	OtherPIDs []int
	// Ready, when set, judges a 200 answer's body: a server whose health
	// URL answers before it can serve (dynamo's frontend, before its
	// workers register) is ready only when Ready says so; why is what the
	// last poll saw otherwise.
	Ready func(body []byte) (ok bool, why string)
	// APIKey, when set, is sent as a bearer token with every poll: a
	// server started with a key (vLLM's --api-key) refuses /v1 paths
	// without it, so a health_path there could never answer 200.
	APIKey string
	// LogFile, when set, is the server's log; its last LogLines lines are
	// included in failure messages.
	LogFile string
	// LogLines is how many log lines failure messages include (default 50).
	LogLines int
	// Timeout bounds the whole wait (default 600s).
	Timeout time.Duration
	// Interval is the pause between polls (default 2s).
	Interval time.Duration
	// RequestTimeout bounds a single GET (default 10s).
	RequestTimeout time.Duration
	// ProgressInterval is how often Progress is called while waiting
	// (default 30s).
	ProgressInterval time.Duration
	// Progress, when set, receives a line such as
	// "waiting for vllm at http://localhost:8000/health (30s, last: connection refused)"
	// every ProgressInterval.
	Progress func(msg string)
	// Client performs the requests. The default client does not use proxies
	// from the environment: health endpoints are cluster-internal.
	Client *http.Client
	// Logger receives debug records for every poll. Defaults to a logger
	// that discards everything.
	Logger *slog.Logger
}

// WaitError is the error WaitReady returns when the server exited or timed
// out. It unwraps to ErrExited or ErrTimeout.
type WaitError struct {
	Kind    error // ErrExited or ErrTimeout
	Name    string
	URL     string
	PID     int
	Elapsed time.Duration
	// Last describes the last poll result, e.g. "connection refused" or
	// "HTTP 503 Service Unavailable".
	Last    string
	LogFile string
	LogTail string
	// LogErr is set when LogFile could not be read.
	LogErr error
}

func (e *WaitError) Unwrap() error { return e.Kind }

func (e *WaitError) Error() string {
	var b strings.Builder
	elapsed := e.Elapsed.Round(time.Second)
	switch {
	case errors.Is(e.Kind, ErrExited):
		fmt.Fprintf(&b, "server %s exited during startup (pid %d, after %s", e.Name, e.PID, elapsed)
	default:
		fmt.Fprintf(&b, "server %s at %s not ready after %s (timeout", e.Name, e.URL, elapsed)
	}
	if e.Last != "" {
		fmt.Fprintf(&b, "; last: %s", e.Last)
	}
	b.WriteString(")")
	switch {
	case e.LogFile == "":
	case e.LogErr != nil:
		fmt.Fprintf(&b, "\n(could not read log: %v)", e.LogErr)
	case e.LogTail == "":
		fmt.Fprintf(&b, "\n(log %s is empty)", e.LogFile)
	default:
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", e.LogFile, e.LogTail)
		if !strings.HasSuffix(e.LogTail, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("--- end of log ---")
	}
	return b.String()
}

// settle is how long WaitReady watches a server's process after its first
// good answer.
const settle = 200 * time.Millisecond

// WaitReady polls opts.URL until it answers 200 OK. Connection errors
// (vLLM refuses connections while loading) and non-200 answers (SGLang
// answers 503 while starting) mean "not yet".
//
// It returns nil once the server is ready, a *WaitError if the server
// process (opts.PID) died or opts.Timeout passed, and ctx's error, wrapped,
// if ctx is done first.
func WaitReady(ctx context.Context, opts WaitOptions) error {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return fmt.Errorf("invalid url %q: %w", opts.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("invalid url %q: scheme must be http or https", opts.URL)
	}
	if u.Host == "" {
		return fmt.Errorf("invalid url %q: no host", opts.URL)
	}
	if opts.Name == "" {
		opts.Name = u.Host
	}
	for _, pid := range append([]int{opts.PID}, opts.OtherPIDs...) {
		if pid < 0 {
			return fmt.Errorf("invalid pid %d", pid)
		}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.LogLines <= 0 {
		opts.LogLines = DefaultLogLines
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{
			Proxy:             nil,
			DisableKeepAlives: true,
		}}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	start := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout, ErrTimeout)
	defer cancel()

	fail := func(kind error, last string) error {
		e := &WaitError{
			Kind:    kind,
			Name:    opts.Name,
			URL:     opts.URL,
			PID:     firstDead(opts),
			Elapsed: time.Since(start),
			Last:    last,
			LogFile: opts.LogFile,
		}
		if opts.LogFile != "" {
			e.LogTail, e.LogErr = TailFile(opts.LogFile, opts.LogLines)
		}
		return e
	}

	nextProgress := start.Add(opts.ProgressInterval)
	last := ""
	for attempt := 1; ; attempt++ {
		status, ok := pollAny(ctx, client, opts)
		if ok && opts.PID != 0 {
			// A server that cannot bind its port exits within moments, while
			// whatever already holds the port answers the poll: look again.
			time.Sleep(settle)
			if firstDead(opts) != 0 {
				return fail(ErrExited, status+", but from another process: the server exited (is its port taken?)")
			}
		}
		if ok {
			logger.Info("server ready", "name", opts.Name, "url", opts.URL,
				"elapsed", time.Since(start).Round(time.Millisecond), "polls", attempt)
			return nil
		}
		// Keep the last meaningful result, not the error of a request that
		// our own deadline or cancellation cut short.
		if ctx.Err() == nil || last == "" {
			last = status
		}
		logger.Debug("server not ready", "name", opts.Name, "url", opts.URL, "poll", attempt, "status", status)

		if firstDead(opts) != 0 {
			return fail(ErrExited, last)
		}
		if ctx.Err() != nil {
			return done(ctx, opts, start, last, fail)
		}
		if now := time.Now(); opts.Progress != nil && !now.Before(nextProgress) {
			opts.Progress(fmt.Sprintf("waiting for %s at %s (%s, last: %s)",
				opts.Name, opts.URL, now.Sub(start).Round(time.Second), last))
			for !now.Before(nextProgress) {
				nextProgress = nextProgress.Add(opts.ProgressInterval)
			}
		}

		timer := time.NewTimer(opts.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			// One last look at the process: a crash is a better
			// explanation than a timeout.
			if firstDead(opts) != 0 {
				return fail(ErrExited, last)
			}
			return done(ctx, opts, start, last, fail)
		case <-timer.C:
		}
	}
}

func done(ctx context.Context, opts WaitOptions, start time.Time, last string, fail func(error, string) error) error {
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return fail(ErrTimeout, last)
	}
	return fmt.Errorf("waiting for %s at %s: stopped after %s: %w",
		opts.Name, opts.URL, time.Since(start).Round(time.Second), context.Cause(ctx))
}

// firstDead is the first of opts' processes that no longer runs, or 0.
func firstDead(opts WaitOptions) int {
	for _, pid := range append([]int{opts.PID}, opts.OtherPIDs...) {
		if pid != 0 && !processAlive(pid) {
			return pid
		}
	}
	return 0
}

// pollAny polls opts.URL, then each of opts.Or until one answers; the
// status is opts.URL's.
func pollAny(ctx context.Context, client *http.Client, opts WaitOptions) (status string, ok bool) {
	status, ok = poll(ctx, client, opts)
	for _, alt := range opts.Or {
		if ok {
			break
		}
		o := opts
		o.URL = alt
		_, ok = poll(ctx, client, o)
	}
	return status, ok
}

// poll sends one GET to opts.URL and reports whether it answered 200
// (with a body opts.Ready accepts, when it is set), and otherwise a short
// description of what happened.
func poll(ctx context.Context, client *http.Client, opts WaitOptions) (status string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opts.URL, nil)
	if err != nil {
		return err.Error(), false
	}
	if opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+opts.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return describeError(err), false
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if opts.Ready != nil {
			if ok, why := opts.Ready(body); !ok {
				return why, false
			}
		}
		return resp.Status, true
	}
	return "HTTP " + resp.Status, false
}

func describeError(err error) string {
	var netErr net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "request timed out"
	case errors.As(err, &dnsErr):
		return "dns: " + dnsErr.Error()
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err.Error()
	}
	return err.Error()
}

// processAlive reports whether pid still names a running process. A zombie
// (exited but not yet reaped by its parent) counts as dead.
func processAlive(pid int) bool {
	if !pidExists(pid) {
		return false
	}
	return !isZombie(pid)
}

// isZombie reports whether /proc says pid is a zombie. Where /proc is not
// available it reports false.
func isZombie(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.zombie
}
