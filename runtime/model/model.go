// Package model is nel-run's client for OpenAI-compatible model endpoints
// (vLLM, SGLang, TRT-LLM, hosted APIs).
//
// It is built on github.com/sashabaranov/go-openai (chat completions without
// tools, the hot path, are written and read by fastchat.go instead, in the
// same bytes; plain http:// endpoints go through conn.go's transport), with
// two additions that evaluation needs and go-openai does not give:
//
//   - Exact generation parameters on the wire. go-openai's request structs
//     tag temperature, top_p and the penalties `omitempty` and store them as
//     float32, so temperature 0 is dropped and 0.7 becomes 0.699999988; it
//     has no top_k. nel therefore leaves every generation field out of the
//     go-openai request and lets an http.RoundTripper (see wire.go) splice
//     them, rendered from the plan's float64/int64 values, into the JSON
//     body go-openai built. The same hook merges extra_body at the top
//     level and keeps the response's status, headers and body, which
//     go-openai drops on errors (Retry-After) or does not decode
//     ("reasoning").
//   - Retries inside the sample's time budget (the caller's ctx), with
//     exponential backoff and jitter, honoring Retry-After, and a failure
//     category (runtime/failure) on every error.
package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
)

// Protocols.
const (
	ChatCompletions = "chat_completions"
	Completions     = "completions"
	Responses       = "responses"
)

// Defaults.
const (
	DefaultRetryBase     = time.Second
	DefaultRetryMax      = 60 * time.Second
	DefaultMaxConcurrent = 8
	// noDeadlineRetries bounds retries when the ctx has no deadline, so a
	// dead endpoint cannot hang a caller that forgot to set a budget.
	noDeadlineRetries = 10
)

// SimulatedFingerprint starts the system_fingerprint nel's simulator
// (runtime/sim) answers with ("nel-sim-<config hash>"); SimulatedHeader is
// the response header it sets to "true".
const (
	SimulatedFingerprint = "nel-sim-"
	SimulatedHeader      = "X-Nel-Simulated"
)

// Message is one chat message. ToolCalls (an assistant's) and ToolCallID
// (a "tool" message's: the call it answers) carry a tool-using
// conversation; both are left out of the wire when empty.
type Message struct {
	Role, Content string
	ToolCalls     []ToolCall
	ToolCallID    string
}

// ToolCall is one function call of an assistant message. Arguments is the
// JSON text as the model wrote it, never re-encoded: a malformed one is
// the model's to be told about, and an echo of the conversation must say
// what the model said.
type ToolCall struct{ ID, Name, Arguments string }

// Tool is a function tool offered to the model (chat completions'
// "tools"). Parameters is its JSON Schema; empty means an object with no
// properties.
type Tool struct {
	Name, Description string
	Parameters        json.RawMessage
}

// Config configures a Client.
type Config struct {
	// BaseURL is the endpoint's base, e.g. http://host:8000/v1.
	BaseURL string
	// APIKey may be empty. It is sent as a bearer token and never logged
	// or put in an error.
	APIKey string
	Model  string
	// Protocol is ChatCompletions (the default), Completions or Responses.
	Protocol string
	// MaxConcurrent sizes the connection pool: at most this many
	// connections to the endpoint, all kept alive for reuse.
	MaxConcurrent int
	// RetryBase and RetryMax are the backoff base and cap (defaults 1s and
	// 60s): the n-th retry waits min(base·2^(n-1), max) × U(0.5, 1.5).
	RetryBase, RetryMax time.Duration
	// MaxRetries caps retries after the first request. 0 means no cap but
	// the ctx's deadline, or 10 retries when the ctx has none.
	MaxRetries int
	// RequestTimeout bounds one request (0: only the ctx bounds it). A
	// request that times out is retried while the ctx's budget lasts.
	RequestTimeout time.Duration
	// HTTPClient is optional (tests inject one); its Transport is wrapped,
	// not replaced.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Middleware, when set, wraps the transport under the client's own
	// hook: it sees each request with the generation parameters already
	// in the body (runtime/intercept's chain). If what it returns has a
	// Close method, Close calls it.
	Middleware func(http.RoundTripper) http.RoundTripper
}

// Request is one generation request.
type Request struct {
	// Messages is the chat prompt (chat_completions, responses).
	Messages []Message
	// Prompt is the plain prompt (completions).
	Prompt string
	// Tools are offered to the model (chat completions only; a request
	// with tools on another protocol is refused).
	Tools []Tool
	// Generation holds the sampling parameters; nil fields are not sent.
	Generation plan.Generation
	// Seed is the per-sample seed, always sent as "seed" (it overrides
	// Generation.Seed), except with the responses protocol, which has no
	// seed parameter.
	Seed int64
}

// Response is a model's answer.
type Response struct {
	// Content is the answer without the reasoning; Reasoning is the
	// reasoning_content/reasoning field, or a leading <think> block.
	Content, Reasoning, FinishReason, Model         string
	PromptTokens, CompletionTokens, ReasoningTokens int64
	// Attempts is how many requests were made (1: the first succeeded).
	Attempts int
	// Simulated says the endpoint labelled itself as nel's simulator.
	Simulated bool
	// SystemFingerprint is the response's system_fingerprint (chat
	// completions only; "" when the server sends none).
	SystemFingerprint string
	// ToolCalls are the calls the answer makes, in the model's order
	// (several: parallel calls). An answer with calls may have no content.
	ToolCalls []ToolCall
}

// Client talks to one model endpoint. It is safe for concurrent use.
type Client struct {
	cfg       Config
	oa        *openai.Client
	transport *hookTransport
	log       *slog.Logger
	chatURL   string // where go-openai sends chat completions
	// chatHeader is the fast path's request header, made once: a request
	// to nel's own transport shares it (a RoundTripper does not change
	// its request, and that one only reads it), any other gets a copy.
	chatHeader http.Header
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("model client: base URL is empty")
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("model client for %s: model is empty", cfg.BaseURL)
	}
	switch cfg.Protocol {
	case "":
		cfg.Protocol = ChatCompletions
	case ChatCompletions, Completions, Responses:
	default:
		return nil, fmt.Errorf("model client for %s: unknown protocol %q (want %s, %s or %s)",
			cfg.BaseURL, cfg.Protocol, ChatCompletions, Completions, Responses)
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.RetryMax < cfg.RetryBase {
		cfg.RetryMax = cfg.RetryBase
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if n := len(cfg.APIKey); n > 0 && n < MinRedactableKey {
		// Said once, when the client is made: its length, never the key.
		log.Warn(fmt.Sprintf("the API key is shorter than %d characters (%d): it cannot be redacted reliably from error messages (only where it stands alone as a word)", MinRedactableKey, n),
			"model", cfg.Model)
	}

	var hc http.Client
	var base http.RoundTripper
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
		base = hc.Transport
	}
	if base == nil {
		base = newTransport(cfg.MaxConcurrent)
	}
	if cfg.Middleware != nil {
		base = cfg.Middleware(base)
	}
	ht := &hookTransport{base: base}
	hc.Transport = ht

	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = &hc
	return &Client{cfg: cfg, oa: openai.NewClientWithConfig(oc), transport: ht, log: log,
		chatURL: oc.BaseURL + "/chat/completions", chatHeader: chatHeader(cfg.APIKey)}, nil
}

// chatHeader is the header the fast path sends with every chat
// completion, as go-openai sends it: Accept, Content-Type and, with a key,
// Authorization.
func chatHeader(apiKey string) http.Header {
	h := http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}}
	if apiKey != "" {
		h["Authorization"] = []string{"Bearer " + apiKey}
	}
	return h
}

// newTransport returns a keep-alive transport whose pool holds at most n
// connections to a host: MaxConnsPerHost makes the n+1-th concurrent call
// wait for a connection instead of dialing one, so an evaluation opens as
// many connections as it runs samples in parallel, and no more.
func newTransport(n int) http.RoundTripper {
	dial := (&net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
	}).DialContext
	fallback := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          n,
		MaxIdleConnsPerHost:   n,
		MaxConnsPerHost:       n,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Small buffers: one pair per connection, and a shard may hold
		// thousands (the default is 4 KiB each).
		ReadBufferSize:  2 << 10,
		WriteBufferSize: 2 << 10,
	}
	return newPlainTransport(n, fallback, dial)
}

// Close releases the client's idle connections and what its middleware
// holds.
func (c *Client) Close() {
	if t, ok := c.transport.base.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	if m, ok := c.transport.base.(interface{ Close() error }); ok {
		if err := m.Close(); err != nil {
			c.log.Warn("closing the model client's middleware", "err", err)
		}
	}
}

// Complete sends req, retrying transient failures while ctx lasts. Its
// error is a *failure.Error. With an empty_response failure for a message
// that came back empty, the Response is returned too (usage, finish reason).
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	overlay, err := c.overlay(req)
	if err == nil && len(req.Tools) > 0 && c.cfg.Protocol != ChatCompletions {
		err = fmt.Errorf("%s: tools need the %s protocol, not %s", c.cfg.BaseURL, ChatCompletions, c.cfg.Protocol)
	}
	if err != nil {
		return nil, &failure.Error{Category: failure.APIError, Err: err}
	}
	maxRetries := c.cfg.MaxRetries
	if _, ok := ctx.Deadline(); !ok && maxRetries <= 0 {
		maxRetries = noDeadlineRetries
	}
	var last *failure.Error // the previous attempt's failure
	for attempt := 1; ; attempt++ {
		w := &wire{overlay: overlay}
		resp, err := c.attempt(ctx, req, w)
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		ferr, retry, after := c.classify(ctx, err, w)
		if last != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The budget ran out while retrying: the sample failed for
			// the reason it was retrying (429s that outlived the
			// budget are rate_limit), not for being slow.
			ferr = &failure.Error{Category: last.Category, Status: last.Status,
				Err: fmt.Errorf("%w; then the time budget ran out (%v)", last.Err, ctx.Err())}
		}
		ferr.Attempts = attempt
		if resp != nil {
			resp.Attempts = attempt
		}
		if !retry || (maxRetries > 0 && attempt > maxRetries) {
			return resp, ferr
		}
		wait := after
		if wait <= 0 {
			wait = backoff(c.cfg.RetryBase, c.cfg.RetryMax, attempt)
		}
		// Do not sleep into the deadline: a wait that ends past it cannot
		// be followed by a useful request, so the sample fails now with
		// what it has.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			return resp, ferr
		}
		c.log.Debug("model request failed, retrying", "url", c.cfg.BaseURL, "attempt", attempt,
			"category", ferr.Category, "status", ferr.Status, "wait", wait, "err", ferr.Err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return resp, ferr // see above
			}
			return resp, c.ctxFailure(ctx, ferr, attempt)
		case <-t.C:
		}
		last = ferr
	}
}

// ctxFailure is the failure when ctx ended: a timeout when its deadline
// passed, an interruption when it was cancelled.
func (c *Client) ctxFailure(ctx context.Context, last *failure.Error, attempts int) *failure.Error {
	cat := failure.Timeout
	if errors.Is(ctx.Err(), context.Canceled) {
		cat = failure.Interrupted
	}
	err := fmt.Errorf("%s: %w", c.cfg.BaseURL, ctx.Err())
	if last != nil {
		err = fmt.Errorf("%w (last failure: %v)", err, last.Err)
	}
	f := &failure.Error{Category: cat, Attempts: attempts, Err: c.redact(err)}
	if last != nil {
		f.Status = last.Status
	}
	return f
}

// attempt makes one request within RequestTimeout. The timeout is a
// context here rather than http.Client.Timeout, which starts a goroutine
// per request to enforce it.
func (c *Client) attempt(ctx context.Context, req Request, w *wire) (*Response, error) {
	if c.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	return c.once(ctx, req, w)
}

// once makes one request.
func (c *Client) once(ctx context.Context, req Request, w *wire) (*Response, error) {
	var r *Response
	var err error
	// The wire rides in the context to the hook under go-openai; the fast
	// path is handed it (chat adds it once the fast path declines).
	switch c.cfg.Protocol {
	case Completions:
		r, err = c.completion(withWire(ctx, w), req, w)
	case Responses:
		r, err = c.response(withWire(ctx, w), req, w)
	default:
		r, err = c.chat(ctx, req, w)
	}
	if r != nil {
		r.Simulated = r.Simulated || w.header.Get(SimulatedHeader) == "true"
	}
	return r, err
}

func (c *Client) chat(ctx context.Context, req Request, w *wire) (*Response, error) {
	if r, err, ok := c.fastChat(ctx, req, w); ok {
		return r, err
	}
	*w = wire{overlay: w.overlay} // a redirect: forget its answer
	ctx = withWire(ctx, w)
	out, err := c.oa.CreateChatCompletion(ctx, chatRequest(c.cfg.Model, req))
	if err != nil {
		return nil, err
	}
	if len(out.Choices) == 0 {
		return nil, errEmptyChoices
	}
	ch := out.Choices[0]
	r := &Response{
		Content:      ch.Message.Content,
		Reasoning:    ch.Message.ReasoningContent,
		FinishReason: string(ch.FinishReason),
		Model:        out.Model,
		Simulated:    strings.HasPrefix(out.SystemFingerprint, SimulatedFingerprint),

		SystemFingerprint: out.SystemFingerprint,
	}
	for _, tc := range ch.Message.ToolCalls {
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if r.Reasoning == "" && bytes.Contains(w.body, []byte(`"reasoning"`)) {
		// Some servers (vLLM ≥ 0.10 with a reasoning parser, OpenRouter)
		// name the field "reasoning"; go-openai does not decode it.
		var extra struct {
			Choices []struct {
				Message struct {
					Reasoning string `json:"reasoning"`
				} `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal(w.body, &extra) == nil && len(extra.Choices) > 0 {
			r.Reasoning = extra.Choices[0].Message.Reasoning
		}
	}
	setUsage(r, out.Usage.PromptTokens, out.Usage.CompletionTokens, out.Usage.CompletionTokensDetails)
	return finish(r)
}

// chatRequest is go-openai's request for req: the messages with their tool
// calls and tool answers, and the tools offered. Generation parameters are
// not here: the hook adds them (wire.go).
func chatRequest(modelName string, req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, openai.ToolCall{ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
	}
	out := openai.ChatCompletionRequest{Model: modelName, Messages: msgs}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out
}

func (c *Client) completion(ctx context.Context, req Request, w *wire) (*Response, error) {
	out, err := c.oa.CreateCompletion(ctx, openai.CompletionRequest{Model: c.cfg.Model, Prompt: req.Prompt})
	if err != nil {
		return nil, err
	}
	if len(out.Choices) == 0 {
		return nil, errEmptyChoices
	}
	ch := out.Choices[0]
	r := &Response{Content: ch.Text, FinishReason: ch.FinishReason, Model: out.Model}
	// go-openai's CompletionResponse has no system_fingerprint.
	if bytes.Contains(w.body, []byte(SimulatedFingerprint)) {
		var fp struct {
			SystemFingerprint string `json:"system_fingerprint"`
		}
		r.Simulated = json.Unmarshal(w.body, &fp) == nil && strings.HasPrefix(fp.SystemFingerprint, SimulatedFingerprint)
	}
	if out.Usage != nil {
		setUsage(r, out.Usage.PromptTokens, out.Usage.CompletionTokens, out.Usage.CompletionTokensDetails)
	}
	return finish(r)
}

func (c *Client) response(ctx context.Context, req Request, _ *wire) (*Response, error) {
	input := make([]openai.ResponseInputMessage, len(req.Messages))
	for i, m := range req.Messages {
		input[i] = openai.ResponseInputMessage{Type: "message", Role: m.Role, Content: m.Content}
	}
	out, err := c.oa.CreateResponse(ctx, openai.CreateResponseRequest{Model: c.cfg.Model, Input: input})
	if err != nil {
		return nil, err
	}
	if len(out.Output) == 0 && out.OutputText == "" {
		return nil, errEmptyChoices
	}
	r := &Response{Content: out.GetOutputText(), Model: out.Model, FinishReason: "stop"}
	switch {
	case out.Status == openai.ResponseStatusIncomplete && out.IncompleteDetails != nil &&
		out.IncompleteDetails.Reason == "max_output_tokens":
		r.FinishReason = "length"
	case out.Status != "" && out.Status != openai.ResponseStatusCompleted:
		r.FinishReason = string(out.Status)
	}
	r.Reasoning = responseReasoning(out.Output)
	if u := out.Usage; u != nil {
		r.PromptTokens, r.CompletionTokens = int64(u.InputTokens), int64(u.OutputTokens)
		if u.OutputTokensDetails != nil {
			r.ReasoningTokens = int64(u.OutputTokensDetails.ReasoningTokens)
		}
	}
	return finish(r)
}

// responseReasoning joins the summary and content texts of the reasoning
// items of a Responses API output.
func responseReasoning(output []any) string {
	var parts []string
	for _, o := range output {
		item, ok := o.(map[string]any)
		if !ok || item["type"] != "reasoning" {
			continue
		}
		for _, key := range []string{"summary", "content"} {
			list, _ := item[key].([]any)
			for _, p := range list {
				if m, ok := p.(map[string]any); ok {
					if s, ok := m["text"].(string); ok && s != "" {
						parts = append(parts, s)
					}
				}
			}
		}
	}
	return strings.Join(parts, "\n")
}

func setUsage(r *Response, prompt, completion int, details *openai.CompletionTokensDetails) {
	r.PromptTokens, r.CompletionTokens = int64(prompt), int64(completion)
	if details != nil {
		r.ReasoningTokens = int64(details.ReasoningTokens)
	}
}

// finish splits a <think> block off the content when the server did not
// separate the reasoning, and reports an empty message.
func finish(r *Response) (*Response, error) {
	if r.Reasoning == "" {
		r.Reasoning, r.Content = SplitReasoning(r.Content)
	}
	if strings.TrimSpace(r.Content) == "" && strings.TrimSpace(r.Reasoning) == "" && len(r.ToolCalls) == 0 {
		return r, errEmptyMessage
	}
	return r, nil
}

// SplitReasoning splits a leading <think>…</think> block (after optional
// whitespace) off content. An unclosed leading <think> means the whole
// response is reasoning (the model ran out of tokens while thinking). The
// reasoning is trimmed of surrounding whitespace, the answer of leading
// whitespace.
func SplitReasoning(content string) (reasoning, answer string) {
	const open, closing = "<think>", "</think>"
	rest := strings.TrimLeft(content, " \t\r\n")
	if !strings.HasPrefix(rest, open) {
		return "", content
	}
	rest = rest[len(open):]
	i := strings.Index(rest, closing)
	if i < 0 {
		return strings.TrimSpace(rest), ""
	}
	return strings.TrimSpace(rest[:i]), strings.TrimLeft(rest[i+len(closing):], " \t\r\n")
}
