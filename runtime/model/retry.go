package model

import (
	"context"
	"errors"
	"fmt"
	"github.com/nel-eval/nel/runtime/retryafter"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/nel-eval/nel/runtime/failure"
)

var (
	errEmptyChoices = errors.New("response has no choices (the server may have run out of KV cache)")
	errEmptyMessage = errors.New("response message is empty: no content and no reasoning")
)

// classify turns the error of one request into a failure, and says whether
// to retry and how long the server asked us to wait (0: not said).
func (c *Client) classify(ctx context.Context, err error, w *wire) (f *failure.Error, retry bool, after time.Duration) {
	fail := func(cat failure.Category, status int, err error) *failure.Error {
		return &failure.Error{Category: cat, Status: status, Err: c.redact(fmt.Errorf("%s: %w", c.cfg.BaseURL, err))}
	}
	switch {
	case errors.Is(err, errEmptyChoices):
		return fail(failure.EmptyResponse, w.status, err), true, 0
	case errors.Is(err, errEmptyMessage):
		return fail(failure.EmptyResponse, w.status, err), false, 0
	case ctx.Err() != nil:
		return c.ctxFailure(ctx, &failure.Error{Err: err}, 0), false, 0
	}

	status, msg := 0, ""
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status, msg = apiErr.HTTPStatusCode, apiErr.Message
		if code, ok := apiErr.Code.(string); ok {
			// OpenAI's "context_length_exceeded" is in the code, whatever
			// the message says.
			msg += " " + code
		}
	case errors.As(err, &reqErr):
		status, msg = reqErr.HTTPStatusCode, string(reqErr.Body)
	}
	if status != 0 {
		switch {
		case status == http.StatusTooManyRequests:
			return fail(failure.RateLimit, status, err), true, retryAfter(w.header)
		case status == http.StatusServiceUnavailable:
			return fail(failure.ServerError, status, err), true, retryAfter(w.header)
		case status == 500 || status == 502 || status == 504:
			return fail(failure.ServerError, status, err), true, 0
		case status >= 500:
			return fail(failure.ServerError, status, err), false, 0
		case status >= 400 && isContextLength(msg):
			return fail(failure.ContextLength, status, err), false, 0
		default:
			return fail(failure.APIError, status, err), false, 0
		}
	}

	if w.got {
		// The whole body arrived with a success status and did not decode.
		return fail(failure.APIError, w.status, fmt.Errorf("malformed response: %w", err)), true, 0
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		// The per-request timeout passed; the sample's budget has not.
		return fail(failure.Timeout, 0, err), true, 0
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fail(failure.ServerError, 0, err), true, 0
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return fail(failure.ServerError, 0, err), true, 0
	}
	return fail(failure.APIError, 0, err), false, 0
}

// isContextLength says whether an error message is about a prompt that does
// not fit the model's context (vLLM, SGLang, TRT-LLM and OpenAI phrasings).
func isContextLength(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{
		"context length", "context_length", "maximum context", "context window",
		"too many tokens", "prompt is too long", "maximum model length", "max_model_len",
	} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// retryAfter reads a Retry-After header; a wait over a day is taken as
// nonsense and ignored.
func retryAfter(h http.Header) time.Duration {
	d, ok := retryafter.Parse(h.Get("Retry-After"))
	if !ok || d > 24*time.Hour {
		return 0
	}
	return d
}

// backoff is the wait before retry n (n ≥ 1): min(base·2^(n-1), max),
// scaled by a uniform jitter in [0.5, 1.5) so that samples that failed
// together do not retry together.
func backoff(base, max time.Duration, n int) time.Duration {
	d := max
	if n-1 < 40 {
		if e := base << (n - 1); e > 0 && e < max {
			d = e
		}
	}
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// redact removes the API key from err's text (Redact). The key should
// never be in an error, but a server may echo a request header back.
func (c *Client) redact(err error) error {
	text := err.Error()
	red := Redact(text, c.cfg.APIKey)
	if red == text {
		return err
	}
	// Drop the chain: its errors would still print the key.
	return errors.New(red)
}
