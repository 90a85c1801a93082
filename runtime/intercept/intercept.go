// Package intercept is the interceptor chain between nel and a model
// endpoint: NeMo Evaluator's interceptors (system_message, drop_params,
// caching, …) as request/response middleware over OpenAI-compatible HTTP.
//
// The chain works on HTTP requests, not on nel's model.Request, so that the
// same chain serves nel's own client in-process (as an http.RoundTripper
// under it, see Transport) and agents that call the model themselves
// (`nel-run proxy`, see Proxy). Each link wraps the next: a link edits the
// request on the way in and the response on the way out, so request edits
// run in recipe order and response edits in reverse order, which is NeMo's
// order (request stage, endpoint, response stage reversed). A link may
// answer without calling the next one (a cache hit).
package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
)

// Request is one model HTTP request as the chain sees it.
type Request struct {
	Method string
	// Path is the endpoint path after the base URL's, e.g.
	// /v1/chat/completions.
	Path   string
	Header http.Header
	// Body is the decoded JSON object (numbers as json.Number, so that a
	// temperature of 0.7 stays 0.7 on the wire); nil when the body is not
	// a JSON object, in which case Raw is sent unchanged.
	Body map[string]any
	Raw  []byte
	// Sample is the evaluation sample the request belongs to, when the
	// caller said (WithSample); zero for a proxy client.
	Sample Sample

	url     *url.URL // Transport's: the URL whose path Path replaces
	readLen int      // the length of the body as read
}

// bodyValue is the body as a JSON value: the decoded object, or the raw
// text when the body is not a JSON object.
func (r *Request) bodyValue() any {
	if r.Body == nil {
		return string(r.Raw)
	}
	return r.Body
}

// Response is the model's answer as the chain sees it.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Cached says a link answered from its store without calling the
	// model.
	Cached bool

	// decoded is Body decoded by bodyJSON, while Body is still decodedOf.
	decoded   map[string]any
	decodedOf []byte
}

// bodyJSON is Body decoded (see decodeBody), once for the links that
// read or edit it: three of NeMo's usual chain (reasoning, finish_reason,
// response_stats) each decoded every answer. A link that changes the
// decoded object sets Body to its encoding (editResponse), and one that
// sets Body otherwise makes the next call decode the new one. Links that
// keep a body beyond the call (pairs, traffic, caching) decode their own.
func (r *Response) bodyJSON() map[string]any {
	if len(r.Body) > 0 && len(r.decodedOf) == len(r.Body) && &r.decodedOf[0] == &r.Body[0] {
		return r.decoded
	}
	r.decoded, r.decodedOf = decodeBody(r.Body), r.Body
	return r.decoded
}

// OK says the status is 2xx.
func (r *Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Handler sends a request on and returns the response.
type Handler func(ctx context.Context, req *Request) (*Response, error)

// Interceptor is one link: it wraps the rest of the chain.
type Interceptor interface {
	Wrap(next Handler) Handler
}

// Sample is a request's place in an evaluation: benchmark, item and
// repeat, and the turn of an agentic sample.
type Sample struct {
	Benchmark string `json:"benchmark,omitempty"`
	Item      string `json:"item,omitempty"`
	Repeat    int    `json:"repeat"`
	Turn      int    `json:"turn,omitempty"`
}

type sampleKey struct{}

// WithSample returns ctx carrying the sample its model requests belong to.
func WithSample(ctx context.Context, s Sample) context.Context {
	return context.WithValue(ctx, sampleKey{}, s)
}

// WithTurn returns ctx whose sample is at turn n (from 1) of an agentic
// conversation: the model traffic says which turn each call was.
func WithTurn(ctx context.Context, n int) context.Context {
	s := SampleOf(ctx)
	s.Turn = n
	return WithSample(ctx, s)
}

// SampleOf returns the sample ctx carries (zero when none).
func SampleOf(ctx context.Context) Sample {
	s, _ := ctx.Value(sampleKey{}).(Sample)
	return s
}

// Env is what links may need from where the chain runs.
type Env struct {
	Logger *slog.Logger
	// Traffic, when set, logs every model call; it runs innermost, and
	// the chain closes it.
	Traffic *Traffic
	// Scope names this chain among others of one run that write files
	// (a shard: "gsm8k-0"); "" when it is the only one (nel-run proxy).
	Scope string
	// Proxy says the chain serves agents over HTTP (nel-run proxy): there
	// turn_counter counts a session's requests and answers 429 past its
	// budget; in nel's client it reads the sample's turn.
	Proxy bool
}

// Chain is a built interceptor chain.
type Chain struct {
	traffic *Traffic
	links   []Interceptor
	names   []string
	close   []func() error
}

// Build makes the chain of specs, in order. A name nel does not know, or a
// config that does not decode, is an error naming the link.
func Build(specs []plan.Interceptor, env Env) (*Chain, error) {
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Chain{traffic: env.Traffic}
	if env.Traffic != nil {
		c.close = append(c.close, env.Traffic.Close)
	}
	for i, s := range specs {
		link, err := build(s, env)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("interceptors[%d] (%s): %w", i, s.Name, err)
		}
		if rr, ok := link.(*reasoningReplay); ok {
			rr.normalize = slices.Contains(c.names, "reasoning")
		}
		c.links = append(c.links, link)
		c.names = append(c.names, s.Name)
		if cl, ok := link.(interface{ Close() error }); ok {
			c.close = append(c.close, cl.Close)
		}
	}
	return c, nil
}

// Names lists the chain's links in order.
func (c *Chain) Names() []string { return c.names }

// Handler returns the chain in front of endpoint.
func (c *Chain) Handler(endpoint Handler) Handler {
	h := endpoint
	if c.traffic != nil {
		h = c.traffic.Wrap(h)
	}
	for i := len(c.links) - 1; i >= 0; i-- {
		h = c.links[i].Wrap(h)
	}
	return h
}

// Close releases what links hold (the cache's database).
func (c *Chain) Close() error {
	var first error
	for _, f := range c.close {
		if err := f(); err != nil && first == nil {
			first = err
		}
	}
	c.close = nil
	return first
}

// decodeConfig decodes a link's config into v, refusing keys v lacks.
func decodeConfig(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// oneOf checks a config field that takes one of values, the first being
// its default when unset.
func oneOf(field string, v *string, values ...string) error {
	if *v == "" {
		*v = values[0]
		return nil
	}
	if slices.Contains(values, *v) {
		return nil
	}
	return fmt.Errorf("config.%s %q: want one of %s", field, *v, strings.Join(values, ", "))
}

// build makes one link. The names and config keys are NeMo Evaluator's.
func build(spec plan.Interceptor, env Env) (Interceptor, error) {
	var raw []byte
	if spec.Config != nil {
		var err error
		if raw, err = json.Marshal(spec.Config); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	switch spec.Name {
	case "system_message":
		return newSystemMessage(raw)
	case "drop_params":
		return newDropParams(raw)
	case "payload_modifier":
		return newPayloadModifier(raw)
	case "consolidate_system":
		return newConsolidateSystem(raw)
	case "modify_tools":
		return newModifyTools(raw)
	case "reasoning":
		return responseOnly(raw, normalizeReasoning)
	case "finish_reason":
		return finishReason{log: env.Logger}, decodeConfig(raw, &struct{}{})
	case "streaming":
		return responseOnly(raw, coalesceStream)
	case "raise_client_errors":
		return raiseClientErrors{}, decodeConfig(raw, &struct{}{})
	case "caching":
		return newCaching(raw)
	case "http_pairs_dump":
		return newPairsDump(raw, env.Scope)
	case "turn_counter":
		return newTurnCounter(raw, env.Logger, env.Proxy)
	case "reasoning_replay":
		return newReasoningReplay(raw, env.Logger)
	case "log_tokens", "response_stats", "progress_tracking", "logging":
		return newObserver(spec.Name, raw, env.Logger)
	}
	if why, ok := RefusedReason(spec.Name); ok {
		return nil, fmt.Errorf("not supported: %s", why)
	}
	return nil, fmt.Errorf("unknown interceptor %q", spec.Name)
}

// RefusedReason says why nel does not run a NeMo interceptor it knows by
// name; the compiler refuses it with the same reason.
func RefusedReason(name string) (string, bool) {
	switch name {
	case "endpoint":
		return "the upstream call is always the chain's last step, not a link the recipe lists", true
	}
	return "", false
}

// ChangesRequest reports whether the named interceptor can change what the
// model is sent or what nel reads back from it, and so the methodology:
// such links are part of the recipe hash; the others (caching, logging,
// statistics, progress) only watch or replay and are not.
func ChangesRequest(name string) bool {
	switch name {
	case "caching", "log_tokens", "response_stats", "progress_tracking", "logging", "http_pairs_dump":
		return false
	}
	return true
}
