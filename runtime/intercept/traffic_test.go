package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

type bufCloser struct{ bytes.Buffer }

func (*bufCloser) Close() error { return nil }

func trafficLines(t *testing.T, b *bufCloser) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

const answer = `{"choices":[{"finish_reason":"length","message":{"content":"forty-two","reasoning_content":"think think","tool_calls":[{"id":"c1"}]}}],"usage":{"prompt_tokens":11,"completion_tokens":7}}`

func sendTraffic(t *testing.T, c *Chain, e *recorder) {
	t.Helper()
	req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{"Authorization": {"Bearer sk-secret"}},
		Body:   decodeBody([]byte(`{"model":"m","messages":[{"role":"user","content":"what is six times seven"}]}`)),
		Sample: Sample{Benchmark: "gsm8k", Item: "7", Repeat: 1}}
	if _, err := c.Handler(e.handle)(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// TestTrafficDefaults: NeMo's defaults capture messages, reasoning and tool
// calls but not the request body; the call's sample, status, tokens and
// finish reason are always there, the key never.
func TestTrafficDefaults(t *testing.T) {
	var buf bufCloser
	c, err := Build(nil, Env{Traffic: NewTraffic(&buf, plan.ModelTraffic{}, "m-gsm8k-0")})
	if err != nil {
		t.Fatal(err)
	}
	sendTraffic(t, c, &recorder{body: answer})
	sendTraffic(t, c, &recorder{body: answer})
	lines := trafficLines(t, &buf)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	l := lines[0]
	if l["request_id"] != "m-gsm8k-0-1" || lines[1]["request_id"] != "m-gsm8k-0-2" {
		t.Errorf("request ids %v, %v", l["request_id"], lines[1]["request_id"])
	}
	s := l["sample"].(map[string]any)
	if s["benchmark"] != "gsm8k" || s["item"] != "7" || s["repeat"] != 1.0 {
		t.Errorf("sample %v", s)
	}
	if l["status"] != 200.0 || l["prompt_tokens"] != 11.0 || l["completion_tokens"] != 7.0 || l["finish_reason"] != "length" {
		t.Errorf("line %v", l)
	}
	if l["content"] != "forty-two" || l["reasoning"] != "think think" || l["tool_calls"] == nil || l["messages"] == nil {
		t.Errorf("captured %v", l)
	}
	if _, ok := l["request_body"]; ok {
		t.Error("request body captured by default")
	}
	for _, k := range []string{"start", "end", "latency_ms"} {
		if _, ok := l[k]; !ok {
			t.Errorf("no %s", k)
		}
	}
	if strings.Contains(buf.String(), "sk-secret") || strings.Contains(buf.String(), "Authorization") {
		t.Error("the Authorization header was written")
	}
}

func TestTrafficCaptureSettings(t *testing.T) {
	no := false
	var buf bufCloser
	cfg := plan.ModelTraffic{CaptureMessages: &no, CaptureReasoning: &no, CaptureToolCalls: &no, CaptureRequestBody: true, MaxContentChars: 4}
	c, err := Build(nil, Env{Traffic: NewTraffic(&buf, cfg, "x")})
	if err != nil {
		t.Fatal(err)
	}
	sendTraffic(t, c, &recorder{body: answer})
	l := trafficLines(t, &buf)[0]
	for _, k := range []string{"messages", "content", "reasoning", "tool_calls"} {
		if _, ok := l[k]; ok {
			t.Errorf("%s captured though off", k)
		}
	}
	body, _ := l["request_body"].(map[string]any)
	msg := body["messages"].([]any)[0].(map[string]any)
	if msg["content"] != "what" || body["model"] != "m" {
		t.Errorf("request body %v: want texts cut to 4 characters", body)
	}
}

// TestTrafficSkipsCacheHits: the log is of model calls; a cache hit is
// none.
func TestTrafficSkipsCacheHits(t *testing.T) {
	var buf bufCloser
	c, err := Build([]plan.Interceptor{{Name: "caching", Config: map[string]any{"cache_dir": t.TempDir()}}},
		Env{Traffic: NewTraffic(&buf, plan.ModelTraffic{}, "x")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := &recorder{body: answer}
	sendTraffic(t, c, e)
	sendTraffic(t, c, e)
	if n := len(trafficLines(t, &buf)); n != 1 || e.calls() != 1 {
		t.Errorf("%d lines, %d calls; want 1 and 1", n, e.calls())
	}
}
