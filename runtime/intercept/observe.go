package intercept

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// observer is the links that only watch: NeMo's log_tokens (usage per
// response), response_stats (token and latency totals every `every`
// responses), progress_tracking (the count of answers every `every`) and
// logging (method, path and a preview of each body). They write to nel's
// log (log/slog), which nel-run already keeps per shard; they change
// nothing the model sees.
type observer struct {
	name  string
	every int
	log   *slog.Logger

	mu                 sync.Mutex
	n                  int
	prompt, completion int64
	latency            time.Duration
}

// previewChars is how much of a body the logging link shows (NeMo's 512).
const previewChars = 512

func newObserver(name string, raw []byte, log *slog.Logger) (Interceptor, error) {
	o := &observer{name: name, log: log}
	switch name {
	case "response_stats", "progress_tracking":
		c := struct {
			Every      *int    `json:"every"`
			WebhookURL *string `json:"webhook_url"` // progress_tracking only
		}{}
		if err := decodeConfig(raw, &c); err != nil {
			return nil, err
		}
		if c.WebhookURL != nil {
			if name != "progress_tracking" {
				return nil, fmt.Errorf(`config: json: unknown field "webhook_url"`)
			}
			return nil, fmt.Errorf("config.webhook_url: not supported (nel reports progress in its run folder: nel status)")
		}
		o.every = 100
		if name == "progress_tracking" {
			o.every = 10
		}
		if c.Every != nil {
			if *c.Every < 1 {
				return nil, fmt.Errorf("config.every: %d is not a positive count", *c.Every)
			}
			o.every = *c.Every
		}
	default:
		if err := decodeConfig(raw, &struct{}{}); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *observer) Wrap(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		if o.name == "logging" {
			o.logRequest(req)
		}
		start := time.Now()
		resp, err := next(ctx, req)
		if err != nil || resp == nil {
			return resp, err
		}
		o.observe(resp, time.Since(start))
		return resp, nil
	}
}

// logRequest is the logging link's line for req. Not inlined: its locals
// would be in Wrap's frame, which waits on the model (see
// Transport.RoundTrip).
//
//go:noinline
func (o *observer) logRequest(req *Request) {
	o.log.Info("model request", "method", req.Method, "path", req.Path, "body", preview(req))
}

func (o *observer) observe(resp *Response, took time.Duration) {
	body := resp.bodyJSON()
	u, _ := body["usage"].(map[string]any)
	p, _ := intOf(u["prompt_tokens"])
	c, _ := intOf(u["completion_tokens"])
	switch o.name {
	case "logging":
		o.log.Info("model response", "status", resp.Status, "cached", resp.Cached, "body", truncate(string(resp.Body)))
		return
	case "log_tokens":
		o.log.Info("model tokens", "prompt_tokens", p, "completion_tokens", c, "total_tokens", p+c)
		return
	}
	o.mu.Lock()
	o.n++
	o.prompt += p
	o.completion += c
	o.latency += took
	n, pt, ct, lat := o.n, o.prompt, o.completion, o.latency
	o.mu.Unlock()
	if n%o.every != 0 {
		return
	}
	if o.name == "progress_tracking" {
		o.log.Info("model progress", "completed", n)
		return
	}
	o.log.Info("model response stats", "responses", n, "prompt_tokens", pt, "completion_tokens", ct,
		"mean_latency_ms", lat.Milliseconds()/int64(n))
}

func preview(req *Request) string {
	if req.Body == nil {
		return truncate(string(req.Raw))
	}
	b, _ := encodeJSON(req.Body)
	return truncate(string(b))
}

func truncate(s string) string {
	if len(s) <= previewChars {
		return s
	}
	return s[:previewChars] + "…"
}
