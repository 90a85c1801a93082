package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
)

// fakeBench is an arithmetic benchmark: item i asks for i+1. Respond draws a
// filler from rng, so determinism tests see whether rng is seeded alike.
func fakeBench() *bench.Benchmark {
	return &bench.Benchmark{
		Name: "fake",
		Score: func(it *bench.Item, response string) bench.Score {
			_, ans, ok := strings.Cut(response, "The answer is ")
			ok = ok && strings.TrimSpace(ans) == it.Expected
			return bench.Score{Binary: true, Correct: ok, Reward: map[bool]float64{true: 1}[ok], Extracted: ans}
		},
		Respond: func(it *bench.Item, correct bool, rng *rand.Rand) string {
			ans := it.Expected
			if !correct {
				n, _ := strconv.Atoi(it.Expected)
				ans = strconv.Itoa(n + 1 + rng.IntN(5))
			}
			return fmt.Sprintf("Let me think (%d). The answer is %s", rng.IntN(1_000_000), ans)
		},
	}
}

func fakeItems(n int) []bench.Item {
	items := make([]bench.Item, n)
	for i := range items {
		q := fmt.Sprintf("Question %d: what is %d + 1?", i, i)
		items[i] = bench.Item{
			ID:       fmt.Sprintf("id%d", i),
			Index:    i,
			Messages: []bench.Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: q}},
			Prompt:   "Q: " + q + "\nA:",
			Expected: strconv.Itoa(i + 1),
		}
	}
	return items
}

type fixture struct {
	sim   *Server
	srv   *httptest.Server
	b     *bench.Benchmark
	items []bench.Item
}

func start(t testing.TB, cfg Config, n int) *fixture {
	t.Helper()
	f := &fixture{b: fakeBench(), items: fakeItems(n)}
	var err error
	f.sim, err = New(cfg, Dataset{Benchmark: f.b, Items: f.items})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = newServer(t, f.sim)
	return f
}

func newServer(t testing.TB, s *Server) *httptest.Server {
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func (f *fixture) client(t testing.TB, mod ...func(*model.Config)) *model.Client {
	t.Helper()
	cfg := model.Config{BaseURL: f.srv.URL + "/v1", Model: f.sim.Config().Model, MaxConcurrent: 8,
		RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := model.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func chat(it *bench.Item, seed int64) model.Request {
	msgs := make([]model.Message, len(it.Messages))
	for i, m := range it.Messages {
		msgs[i] = model.Message{Role: m.Role, Content: m.Content}
	}
	return model.Request{Messages: msgs, Seed: seed}
}

// runAll sends every item once and returns the responses, in item order.
func runAll(t *testing.T, c *model.Client, items []bench.Item, seed int64) []*model.Response {
	t.Helper()
	out := make([]*model.Response, len(items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	var mu sync.Mutex
	var errs []error
	for i := range items {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := c.Complete(context.Background(), chat(&items[i], seed))
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			out[i] = r
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d requests failed, e.g. %v", len(errs), errs[0])
	}
	return out
}

func TestAccuracy(t *testing.T) {
	const n, acc = 2000, 0.7
	f := start(t, Config{Accuracy: acc, Seed: 1}, n)
	c := f.client(t)
	rs := runAll(t, c, f.items, 3)
	correct := 0
	for i, r := range rs {
		if !r.Simulated || r.Model != DefaultModel || r.FinishReason != "stop" || r.CompletionTokens <= 0 || r.PromptTokens <= 0 {
			t.Fatalf("item %d: response %+v", i, r)
		}
		// Score with the benchmark, independently of the server's counts.
		if f.b.Score(&f.items[i], r.Content).Correct {
			correct++
		}
	}
	rate := float64(correct) / n
	sigma := math.Sqrt(acc * (1 - acc) / n)
	if math.Abs(rate-acc) > 4*sigma {
		t.Errorf("accuracy %.3f, want %.2f ± %.3f", rate, acc, 4*sigma)
	}
	st := f.sim.Stats()
	if st.Correct != int64(correct) || st.Correct+st.Wrong != n || st.Unknown != 0 || st.Requests != n {
		t.Errorf("stats %+v, scored correct %d", st, correct)
	}

	for _, acc := range []float64{1, 1e-9} {
		f := start(t, Config{Accuracy: acc}, 200)
		rs := runAll(t, f.client(t), f.items, 0)
		for i, r := range rs {
			if got := f.b.Score(&f.items[i], r.Content).Correct; got != (acc == 1) {
				t.Fatalf("accuracy %v: item %d scored %v: %q", acc, i, got, r.Content)
			}
		}
	}
}

func TestDeterminism(t *testing.T) {
	const n = 300
	a := start(t, Config{Accuracy: 0.5, Seed: 7}, n)
	b := start(t, Config{Accuracy: 0.5, Seed: 7}, n)
	other := start(t, Config{Accuracy: 0.5, Seed: 8}, n)
	ra := runAll(t, a.client(t), a.items, 11)
	ra2 := runAll(t, a.client(t), a.items, 11)
	rb := runAll(t, b.client(t), b.items, 11)
	rSeed := runAll(t, a.client(t), a.items, 12)
	rOther := runAll(t, other.client(t), other.items, 11)
	diffSeed, diffOther := 0, 0
	for i := range ra {
		if ra[i].Content != ra2[i].Content || ra[i].Content != rb[i].Content {
			t.Fatalf("item %d: answers differ for the same request: %q %q %q", i, ra[i].Content, ra2[i].Content, rb[i].Content)
		}
		if ra[i].Content != rSeed[i].Content {
			diffSeed++
		}
		if ra[i].Content != rOther[i].Content {
			diffOther++
		}
	}
	// The filler is one of 10^6 values: nearly all answers differ.
	if diffSeed < n*9/10 || diffOther < n*9/10 {
		t.Errorf("another request seed changed %d/%d answers, another server seed %d/%d", diffSeed, n, diffOther, n)
	}
}

func TestCompletionsProtocol(t *testing.T) {
	f := start(t, Config{}, 20)
	c := f.client(t, func(c *model.Config) { c.Protocol = model.Completions })
	for i := range f.items {
		r, err := c.Complete(context.Background(), model.Request{Prompt: f.items[i].Prompt, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !f.b.Score(&f.items[i], r.Content).Correct || !r.Simulated {
			t.Errorf("item %d: %+v", i, r)
		}
	}
	r, err := c.Complete(context.Background(), model.Request{Prompt: "never seen"})
	if err != nil || r.Content != UnknownAnswer {
		t.Errorf("unknown prompt: %+v %v", r, err)
	}
	if st := f.sim.Stats(); st.Correct != 20 || st.Unknown != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestMaxTokensTruncates(t *testing.T) {
	f := start(t, Config{}, 1)
	c := f.client(t)
	req := chat(&f.items[0], 0)
	req.Generation.MaxTokens = new(int64)
	*req.Generation.MaxTokens = 3
	r, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	full, err := c.Complete(context.Background(), chat(&f.items[0], 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.FinishReason != "length" || len(r.Content) != 12 || !strings.HasPrefix(full.Content, r.Content) || r.CompletionTokens != 3 {
		t.Errorf("truncated %+v (full %q)", r, full.Content)
	}
	*req.Generation.MaxTokens = 1000
	r, err = c.Complete(context.Background(), req)
	if err != nil || r.FinishReason != "stop" || r.Content != full.Content {
		t.Errorf("max_tokens 1000: %+v %v", r, err)
	}
}

func TestFaultsObservable(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		cat    failure.Category
		status int
	}{
		{"429=1", failure.RateLimit, 429},
		{"500=1", failure.ServerError, 500},
		{"reset=1", failure.ServerError, 0},
		{"malformed=1", failure.APIError, 200},
		{"empty=1", failure.EmptyResponse, 200},
		{"slow=1", failure.Timeout, 0},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			faults, err := ParseFaults(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			f := start(t, Config{Faults: faults}, 1)
			// The slow fault is seen by the deadline cutting the request;
			// the others by the client giving up after one retry, not by
			// the deadline: a retry cut by it would report the cut (on a
			// loaded machine a redial took the whole 300ms).
			limit, retries := 5*time.Second, 1
			if tc.cat == failure.Timeout {
				limit, retries = 300*time.Millisecond, 0
			}
			c := f.client(t, func(c *model.Config) { c.MaxRetries = retries })
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			start := time.Now()
			_, err = c.Complete(ctx, chat(&f.items[0], 0))
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Category != tc.cat || fe.Status != tc.status {
				t.Fatalf("got %v, want %s status %d", err, tc.cat, tc.status)
			}
			// 429's one retry waits out its Retry-After of 1s.
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("took %v", el)
			}
			st := f.sim.Stats()
			kind, _, _ := strings.Cut(tc.spec, "=")
			// Every request got the fault, except perhaps the last one,
			// which the client's deadline may cut before the fault is drawn.
			if st.Faults[kind] < 1 || st.Faults[kind] < st.Requests-1 || st.Faults[kind] > st.Requests {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestFaultsRetriedAway(t *testing.T) {
	faults, err := ParseFaults("500=0.1,reset=0.1,malformed=0.1,empty=0.1")
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	f := start(t, Config{Faults: faults}, n)
	c := f.client(t, func(c *model.Config) { c.MaxRetries = 30 })
	rs := runAll(t, c, f.items, 0)
	retried := 0
	for i, r := range rs {
		if !f.b.Score(&f.items[i], r.Content).Correct {
			t.Errorf("item %d: %q", i, r.Content)
		}
		retried += r.Attempts - 1
	}
	st := f.sim.Stats()
	var faulted int64
	for _, k := range []string{"500", "reset", "malformed", "empty"} {
		// 40% of requests fail, 10% each: expect ~n/9 per kind of the
		// ~n/0.6 requests; any kind at zero means it never fired.
		if st.Faults[k] == 0 {
			t.Errorf("fault %s never fired: %+v", k, st)
		}
		faulted += st.Faults[k]
	}
	// Every fault costs one more request. A reset on a kept-alive
	// connection, before any answer, is resent at once by the transport
	// (as a server's idle close would be), without an attempt: retries
	// cover the other faults and some of the resets.
	if st.Requests != n+faulted || int64(retried) > faulted || faulted-int64(retried) > st.Faults["reset"] {
		t.Errorf("client retried %d times, server injected %d faults (%d resets) in %d requests", retried, faulted, st.Faults["reset"], st.Requests)
	}
	if frac := float64(faulted) / float64(st.Requests); frac < 0.3 || frac > 0.5 {
		t.Errorf("fault fraction %.2f, want about 0.4", frac)
	}
}

func TestLatency(t *testing.T) {
	const lat, jit = 40 * time.Millisecond, 10 * time.Millisecond
	f := start(t, Config{Latency: lat, LatencyJitter: jit}, 10)
	c := f.client(t)
	var min, max time.Duration = time.Hour, 0
	for i := range 10 {
		start := time.Now()
		if _, err := c.Complete(context.Background(), chat(&f.items[i], 0)); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		min, max = minDur(min, d), maxDur(max, d)
	}
	if min < lat-jit || max > lat+jit+40*time.Millisecond {
		t.Errorf("latencies in [%v, %v], want in [%v, %v + slack]", min, max, lat-jit, lat+jit)
	}
}

// With MaxConcurrent 2, six requests sent at once are answered two at a
// time: the last answer comes after three latencies (without the cap, after
// one), and the first two after one latency, not later.
func TestMaxConcurrent(t *testing.T) {
	const lat, n = 60 * time.Millisecond, 6
	f := start(t, Config{Latency: lat, MaxConcurrent: 2}, n)
	c := f.client(t)
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n {
		wg.Go(func() {
			if _, err := c.Complete(context.Background(), chat(&f.items[i], 0)); err != nil {
				t.Error(err)
			}
			took[i] = time.Since(begin)
		})
	}
	wg.Wait()
	slices.Sort(took)
	if took[n-1] < 3*lat {
		t.Errorf("the last of %d answers came after %v, want at least %v (3 rounds of 2)", n, took[n-1], 3*lat)
	}
	if took[2] < 2*lat {
		t.Errorf("the third answer came after %v, want at least %v (it waited for a place)", took[2], 2*lat)
	}
	if _, err := New(Config{MaxConcurrent: -1}); err == nil {
		t.Error("New accepted MaxConcurrent -1")
	}
}

func minDur(a, b time.Duration) time.Duration { return min(a, b) }
func maxDur(a, b time.Duration) time.Duration { return max(a, b) }

func TestEndpoints(t *testing.T) {
	f := start(t, Config{Model: "sim-x"}, 1)
	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("/v1/models")
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &models) != nil || len(models.Data) != 1 || models.Data[0].ID != "sim-x" {
		t.Errorf("/v1/models: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get(Header) != "true" {
		t.Error("/v1/models not labelled")
	}
	if resp, body := get("/version"); resp.StatusCode != 200 || body != `{"version":"dev-sim"}` || resp.Header.Get("Server") != ServerName {
		t.Errorf("/version: %d %s, Server: %q", resp.StatusCode, body, resp.Header.Get("Server"))
	}
	if resp, _ := get("/health"); resp.StatusCode != 200 {
		t.Errorf("/health: %d", resp.StatusCode)
	}
	if resp, _ := get("/v1/chat/completions"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET chat: %d", resp.StatusCode)
	}

	post := func(body string) (int, map[string]any, http.Header) {
		resp, err := http.Post(f.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("response is not JSON: %v", err)
		}
		return resp.StatusCode, m, resp.Header
	}
	q, _ := json.Marshal(f.items[0].Messages[1].Content)
	code, m, h := post(`{"model":"sim-x","messages":[{"role":"user","content":[{"type":"text","text":` + string(q) + `}]}]}`)
	if code != 200 || h.Get(Header) != "true" || m["system_fingerprint"] != f.sim.Fingerprint() || h.Get("Server") != ServerName || m["object"] != "chat.completion" {
		t.Errorf("chat: %d %v", code, m)
	}
	choice := m["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if msg["role"] != "assistant" || !f.b.Score(&f.items[0], msg["content"].(string)).Correct || choice["finish_reason"] != "stop" {
		t.Errorf("chat with content parts: %v", m)
	}
	usage := m["usage"].(map[string]any)
	if usage["total_tokens"].(float64) != usage["prompt_tokens"].(float64)+usage["completion_tokens"].(float64) {
		t.Errorf("usage %v", usage)
	}
	if code, m, _ := post(`{"model":"gpt-4","messages":[{"role":"user","content":"hi"}]}`); code != 404 || m["error"] == nil {
		t.Errorf("wrong model: %d %v", code, m)
	}
	if code, _, _ := post(`{"model":"sim-x","messages":[]}`); code != 400 {
		t.Errorf("no messages: %d", code)
	}
}

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults("429=0.01, 500=0.02,reset=0.01,slow=0.01,malformed=0.01,empty=0.03")
	if err != nil {
		t.Fatal(err)
	}
	want := Faults{RateLimit: 0.01, ServerError: 0.02, Reset: 0.01, Slow: 0.01, Malformed: 0.01, Empty: 0.03}
	if f != want {
		t.Errorf("got %+v", f)
	}
	if g, err := ParseFaults(f.String()); err != nil || g != f {
		t.Errorf("String round trip: %q → %+v %v", f.String(), g, err)
	}
	if g, err := ParseFaults("rate_limit=0.5,server_error=0.5"); err != nil || g.RateLimit != 0.5 || g.ServerError != 0.5 {
		t.Errorf("aliases: %+v %v", g, err)
	}
	if g, err := ParseFaults(""); err != nil || g != (Faults{}) {
		t.Errorf("empty: %+v %v", g, err)
	}
	for _, bad := range []string{"429", "timeout=0.1", "500=x", "500=-0.1", "500=1.5", "500=0.6,429=0.6", "500=NaN"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%q) succeeded", bad)
		}
	}
}

func TestNewErrors(t *testing.T) {
	b := fakeBench()
	noRespond := *b
	noRespond.Respond = nil
	for _, tc := range []struct {
		cfg  Config
		sets []Dataset
	}{
		{Config{Accuracy: 1.5}, nil},
		{Config{Latency: -1}, nil},
		{Config{Faults: Faults{Empty: 2}}, nil},
		{Config{}, []Dataset{{Benchmark: nil}}},
		{Config{}, []Dataset{{Benchmark: &noRespond}}},
	} {
		if _, err := New(tc.cfg, tc.sets...); err == nil {
			t.Errorf("New(%+v) succeeded", tc.cfg)
		}
	}
}

func TestAppendString(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "\n", "\r", "\t", "\x00", "\x1f", "<", "&", "é", "数", "😀", "\xff", "\u2028", "/"}
	for range 2000 {
		var sb strings.Builder
		for range rng.IntN(20) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := sb.String()
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendString(%q) = %s: %v", s, b, err)
		}
		// encoding/json also turns each invalid byte into U+FFFD.
		ref, _ := json.Marshal(s)
		var want string
		json.Unmarshal(ref, &want)
		if got != want || utf8.ValidString(s) && got != s {
			t.Fatalf("appendString(%q) decodes to %q", s, got)
		}
	}
}

// BenchmarkClientSim measures requests per second through model.Client
// against the simulator over loopback TCP (no latency, no faults).
func BenchmarkClientSim(b *testing.B) {
	f := start(b, Config{Accuracy: 0.8}, 1000)
	c := f.client(b, func(c *model.Config) { c.MaxConcurrent = 64 })
	temp := 0.0
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			req := chat(&f.items[i%len(f.items)], int64(i))
			req.Generation = plan.Generation{Temperature: &temp}
			if _, err := c.Complete(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// An endpoint with an API key answers only requests that carry it, through
// nel's own client, and leaves /health open for readiness checks.
func TestAPIKey(t *testing.T) {
	f := start(t, Config{APIKey: "k-123456789"}, 3)
	r, err := f.client(t, func(c *model.Config) { c.APIKey = "k-123456789" }).Complete(context.Background(), chat(&f.items[0], 1))
	if err != nil {
		t.Fatalf("with the key: %v", err)
	}
	if r.Content == "" {
		t.Fatal("with the key: empty answer")
	}
	_, err = f.client(t, func(c *model.Config) { c.APIKey = "wrong" }).Complete(context.Background(), chat(&f.items[0], 1))
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("with a wrong key: err = %v, want a 401", err)
	}
	resp, err := http.Get(f.srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health without a key: %s", resp.Status)
	}
	if got := f.sim.Stats().Unauthorized; got != 1 {
		t.Fatalf("Unauthorized = %d, want 1", got)
	}
}

// Simulators that answer differently are told apart by their
// system_fingerprint, as servers of different builds would be; the same
// configuration gives the same one in every process.
func TestFingerprint(t *testing.T) {
	fp := func(cfg Config) string {
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s.Fingerprint()
	}
	base := fp(Config{Accuracy: 0.5, Seed: 1})
	if !strings.HasPrefix(base, "nel-sim-") || len(base) != len("nel-sim-")+12 {
		t.Fatalf("Fingerprint = %q, want nel-sim- and 12 hex digits", base)
	}
	if fp(Config{Accuracy: 0.5, Seed: 1, Latency: time.Second, Version: "v9"}) != base {
		t.Error("latency or version changed the fingerprint; they do not change answers")
	}
	for name, cfg := range map[string]Config{
		"accuracy": {Accuracy: 0.6, Seed: 1},
		"seed":     {Accuracy: 0.5, Seed: 2},
		"model":    {Accuracy: 0.5, Seed: 1, Model: "other"},
	} {
		if fp(cfg) == base {
			t.Errorf("another %s, same fingerprint %s", name, base)
		}
	}
	// The default model and accuracy are filled in before hashing.
	if fp(Config{}) != fp(Config{Model: DefaultModel, Accuracy: 1}) {
		t.Error("defaults and explicit defaults differ")
	}
}

func TestVersionIsOpenWithAPIKey(t *testing.T) {
	f := start(t, Config{APIKey: "k", Version: "v0.9.0"}, 1)
	resp, err := http.Get(f.srv.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != `{"version":"v0.9.0-sim"}` {
		t.Errorf("/version: %d %s", resp.StatusCode, b)
	}
}

// OffFormat: about that share of known items get OffFormatAnswer, the
// same ones for the same requests, and the real scorers find nothing to
// extract in it (numeric_match: no number; mcq_robust: no letter).
func TestOffFormat(t *testing.T) {
	const n, p = 2000, 0.3
	f := start(t, Config{OffFormat: p, Seed: 1}, n)
	first := runAll(t, f.client(t), f.items, 3)
	again := runAll(t, f.client(t), f.items, 3)
	off := 0
	for i, r := range first {
		if r.Content == OffFormatAnswer {
			off++
		}
		if (r.Content == OffFormatAnswer) != (again[i].Content == OffFormatAnswer) {
			t.Fatalf("item %d: off-format once, not the second time", i)
		}
	}
	if sigma := math.Sqrt(p * (1 - p) / n); math.Abs(float64(off)/n-p) > 4*sigma {
		t.Errorf("%d of %d off-format, want %.2f ± %.3f", off, n, p, 4*sigma)
	}
	for _, name := range []string{"mgsm", "mmlu"} {
		b, _ := bench.Lookup(name)
		it := &bench.Item{Expected: "4", Meta: map[string]any{"letters": "ABCD"}}
		if name == "mmlu" {
			it.Expected = "B"
		}
		if s := b.Score(it, OffFormatAnswer); s.Extracted != "" || s.Correct {
			t.Errorf("%s extracts %q from OffFormatAnswer", name, s.Extracted)
		}
	}
	if fingerprint(Config{Model: "m"}) == fingerprint(Config{Model: "m", OffFormat: p}) {
		t.Error("an off-format simulator has the fingerprint of one that is not")
	}
	if _, err := New(Config{OffFormat: 1.5}); err == nil {
		t.Error("OffFormat 1.5 accepted")
	}
}

// A body is decoded as a json.Decoder reads it: the first JSON value, what
// follows it ignored; the same answer whether or not something follows.
func TestBodyAfterFirstValue(t *testing.T) {
	f := start(t, Config{Accuracy: 1}, 1)
	msgs, _ := json.Marshal(f.items[0].Messages)
	body := `{"model":"` + f.sim.Config().Model + `","messages":` + string(msgs) + `}`
	post := func(b string) string {
		resp, err := http.Post(f.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%q: %d %s", b, resp.StatusCode, out)
		}
		var r struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.Unmarshal(out, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("%q: %s (%v)", b, out, err)
		}
		return r.Choices[0].Message.Content
	}
	plain, trailed := post(body), post(body+` {"ignored": true}`)
	if plain == "" || plain != trailed {
		t.Errorf("answers %q and, with data after the body, %q: want the same, not empty", plain, trailed)
	}
}
