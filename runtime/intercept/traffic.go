package intercept

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
)

// Traffic logs every model HTTP call as one JSON line: NeMo's
// proxy.model_traffic, written to model_traffic.jsonl files in the run
// folder (rundir.Shard.ModelTraffic). It is the chain's innermost step, so
// it sees what was really sent and answered: a cache hit is not a model
// call and leaves no line. Headers are never written (Authorization
// carries the key).
type Traffic struct {
	cfg    plan.ModelTraffic
	prefix string // request ids are prefix-N

	mu sync.Mutex
	w  io.WriteCloser
	n  atomic.Int64
}

// NewTraffic logs to w (closed by Close); prefix makes request ids unique
// across the files of one run (a shard's label).
func NewTraffic(w io.WriteCloser, cfg plan.ModelTraffic, prefix string) *Traffic {
	return &Traffic{cfg: cfg, prefix: prefix, w: w}
}

// Close closes the log.
func (t *Traffic) Close() error { return t.w.Close() }

// trafficLine is one call. Optional parts are left out when not captured.
type trafficLine struct {
	RequestID        string `json:"request_id"`
	Sample           Sample `json:"sample"`
	Path             string `json:"path"`
	Start            string `json:"start"`
	End              string `json:"end"`
	LatencyMS        int64  `json:"latency_ms"`
	Status           int    `json:"status,omitempty"`
	Error            string `json:"error,omitempty"`
	PromptTokens     *int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64 `json:"completion_tokens,omitempty"`
	FinishReason     any    `json:"finish_reason,omitempty"`
	Messages         any    `json:"messages,omitempty"`
	Content          any    `json:"content,omitempty"`
	Reasoning        any    `json:"reasoning,omitempty"`
	ToolCalls        any    `json:"tool_calls,omitempty"`
	RequestBody      any    `json:"request_body,omitempty"`
}

func (t *Traffic) Wrap(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		end := time.Now()
		l := trafficLine{RequestID: fmt.Sprintf("%s-%d", t.prefix, t.n.Add(1)), Sample: req.Sample, Path: req.Path,
			Start: start.UTC().Format(time.RFC3339Nano), End: end.UTC().Format(time.RFC3339Nano),
			LatencyMS: end.Sub(start).Milliseconds()}
		if err != nil {
			l.Error = err.Error()
		}
		t.request(&l, req)
		if resp != nil {
			l.Status = resp.Status
			t.response(&l, decodeBody(resp.Body))
		}
		t.write(l)
		return resp, err
	}
}

func on(b *bool) bool { return b == nil || *b }

func (t *Traffic) request(l *trafficLine, req *Request) {
	if on(t.cfg.CaptureMessages) && req.Body != nil {
		l.Messages = t.clip(req.Body["messages"])
	}
	if t.cfg.CaptureRequestBody {
		// Encoded by write before the call returns: no copy needed.
		l.RequestBody = t.clip(req.bodyValue())
	}
}

func (t *Traffic) response(l *trafficLine, body map[string]any) {
	if u, ok := body["usage"].(map[string]any); ok {
		if n, ok := intOf(u["prompt_tokens"]); ok {
			l.PromptTokens = &n
		}
		if n, ok := intOf(u["completion_tokens"]); ok {
			l.CompletionTokens = &n
		}
	}
	choices := choicesOf(body)
	if len(choices) == 0 {
		return
	}
	ch := choices[0]
	l.FinishReason = ch["finish_reason"]
	msg, _ := ch["message"].(map[string]any)
	if msg == nil {
		l.Content = t.clip(ch["text"])
		return
	}
	if on(t.cfg.CaptureMessages) {
		l.Content = t.clip(msg["content"])
	}
	if on(t.cfg.CaptureReasoning) {
		r := msg["reasoning_content"]
		if r == nil {
			r = msg["reasoning"]
		}
		l.Reasoning = t.clip(r)
	}
	if on(t.cfg.CaptureToolCalls) {
		l.ToolCalls = msg["tool_calls"]
	}
}

// clip cuts every string in v to max_content_chars (runes), in place.
func (t *Traffic) clip(v any) any {
	max := t.cfg.MaxContentChars
	if max <= 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		if r := []rune(x); len(r) > max {
			return string(r[:max])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = t.clip(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = t.clip(e)
		}
		return out
	}
	return v
}

func (t *Traffic) write(l trafficLine) {
	b, err := encodeJSON(l)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.Write(append(b, '\n'))
}
