package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// logged runs n requests through the one link name with config cfg and
// returns what it logged.
func logged(t *testing.T, name string, cfg map[string]any, n int) string {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	c, err := Build([]plan.Interceptor{{Name: name, Config: cfg}}, Env{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	e := &recorder{body: `{"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":4}}`}
	for range n {
		req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{"Authorization": {"Bearer sk-secret"}},
			Body: decodeBody([]byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 600) + `"}]}`))}
		if _, err := c.Handler(e.handle)(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

func TestLogTokens(t *testing.T) {
	out := logged(t, "log_tokens", nil, 2)
	if strings.Count(out, `msg="model tokens" prompt_tokens=10 completion_tokens=4 total_tokens=14`) != 2 {
		t.Errorf("log:\n%s", out)
	}
}

func TestResponseStatsEvery(t *testing.T) {
	// every: 2 → a line after the 2nd and the 4th response, with totals.
	out := logged(t, "response_stats", map[string]any{"every": 2}, 5)
	if strings.Count(out, "model response stats") != 2 ||
		!strings.Contains(out, "responses=2 prompt_tokens=20 completion_tokens=8") ||
		!strings.Contains(out, "responses=4 prompt_tokens=40 completion_tokens=16") {
		t.Errorf("log:\n%s", out)
	}
	// The default is every 100.
	if out := logged(t, "response_stats", nil, 99); strings.Contains(out, "model response stats") {
		t.Errorf("a stats line before the 100th response:\n%s", out)
	}
}

func TestProgressTracking(t *testing.T) {
	out := logged(t, "progress_tracking", map[string]any{"every": 3}, 7)
	if strings.Count(out, "model progress") != 2 || !strings.Contains(out, "completed=3") || !strings.Contains(out, "completed=6") {
		t.Errorf("log:\n%s", out)
	}
	// NeMo's default is every 10.
	if out := logged(t, "progress_tracking", nil, 10); strings.Count(out, "completed=10") != 1 {
		t.Errorf("log:\n%s", out)
	}
}

// TestLoggingPreviews: the logging link shows the body cut to 512
// characters and never a header.
func TestLoggingPreviews(t *testing.T) {
	out := logged(t, "logging", nil, 1)
	if !strings.Contains(out, `msg="model request" method=POST path=/v1/chat/completions`) || !strings.Contains(out, `msg="model response" status=200`) {
		t.Errorf("log:\n%s", out)
	}
	if strings.Contains(out, strings.Repeat("x", 600)) || !strings.Contains(out, strings.Repeat("x", 400)) {
		t.Error("the request body is not cut to its preview")
	}
	if strings.Contains(out, "sk-secret") {
		t.Error("the key was logged")
	}
}

// TestRaiseClientErrors: nel's client already fails a 4xx (other than
// 408/429) without retrying, so the link passes the answer on as it is.
func TestRaiseClientErrors(t *testing.T) {
	c := chainOf(t, "raise_client_errors", `{}`)
	e := &recorder{status: 400, body: `{"error":{"message":"bad"}}`}
	_, resp := run(t, c, e, `{}`)
	if resp.Status != 400 || string(resp.Body) != e.body {
		t.Errorf("got %d %s", resp.Status, resp.Body)
	}
}

// TestHTTPPairsDump: the first first_n pairs and every non-200 one, the
// count by status, no Authorization; each shard (scope) its own file,
// written when the chain closes.
func TestHTTPPairsDump(t *testing.T) {
	dir := t.TempDir()
	c, err := Build([]plan.Interceptor{{Name: "http_pairs_dump", Config: map[string]any{"dump_path": dir + "/pairs.json", "first_n": 1}}},
		Env{Scope: "gsm8k-0"})
	if err != nil {
		t.Fatal(err)
	}
	e := &recorder{body: `{"choices":[]}`}
	for _, status := range []int{200, 200, 503, 200} {
		e.status = status
		req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{"Authorization": {"Bearer sk-secret"}, "X-Team": {"eval"}},
			Body: map[string]any{"n": 1.0}}
		if _, err := c.Handler(e.handle)(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pairs.gsm8k-0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metrics map[string]int `json:"metrics"`
		Pairs   []struct {
			RequestID string `json:"request_id"`
			Request   struct {
				Headers map[string]string `json:"headers"`
			} `json:"request"`
			Response struct {
				Status int `json:"status"`
			} `json:"response"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Metrics["200"] != 3 || got.Metrics["503"] != 1 || len(got.Pairs) != 2 ||
		got.Pairs[0].RequestID != "1" || got.Pairs[1].RequestID != "3" || got.Pairs[1].Response.Status != 503 {
		t.Errorf("dump %s", b)
	}
	if strings.Contains(string(b), "sk-secret") || got.Pairs[0].Request.Headers["X-Team"] != "eval" {
		t.Errorf("headers %v", got.Pairs[0].Request.Headers)
	}
}

// TestHTTPPairsDumpCrash: each kept pair is in the in-progress file as soon
// as its call returns, with the counts so far; a chain built again over it
// (the shard started after a crash) drops a line the crash cut short and
// continues, and its final file holds both attempts' pairs, the
// in-progress file gone.
func TestHTTPPairsDumpCrash(t *testing.T) {
	dir := t.TempDir()
	specs := []plan.Interceptor{{Name: "http_pairs_dump", Config: map[string]any{"dump_path": dir + "/pairs.json", "first_n": 2}}}
	call := func(c *Chain, e *recorder, status int) {
		e.status = status
		req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{}, Body: map[string]any{"n": 1.0}}
		if _, err := c.Handler(e.handle)(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	first, err := Build(specs, Env{})
	if err != nil {
		t.Fatal(err)
	}
	e := &recorder{body: `{"choices":[]}`}
	for _, st := range []int{200, 200, 200, 500} {
		call(first, e, st)
	}
	inprogress := filepath.Join(dir, "pairs.inprogress.jsonl")
	b, err := os.ReadFile(inprogress)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"metrics":{"200":3,"500":1},"pair":{"request":`) ||
		!strings.Contains(lines[2], `"request_id":"4"`) {
		t.Fatalf("in-progress file after 4 calls (the 3rd, a 200 past first_n, not kept):\n%s", b)
	}
	// first is never closed: the process died. Its last write was cut.
	os.WriteFile(inprogress, append(b, `{"metrics":{"200":4},"pa`...), 0o644)
	second, err := Build(specs, Env{})
	if err != nil {
		t.Fatal(err)
	}
	call(second, e, 502)
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(inprogress); !os.IsNotExist(err) {
		t.Errorf("in-progress file left after close: %v", err)
	}
	var got struct {
		Metrics map[string]int   `json:"metrics"`
		Pairs   []map[string]any `json:"pairs"`
	}
	b, _ = os.ReadFile(filepath.Join(dir, "pairs.json"))
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range got.Pairs {
		ids = append(ids, p["request_id"].(string))
	}
	if got.Metrics["200"] != 3 || got.Metrics["500"] != 1 || got.Metrics["502"] != 1 || strings.Join(ids, ",") != "1,2,4,5" {
		t.Errorf("final dump: metrics %v, pairs %v", got.Metrics, ids)
	}
}
