package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
)

func ptr[T any](v T) *T { return &v }

const okChat = `{"id":"x","object":"chat.completion","created":1,"model":"m-served",
"choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 4."},"finish_reason":"stop"}],
"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`

// server starts an httptest server with h and returns a client for it that
// retries fast.
func server(t *testing.T, h http.HandlerFunc, mod ...func(*Config)) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := Config{BaseURL: srv.URL + "/v1", Model: "m", RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond}
	for _, f := range mod {
		f(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, srv
}

func chatReq() Request {
	return Request{Messages: []Message{{Role: "user", Content: "2+2?"}}, Seed: 42}
}

// capture records request bodies and answers with body.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
	paths  []string
	auth   []string
}

func (c *capture) handler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.paths = append(c.paths, r.URL.Path)
		c.auth = append(c.auth, r.Header.Get("Authorization"))
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func (c *capture) last(t *testing.T) map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) == 0 {
		t.Fatal("no request received")
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(c.bodies[len(c.bodies)-1]))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, c.bodies[len(c.bodies)-1])
	}
	return m
}

func keys(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return fmt.Sprint(sortStrings(ks))
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func TestWireExactParameters(t *testing.T) {
	var cp capture
	c, _ := server(t, cp.handler(okChat), func(c *Config) { c.APIKey = "sk-test" })
	req := chatReq()
	req.Generation = plan.Generation{
		Temperature:      ptr(0.0),
		TopP:             ptr(0.95),
		TopK:             ptr(int64(20)),
		MaxTokens:        ptr(int64(512)),
		Seed:             ptr(int64(7)), // Request.Seed wins
		Stop:             []string{"</answer>", "\n\n"},
		FrequencyPenalty: ptr(0.0),
		PresencePenalty:  ptr(0.7),
		ExtraBody: map[string]any{
			"chat_template_kwargs": map[string]any{"enable_thinking": false},
			"repetition_penalty":   1.05,
		},
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	m := cp.last(t)
	want := "[chat_template_kwargs frequency_penalty max_tokens messages model presence_penalty repetition_penalty seed stop temperature top_k top_p]"
	if got := keys(m); got != want {
		t.Errorf("request keys\n got %s\nwant %s", got, want)
	}
	for k, v := range map[string]string{
		"temperature": "0", "top_p": "0.95", "top_k": "20", "max_tokens": "512", "seed": "42",
		"frequency_penalty": "0", "presence_penalty": "0.7", "repetition_penalty": "1.05", "model": "m",
	} {
		if got := fmt.Sprint(m[k]); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	if got := fmt.Sprint(m["stop"]); got != "[</answer> \n\n]" {
		t.Errorf("stop = %q", got)
	}
	if got := fmt.Sprint(m["chat_template_kwargs"]); got != "map[enable_thinking:false]" {
		t.Errorf("chat_template_kwargs = %s", got)
	}
	raw := string(cp.bodies[0])
	// The float values must be the plan's, not float32 round trips.
	for _, s := range []string{`"temperature":0`, `"top_p":0.95`, `"presence_penalty":0.7`} {
		if !strings.Contains(raw, s) {
			t.Errorf("body lacks %s: %s", s, raw)
		}
	}
	if cp.paths[0] != "/v1/chat/completions" {
		t.Errorf("path %s", cp.paths[0])
	}
	if cp.auth[0] != "Bearer sk-test" {
		t.Errorf("Authorization %q", cp.auth[0])
	}
}

func TestWireUnsetNotSent(t *testing.T) {
	var cp capture
	c, _ := server(t, cp.handler(okChat))
	if _, err := c.Complete(context.Background(), chatReq()); err != nil {
		t.Fatal(err)
	}
	m := cp.last(t)
	if got := keys(m); got != "[messages model seed]" {
		t.Errorf("keys %s, want only messages, model, seed", got)
	}
	msgs, _ := json.Marshal(m["messages"])
	if string(msgs) != `[{"content":"2+2?","role":"user"}]` {
		t.Errorf("messages %s", msgs)
	}
}

func TestWireExtraBodyOverrides(t *testing.T) {
	var cp capture
	c, _ := server(t, cp.handler(okChat))
	req := chatReq()
	req.Generation = plan.Generation{Temperature: ptr(0.5), ExtraBody: map[string]any{"temperature": 0.0, "model": "other"}}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	m := cp.last(t)
	if fmt.Sprint(m["temperature"]) != "0" || m["model"] != "other" || m["messages"] == nil {
		t.Errorf("extra_body should win: %v", m)
	}
}

func TestWireCompletionsAndResponses(t *testing.T) {
	var cp capture
	c, _ := server(t, cp.handler(`{"id":"c","object":"text_completion","model":"m","system_fingerprint":"nel-sim-0123456789ab",
		"choices":[{"index":0,"text":"<think>hmm</think> 4","finish_reason":"length"}],
		"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,"completion_tokens_details":{"reasoning_tokens":2}}}`),
		func(c *Config) { c.Protocol = Completions })
	r, err := c.Complete(context.Background(), Request{Prompt: "2+2=", Seed: 1, Generation: plan.Generation{MaxTokens: ptr(int64(9))}})
	if err != nil {
		t.Fatal(err)
	}
	m := cp.last(t)
	if keys(m) != "[max_tokens model prompt seed]" || m["prompt"] != "2+2=" || cp.paths[0] != "/v1/completions" {
		t.Errorf("completions request %v to %s", m, cp.paths[0])
	}
	if r.Content != "4" || r.Reasoning != "hmm" || r.FinishReason != "length" || !r.Simulated ||
		r.PromptTokens != 3 || r.CompletionTokens != 5 || r.ReasoningTokens != 2 {
		t.Errorf("completions response %+v", r)
	}

	var cr capture
	c, _ = server(t, cr.handler(`{"id":"r","object":"response","model":"m","status":"completed",
		"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"think"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"four"}]}],
		"usage":{"input_tokens":4,"output_tokens":6,"total_tokens":10,"output_tokens_details":{"reasoning_tokens":3}}}`),
		func(c *Config) { c.Protocol = Responses })
	req := chatReq()
	req.Generation.MaxTokens = ptr(int64(100))
	req.Generation.Temperature = ptr(0.0)
	r, err = c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	m = cr.last(t)
	if keys(m) != "[input max_output_tokens model temperature]" || cr.paths[0] != "/v1/responses" {
		t.Errorf("responses request %v to %s", m, cr.paths[0])
	}
	if r.Content != "four" || r.Reasoning != "think" || r.PromptTokens != 4 || r.CompletionTokens != 6 || r.ReasoningTokens != 3 {
		t.Errorf("responses response %+v", r)
	}
}

func TestReasoningAndUsage(t *testing.T) {
	for _, tc := range []struct {
		name, message      string
		content, reasoning string
		reasoningTokens    int64
	}{
		{"reasoning_content", `{"role":"assistant","content":"4","reasoning_content":"2+2 is 4"}`, "4", "2+2 is 4", 0},
		{"reasoning", `{"role":"assistant","content":"4","reasoning":"two and two"}`, "4", "two and two", 0},
		{"think tags", `{"role":"assistant","content":"\n<think>\nadd them\n</think>\n\nThe answer is 4"}`, "The answer is 4", "add them", 0},
		{"unclosed think", `{"role":"assistant","content":"<think>still thinking"}`, "", "still thinking", 0},
		{"plain", `{"role":"assistant","content":"4 <think>x</think>"}`, "4 <think>x</think>", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"id":"x","model":"served","choices":[{"index":0,"message":` + tc.message + `,"finish_reason":"length"}],
			"usage":{"prompt_tokens":5,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":6}}}`
			var cp capture
			c, _ := server(t, cp.handler(body))
			r, err := c.Complete(context.Background(), chatReq())
			if err != nil {
				t.Fatal(err)
			}
			if r.Content != tc.content || r.Reasoning != tc.reasoning {
				t.Errorf("content %q reasoning %q, want %q %q", r.Content, r.Reasoning, tc.content, tc.reasoning)
			}
			if r.FinishReason != "length" || r.Model != "served" || r.PromptTokens != 5 || r.CompletionTokens != 9 ||
				r.ReasoningTokens != 6 || r.Attempts != 1 || r.Simulated {
				t.Errorf("response %+v", r)
			}
		})
	}
}

func TestSplitReasoning(t *testing.T) {
	for _, tc := range []struct{ in, reasoning, answer string }{
		{"no tags", "", "no tags"},
		{"<think>a</think>b", "a", "b"},
		{"  \n<think> a\nb </think>\n c", "a\nb", "c"},
		{"<think>unclosed", "unclosed", ""},
		{"x<think>a</think>b", "", "x<think>a</think>b"},
		{"<think></think>answer", "", "answer"},
		{"<think>a</think>b</think>c", "a", "b</think>c"},
	} {
		r, a := SplitReasoning(tc.in)
		if r != tc.reasoning || a != tc.answer {
			t.Errorf("SplitReasoning(%q) = %q, %q; want %q, %q", tc.in, r, a, tc.reasoning, tc.answer)
		}
	}
}

func TestSimulatedLabels(t *testing.T) {
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nel-Simulated", "true")
		io.WriteString(w, okChat)
	})
	r, err := c.Complete(context.Background(), chatReq())
	if err != nil || !r.Simulated {
		t.Errorf("header label not detected: %+v %v", r, err)
	}
	c, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Replace(okChat, `"model"`, `"system_fingerprint":"nel-sim-0123456789ab","model"`, 1))
	})
	r, err = c.Complete(context.Background(), chatReq())
	if err != nil || !r.Simulated {
		t.Errorf("fingerprint label not detected: %+v %v", r, err)
	}
}

// reply answers with status and body.
func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // send RST, not FIN
	}
	conn.Close()
}

func TestFailureCategories(t *testing.T) {
	const maxRetries = 2
	for _, tc := range []struct {
		name     string
		h        http.HandlerFunc
		cat      failure.Category
		status   int
		attempts int
	}{
		{"429", reply(429, `{"error":{"message":"slow down","type":"rate_limit"}}`), failure.RateLimit, 429, 3},
		{"500", reply(500, `{"error":{"message":"boom"}}`), failure.ServerError, 500, 3},
		{"502 html", reply(502, `<html>bad gateway</html>`), failure.ServerError, 502, 3},
		{"503", reply(503, ``), failure.ServerError, 503, 3},
		{"504", reply(504, ``), failure.ServerError, 504, 3},
		{"501", reply(501, ``), failure.ServerError, 501, 1},
		{"400 context vllm", reply(400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","type":"BadRequestError","code":400}`), failure.ContextLength, 400, 1},
		{"400 prompt too long", reply(400, `{"error":{"message":"prompt is too long: 300000 tokens > 200000 maximum"}}`), failure.ContextLength, 400, 1},
		{"400 other", reply(400, `{"error":{"message":"bad temperature"}}`), failure.APIError, 400, 1},
		{"401", reply(401, `{"error":{"message":"invalid key"}}`), failure.APIError, 401, 1},
		{"403", reply(403, `forbidden`), failure.APIError, 403, 1},
		{"404", reply(404, `{"error":{"message":"no such model"}}`), failure.APIError, 404, 1},
		{"422", reply(422, `{"detail":"unprocessable"}`), failure.APIError, 422, 1},
		{"malformed", reply(200, `{"id":"x","choices":[{"message":`), failure.APIError, 200, 3},
		{"not json", reply(200, `<html>proxy error</html>`), failure.APIError, 200, 3},
		{"empty choices", reply(200, `{"id":"x","choices":[]}`), failure.EmptyResponse, 200, 3},
		{"empty content", reply(200, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"  "},"finish_reason":"stop"}]}`), failure.EmptyResponse, 200, 1},
		{"reset", hangUp, failure.ServerError, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				tc.h(w, r)
			}, func(c *Config) { c.MaxRetries = maxRetries })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := c.Complete(ctx, chatReq())
			var f *failure.Error
			if !errors.As(err, &f) {
				t.Fatalf("error %v (%T) is not a *failure.Error", err, err)
			}
			if f.Category != tc.cat || f.Status != tc.status || f.Attempts != tc.attempts {
				t.Errorf("got %s status %d attempts %d, want %s %d %d (%v)", f.Category, f.Status, f.Attempts, tc.cat, tc.status, tc.attempts, err)
			}
			if int(n.Load()) != tc.attempts {
				t.Errorf("server saw %d requests, want %d", n.Load(), tc.attempts)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := New(Config{BaseURL: "http://" + addr + "/v1", Model: "m", RetryBase: time.Millisecond, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), chatReq())
	var f *failure.Error
	if !errors.As(err, &f) || f.Category != failure.ServerError || f.Attempts != 2 {
		t.Errorf("refused: %v", err)
	}
}

func TestRecoversAfterTransientFailures(t *testing.T) {
	var n atomic.Int32
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			// Closed, so that the hang-up comes on a new connection:
			// on a kept-alive one the transport resends at once,
			// without an attempt (TestRedialKeptAliveClosed).
			w.Header().Set("Connection", "close")
			reply(503, "")(w, r)
		case 2:
			hangUp(w, r)
		case 3:
			reply(200, `{"choices":[]}`)(w, r)
		default:
			reply(200, okChat)(w, r)
		}
	})
	r, err := c.Complete(context.Background(), chatReq())
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 4 || r.Content != "The answer is 4." {
		t.Errorf("response %+v, want attempts 4", r)
	}
}

func TestRetryAfterRespected(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		first := len(times) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "1")
			reply(429, `{"error":{"message":"wait"}}`)(w, r)
			return
		}
		reply(200, okChat)(w, r)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Complete(ctx, chatReq())
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 2 || len(times) != 2 {
		t.Fatalf("attempts %d, requests %d", r.Attempts, len(times))
	}
	// The backoff alone (1-5ms here) would retry at once.
	if gap := times[1].Sub(times[0]); gap < time.Second {
		t.Errorf("second request %v after the first, want ≥ 1s (Retry-After: 1)", gap)
	}
}

func TestRetryAfterParse(t *testing.T) {
	h := http.Header{}
	for _, tc := range []struct {
		v        string
		min, max time.Duration
	}{
		{"", 0, 0},
		{"2", 2 * time.Second, 2 * time.Second},
		{"0.5", 500 * time.Millisecond, 500 * time.Millisecond},
		{"-1", 0, 0},
		{"soon", 0, 0},
		{time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat), 3 * time.Second, 5 * time.Second},
		{time.Now().Add(-time.Minute).UTC().Format(http.TimeFormat), 0, 0},
	} {
		h.Set("Retry-After", tc.v)
		if d := retryAfter(h); d < tc.min || d > tc.max {
			t.Errorf("Retry-After %q = %v, want in [%v, %v]", tc.v, d, tc.min, tc.max)
		}
	}
}

func TestBackoff(t *testing.T) {
	base, max := 100*time.Millisecond, time.Second
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 80: time.Second} {
		lo, hi := want/2, want*3/2
		seen := map[time.Duration]bool{}
		for range 50 {
			d := backoff(base, max, n)
			if d < lo || d >= hi {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v)", n, d, lo, hi)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("backoff(%d) has little jitter: %d distinct values of 50", n, len(seen))
		}
	}
}

func TestBudgetExhaustionReturnsQuickly(t *testing.T) {
	var n atomic.Int32
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "30")
		reply(429, `{"error":{"message":"wait"}}`)(w, r)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Complete(ctx, chatReq())
	el := time.Since(start)
	var f *failure.Error
	if !errors.As(err, &f) || f.Category != failure.RateLimit || f.Attempts != 1 || n.Load() != 1 {
		t.Fatalf("got %v (requests %d), want rate_limit after 1 attempt", err, n.Load())
	}
	if el > 500*time.Millisecond {
		t.Errorf("took %v: it slept toward the deadline instead of giving up", el)
	}

	// Exponential backoff: base 1s, budget 300ms: the first wait (≥ 0.5s)
	// already passes the deadline.
	c, _ = server(t, reply(500, ""), func(c *Config) { c.RetryBase = time.Second })
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = c.Complete(ctx, chatReq())
	if !errors.As(err, &f) || f.Category != failure.ServerError || f.Attempts != 1 || time.Since(start) > 200*time.Millisecond {
		t.Errorf("got %v after %v, want server_error at once", err, time.Since(start))
	}
}

func TestBudgetSpentRetrying(t *testing.T) {
	// Fast 500s, fast retries, no retry cap: the budget runs out while
	// retrying, and the failure is the server's, not a timeout.
	var n atomic.Int32
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(2 * time.Millisecond)
		reply(500, "")(w, r)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Complete(ctx, chatReq())
	var f *failure.Error
	if !errors.As(err, &f) || f.Category != failure.ServerError || f.Status != 500 || f.Attempts < 5 || int(n.Load()) < f.Attempts-1 {
		t.Errorf("got %v (attempts %d, requests %d), want server_error after many attempts", err, f.Attempts, n.Load())
	}
}

func TestTimeouts(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Complete(ctx, chatReq())
	var f *failure.Error
	if !errors.As(err, &f) || f.Category != failure.Timeout || f.Attempts != 1 {
		t.Errorf("sample budget: got %v, want timeout after 1 attempt", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("took %v", el)
	}

	// A per-request timeout is retried inside the budget.
	var n atomic.Int32
	c, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			io.Copy(io.Discard, r.Body)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		reply(200, okChat)(w, r)
	}, func(c *Config) { c.RequestTimeout = 100 * time.Millisecond })
	r, err := c.Complete(context.Background(), chatReq())
	if err != nil || r.Attempts != 2 {
		t.Errorf("request timeout then success: %+v %v", r, err)
	}

	// Per-request timeouts until the budget is gone: timeout.
	c, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, func(c *Config) { c.RequestTimeout = 50 * time.Millisecond })
	ctx, cancel = context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err = c.Complete(ctx, chatReq())
	if !errors.As(err, &f) || f.Category != failure.Timeout || f.Attempts < 2 {
		t.Errorf("request timeouts: got %v (attempts %d), want timeout after several attempts", err, f.Attempts)
	}
}

func TestCancelIsInterrupted(t *testing.T) {
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so the server notices the client leave
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Complete(ctx, chatReq())
	var f *failure.Error
	if !errors.As(err, &f) || f.Category != failure.Interrupted {
		t.Errorf("got %v, want interrupted", err)
	}
}

func TestAPIKeyNeverInError(t *testing.T) {
	const key = "sk-very-secret-0123456789"
	for _, status := range []int{401, 500} {
		var n atomic.Int32
		c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			// A badly behaved server echoes the header back.
			reply(status, fmt.Sprintf(`{"error":{"message":"bad header %s"}}`, r.Header.Get("Authorization")))(w, r)
		}, func(c *Config) { c.APIKey = key; c.MaxRetries = 1 })
		_, err := c.Complete(context.Background(), chatReq())
		if err == nil {
			t.Fatal("no error")
		}
		if strings.Contains(err.Error(), key) || strings.Contains(fmt.Sprintf("%+v", err), key) {
			t.Errorf("error text contains the key: %v", err)
		}
		var f *failure.Error
		if !errors.As(err, &f) || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("error %v should be a failure with the key redacted", err)
		}
		if status == 401 && n.Load() != 1 {
			t.Errorf("401 was retried: %d requests", n.Load())
		}
	}
}

func TestConnectionReuse(t *testing.T) {
	const maxConc, calls = 4, 64
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		reply(200, okChat)(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", MaxConcurrent: maxConc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Go(func() {
			if _, err := c.Complete(context.Background(), chatReq()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := conns.Load(); n < 1 || n > maxConc {
		t.Errorf("%d connections for %d calls, want 1..%d", n, calls, maxConc)
	}
}

func TestNew(t *testing.T) {
	for _, cfg := range []Config{
		{Model: "m"},
		{BaseURL: "http://x/v1"},
		{BaseURL: "http://x/v1", Model: "m", Protocol: "grpc"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestRaiseOpenFiles(t *testing.T) {
	n, err := RaiseOpenFiles(1)
	if err != nil || n < 1 {
		t.Errorf("RaiseOpenFiles(1) = %d, %v", n, err)
	}
	m, err := RaiseOpenFiles(1 << 20)
	if err != nil {
		t.Logf("raising (may be refused in a sandbox): %v", err)
	}
	if m < n {
		t.Errorf("limit went down: %d < %d", m, n)
	}
}
