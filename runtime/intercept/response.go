package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"

	"github.com/nel-eval/nel/runtime/jsonany"
)

// decodeBody decodes a JSON object body, numbers kept as written; nil when
// the body is not one. What follows the object is ignored, as a
// json.Decoder does.
func decodeBody(b []byte) map[string]any {
	if v, ok := jsonany.Decode(b); ok {
		m, _ := v.(map[string]any) // an array: not an object
		return m
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}

// encodeJSON encodes v without HTML escaping (a model's "<think>" stays
// readable in logs and caches). A body as decodeBody returns it, edited
// by links, is written without encoding/json's reflection (once or twice
// a request: issue 23); what jsonany does not write (a config's float64,
// a struct) goes to encoding/json, which writes the same bytes.
func encodeJSON(v any) ([]byte, error) { return appendJSON(nil, v) }

// appendJSON is encodeJSON into dst's space (a new buffer when
// encoding/json writes it).
func appendJSON(dst []byte, v any) ([]byte, error) {
	if b, ok := jsonany.AppendValue(dst, v); ok {
		return b, nil
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// responseEdit is a link that edits a successful response's JSON body;
// edit reports whether it changed it.
type responseEdit func(resp *Response, body map[string]any) bool

func (f responseEdit) Wrap(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		resp, err := next(ctx, req)
		if err != nil || resp == nil {
			return resp, err
		}
		if err := editResponse(resp, f); err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// editResponse runs edit on resp's JSON body and encodes it again when
// edit changed it. Not inlined: see finishReason.relabel.
//
//go:noinline
func editResponse(resp *Response, edit responseEdit) error {
	body := resp.bodyJSON()
	if edit(resp, body) && body != nil {
		b, err := encodeJSON(body)
		if err != nil {
			return err
		}
		resp.Body, resp.decoded, resp.decodedOf = b, body, b
	}
	return nil
}

// responseOnly builds a config-less response link.
func responseOnly(raw []byte, f responseEdit) (Interceptor, error) {
	return f, decodeConfig(raw, &struct{}{})
}

// choicesOf returns the body's choices that are objects.
func choicesOf(body map[string]any) []map[string]any { return objects(body["choices"]) }

var thinkRE = regexp.MustCompile(`(?s)^\s*<think>(.*?)</think>`)

// normalizeReasoning is NeMo's reasoning interceptor: a message's
// "reasoning" renamed "reasoning_content", or a leading <think>…</think>
// block moved there out of the content. nel's client splits <think> itself
// (model.SplitReasoning); the link matters for agents behind `nel-run
// proxy`, which read reasoning_content.
func normalizeReasoning(_ *Response, body map[string]any) bool {
	changed := false
	for _, ch := range choicesOf(body) {
		msg, _ := ch["message"].(map[string]any)
		if msg == nil {
			continue
		}
		if _, ok := msg["reasoning_content"]; ok {
			continue
		}
		if r, ok := msg["reasoning"]; ok {
			msg["reasoning_content"] = r
			delete(msg, "reasoning")
			changed = true
			continue
		}
		content, _ := msg["content"].(string)
		if m := thinkRE.FindStringSubmatchIndex(content); m != nil {
			msg["reasoning_content"] = strings.TrimSpace(content[m[2]:m[3]])
			msg["content"] = strings.TrimLeft(content[m[1]:], " \t\r\n")
			changed = true
		}
	}
	return changed
}

// finishReason is NeMo's finish_reason: a "stop" whose completion reached
// the request's token cap is relabelled "length" (some servers say stop
// when they cut the answer at max_tokens, which would score a truncated
// answer as a finished one), and an empty generation is logged.
type finishReason struct{ log *slog.Logger }

func (f finishReason) Wrap(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		cap := tokenCap(req.Body) // the request as this link passes it on
		resp, err := next(ctx, req)
		if err != nil || resp == nil {
			return resp, err
		}
		return f.relabel(resp, cap)
	}
}

// relabel is finishReason's edit of a response to a request capped at cap
// tokens. Not inlined: its locals would be in Wrap's frame, which waits
// on the model (see Transport.RoundTrip).
//
//go:noinline
func (f finishReason) relabel(resp *Response, cap int64) (*Response, error) {
	return resp, editResponse(resp, func(_ *Response, body map[string]any) bool {
		changed := false
		choices := choicesOf(body)
		for _, ch := range choices {
			gen, ok := intOf(usageTokens(ch))
			if !ok && len(choices) == 1 {
				gen, ok = intOf(usageTokens(body))
			}
			if cap > 0 && ok && gen >= cap && ch["finish_reason"] == "stop" {
				ch["finish_reason"] = "length"
				changed = true
				f.log.Warn("finish_reason relabelled stop -> length: the completion reached max_tokens", "tokens", gen, "max_tokens", cap)
			}
			if emptyChoice(ch) {
				f.log.Warn("empty generation", "finish_reason", ch["finish_reason"])
			}
		}
		return changed
	})
}

// tokenCap is the request's max_completion_tokens or max_tokens (0: none).
func tokenCap(body map[string]any) int64 {
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		if n, ok := intOf(body[k]); ok && n > 0 {
			return n
		}
	}
	return 0
}

func usageTokens(m map[string]any) any {
	u, _ := m["usage"].(map[string]any)
	return u["completion_tokens"]
}

func intOf(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), n == float64(int64(n))
	}
	return 0, false
}

func emptyChoice(ch map[string]any) bool {
	if msg, ok := ch["message"].(map[string]any); ok {
		if calls, _ := msg["tool_calls"].([]any); len(calls) > 0 {
			return false
		}
		return strings.TrimSpace(contentText(msg["content"])) == ""
	}
	t, _ := ch["text"].(string)
	return strings.TrimSpace(t) == ""
}

// raiseClientErrors is NeMo's raise_client_errors: a 4xx other than 408
// and 429 fails the call instead of being retried. nel's client already
// does exactly that (api_error or context_length, no retry; runtime/model
// classify), so in-process the link passes the response through, and
// behind `nel-run proxy` the agent gets the 4xx as the server sent it.
type raiseClientErrors struct{}

func (raiseClientErrors) Wrap(next Handler) Handler { return next }
