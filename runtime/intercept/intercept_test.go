package intercept

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// recorder is a fake endpoint: it keeps every request it is sent and
// answers with body (status 200 unless set).
type recorder struct {
	mu     sync.Mutex
	got    []*Request
	status int
	header http.Header
	body   string
}

func (e *recorder) handle(_ context.Context, req *Request) (*Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, req)
	st := e.status
	if st == 0 {
		st = 200
	}
	h := e.header
	if h == nil {
		h = http.Header{"Content-Type": {"application/json"}}
	}
	return &Response{Status: st, Header: h.Clone(), Body: []byte(e.body)}, nil
}

func (e *recorder) calls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.got)
}

// chainOf builds the chain of (name, config JSON) pairs.
func chainOf(t *testing.T, pairs ...string) *Chain {
	t.Helper()
	var specs []plan.Interceptor
	for i := 0; i < len(pairs); i += 2 {
		specs = append(specs, plan.Interceptor{Name: pairs[i], Config: configOf(t, pairs[i+1])})
	}
	c, err := Build(specs, Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// run sends body through the chain to e and returns what e got and the
// response body.
func run(t *testing.T, c *Chain, e *recorder, body string) (sent map[string]any, resp *Response) {
	t.Helper()
	req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{}, Raw: []byte(body), Body: decodeBody([]byte(body))}
	resp, err := c.Handler(e.handle)(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.calls(); n > 0 {
		sent = e.got[n-1].Body
	}
	return sent, resp
}

// roles lists the messages as role:content.
func roles(body map[string]any) []string {
	var out []string
	for _, m := range body["messages"].([]any) {
		mm := m.(map[string]any)
		out = append(out, mm["role"].(string)+":"+contentText(mm["content"]))
	}
	return out
}

const convo = `{"model":"m","messages":[{"role":"system","content":"old"},{"role":"user","content":"q"}]}`

func TestSystemMessageStrategies(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		want     []string
	}{
		{"", []string{"system:new", "system:old", "user:q"}},
		{"prepend", []string{"system:new", "system:old", "user:q"}},
		{"append", []string{"system:old", "user:q", "system:new"}},
		{"replace", []string{"system:new", "user:q"}},
	} {
		cfg := `{"system_message":"new"}`
		if tc.strategy != "" {
			cfg = `{"system_message":"new","strategy":"` + tc.strategy + `"}`
		}
		sent, _ := run(t, chainOf(t, "system_message", cfg), &recorder{body: `{}`}, convo)
		if got := roles(sent); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("strategy %q: messages %v, want %v", tc.strategy, got, tc.want)
		}
	}
}

func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct{ name, cfg, want string }{
		{"system_message", `{}`, "system_message is required"},
		{"system_message", `{"system_message":"x","strategy":"middle"}`, `strategy "middle"`},
		{"drop_params", `{"param":["x"]}`, `unknown field "param"`},
		{"caching", `{}`, "cache_dir is required"},
		{"payload_modifier", `{"headers_to_add":{"Host":"x"}}`, "hop-by-hop"},
		{"response_stats", `{"every":0}`, "not a positive count"},
		{"progress_tracking", `{"webhook_url":"http://x"}`, "webhook_url: not supported"},
		{"turn_counter", `{"max_turns":0}`, "not a positive count"},
		{"endpoint", `{}`, "not supported: the upstream call is always the chain's last step"},
		{"no_such", `{}`, `unknown interceptor "no_such"`},
	} {
		_, err := Build([]plan.Interceptor{{Name: "logging"}, {Name: tc.name, Config: configOf(t, tc.cfg)}}, Env{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "interceptors[1] ("+tc.name+")") {
			t.Errorf("%s %s: error %v, want it to name interceptors[1] and say %q", tc.name, tc.cfg, err, tc.want)
		}
	}
}

func TestDropParams(t *testing.T) {
	sent, _ := run(t, chainOf(t, "drop_params", `{"params":["temperature","seed"]}`), &recorder{body: `{}`},
		`{"model":"m","temperature":0.7,"seed":3,"top_p":0.95,"messages":[]}`)
	if _, ok := sent["temperature"]; ok {
		t.Error("temperature was sent")
	}
	if _, ok := sent["seed"]; ok {
		t.Error("seed was sent")
	}
	if sent["top_p"] != json.Number("0.95") {
		t.Errorf("top_p = %v, want 0.95 as written", sent["top_p"])
	}
}

func TestPayloadModifier(t *testing.T) {
	c := chainOf(t, "payload_modifier", `{"params_to_remove":["logprobs"],"params_to_rename":{"max_tokens":"max_completion_tokens"},
		"params_to_add":{"chat_template_kwargs":{"enable_thinking":false}},
		"headers_to_add":{"X-Team":"eval"},"headers_to_remove":["X-Drop"],"headers_to_rename":{"X-Old":"X-New"}}`)
	e := &recorder{body: `{}`}
	req := &Request{Method: "POST", Path: "/v1/chat/completions",
		Header: http.Header{"X-Drop": {"1"}, "X-Old": {"v"}},
		Body:   decodeBody([]byte(`{"max_tokens":8,"logprobs":true,"messages":[{"role":"user","content":"q","logprobs":1}]}`))}
	if _, err := c.Handler(e.handle)(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := e.got[0]
	b, _ := encodeJSON(got.Body)
	const want = `{"chat_template_kwargs":{"enable_thinking":false},"max_completion_tokens":8,"messages":[{"content":"q","role":"user"}]}`
	if string(b) != want {
		t.Errorf("body %s\nwant %s", b, want)
	}
	if got.Header.Get("X-Team") != "eval" || got.Header.Get("X-Drop") != "" || got.Header.Get("X-Old") != "" || got.Header.Get("X-New") != "v" {
		t.Errorf("headers %v", got.Header)
	}
}

func TestConsolidateSystem(t *testing.T) {
	c := chainOf(t, "consolidate_system", `{"separator":" | "}`)
	sent, _ := run(t, c, &recorder{body: `{}`},
		`{"messages":[{"role":"user","content":"q"},{"role":"system","content":"a"},{"role":"system","content":[{"type":"text","text":"b"},{"type":"text","text":"c"}]}]}`)
	want := []string{"system:a | b\nc", "user:q"}
	if got := roles(sent); !reflect.DeepEqual(got, want) {
		t.Errorf("messages %q, want %q", got, want)
	}
	// One system message, first: left as it is.
	sent, _ = run(t, c, &recorder{body: `{}`}, convo)
	if got := roles(sent); !reflect.DeepEqual(got, []string{"system:old", "user:q"}) {
		t.Errorf("messages %q changed", got)
	}
}

func TestModifyTools(t *testing.T) {
	c := chainOf(t, "modify_tools", `{"strip_properties":["timeout"],"add_properties":{"reason":{"type":"string"},"cmd":{"type":"integer"}}}`)
	sent, _ := run(t, c, &recorder{body: `{}`},
		`{"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"cmd":{"type":"string"},"timeout":{"type":"integer"}},"required":["cmd","timeout"]}}}]}`)
	b, _ := encodeJSON(sent["tools"])
	const want = `[{"function":{"name":"bash","parameters":{"properties":{"cmd":{"type":"string"},"reason":{"type":"string"}},"required":["cmd"],"type":"object"}},"type":"function"}]`
	if string(b) != want {
		t.Errorf("tools %s\nwant %s", b, want)
	}
}

func TestReasoning(t *testing.T) {
	c := chainOf(t, "reasoning", `{}`)
	for _, tc := range []struct{ in, want string }{
		{`{"choices":[{"message":{"content":"  <think> hmm\n</think>\n\n42"}}]}`, `{"choices":[{"message":{"content":"42","reasoning_content":"hmm"}}]}`},
		{`{"choices":[{"message":{"content":"42","reasoning":"r"}}]}`, `{"choices":[{"message":{"content":"42","reasoning_content":"r"}}]}`},
		{`{"choices":[{"message":{"content":"x <think>no</think>"}}]}`, `{"choices":[{"message":{"content":"x <think>no</think>"}}]}`},
	} {
		_, resp := run(t, c, &recorder{body: tc.in}, `{}`)
		if string(resp.Body) != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.in, resp.Body, tc.want)
		}
	}
}

func TestFinishReason(t *testing.T) {
	c := chainOf(t, "finish_reason", `{}`)
	for _, tc := range []struct{ req, resp, want string }{
		// At the cap: a stop is a truncation.
		{`{"max_tokens":5}`, `{"choices":[{"finish_reason":"stop","message":{"content":"abc"}}],"usage":{"completion_tokens":5}}`, "length"},
		{`{"max_completion_tokens":5,"max_tokens":100}`, `{"choices":[{"finish_reason":"stop","message":{"content":"abc"}}],"usage":{"completion_tokens":5}}`, "length"},
		// Below the cap, or no cap: left alone.
		{`{"max_tokens":6}`, `{"choices":[{"finish_reason":"stop","message":{"content":"abc"}}],"usage":{"completion_tokens":5}}`, "stop"},
		{`{}`, `{"choices":[{"finish_reason":"stop","message":{"content":"abc"}}],"usage":{"completion_tokens":5}}`, "stop"},
	} {
		_, resp := run(t, c, &recorder{body: tc.resp}, tc.req)
		got := decodeBody(resp.Body)["choices"].([]any)[0].(map[string]any)["finish_reason"]
		if got != tc.want {
			t.Errorf("request %s: finish_reason %v, want %s", tc.req, got, tc.want)
		}
	}
}

func TestStreamingCoalesces(t *testing.T) {
	sse := "data: {\"id\":\"c1\",\"model\":\"m\",\"created\":7,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\",\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"c\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"md\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"completion_tokens\":4}}\n\n" +
		"data: [DONE]\n\n"
	e := &recorder{body: sse, header: http.Header{"Content-Type": {"text/event-stream"}}}
	_, resp := run(t, chainOf(t, "streaming", `{}`), e, `{"stream":true}`)
	const want = `{"choices":[{"finish_reason":"tool_calls","index":0,"message":{"content":"Hello","role":"assistant","tool_calls":[{"function":{"arguments":"{\"cmd\":1}","name":"bash"},"id":"t1","type":"function"}]}}],"created":7,"id":"c1","model":"m","object":"chat.completion","usage":{"completion_tokens":4}}`
	if string(resp.Body) != want || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %s (%s)\nwant %s", resp.Body, resp.Header.Get("Content-Type"), want)
	}
	// A JSON answer only has its null content made "".
	_, resp = run(t, chainOf(t, "streaming", `{}`), &recorder{body: `{"choices":[{"message":{"content":null}}]}`}, `{}`)
	if string(resp.Body) != `{"choices":[{"message":{"content":""}}]}` {
		t.Errorf("got %s", resp.Body)
	}
}

func TestCachingReplaysPerSample(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"cache_dir":` + jsonString(filepath.Join(dir, "c")) + `}`
	e := &recorder{body: `{"choices":[{"message":{"content":"42"}}]}`}
	send := func(c *Chain, s Sample) *Response {
		req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{},
			Body: decodeBody([]byte(`{"messages":[{"role":"user","content":"q"}],"temperature":0.7}`)), Sample: s}
		resp, err := c.Handler(e.handle)(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	c := chainOf(t, "caching", cfg)
	if r := send(c, Sample{Item: "a", Repeat: 0}); r.Cached {
		t.Error("first call came from the cache")
	}
	send(c, Sample{Item: "a", Repeat: 1}) // another repeat: another answer
	if e.calls() != 2 {
		t.Fatalf("%d model calls, want 2", e.calls())
	}
	c.Close()
	// A new chain on the same directory (a re-run) replays both.
	c2 := chainOf(t, "caching", cfg)
	for rep := range 2 {
		if r := send(c2, Sample{Item: "a", Repeat: rep}); !r.Cached || string(r.Body) != e.body {
			t.Errorf("repeat %d: cached %v body %s", rep, r.Cached, r.Body)
		}
	}
	if e.calls() != 2 {
		t.Errorf("%d model calls after the re-run, want still 2", e.calls())
	}
	// Failures are not kept; bypass neither reads nor writes.
	e.status, e.body = 500, `{"error":"x"}`
	send(c2, Sample{Item: "b"})
	send(c2, Sample{Item: "b"})
	if e.calls() != 4 {
		t.Errorf("%d model calls, want a 500 asked again (4)", e.calls())
	}
	e.status, e.body = 200, `{"choices":[]}`
	bp := chainOf(t, "caching", `{"cache_dir":`+jsonString(filepath.Join(dir, "c"))+`,"bypass":true}`)
	if r := send(bp, Sample{Item: "a"}); r.Cached {
		t.Error("bypass read the cache")
	}
}

func TestCachingConcurrentShards(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"cache_dir":` + jsonString(dir) + `}`
	e := &recorder{body: `{"choices":[{"message":{"content":"ok"}}]}`}
	var wg sync.WaitGroup
	for shard := range 4 {
		c := chainOf(t, "caching", cfg) // its own database handle, as a shard has
		for i := range 25 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := &Request{Method: "POST", Path: "/p", Header: http.Header{}, Body: map[string]any{"n": json.Number(strconv.Itoa(i))},
					Sample: Sample{Item: strconv.Itoa(shard)}}
				if _, err := c.Handler(e.handle)(context.Background(), req); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	if e.calls() != 100 {
		t.Errorf("%d calls, want 100", e.calls())
	}
	// The database is in WAL mode, with a busy timeout: shards that
	// write at once wait for each other instead of failing.
	db, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	var timeout, rows int
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v; want wal", mode, err)
	}
	if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&timeout); err != nil || timeout != 30000 {
		t.Errorf("busy_timeout %d, %v", timeout, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM cache_v1`).Scan(&rows); err != nil || rows != 100 {
		t.Errorf("%d rows, %v; want 100", rows, err)
	}
}

// configOf is a config as the plan holds it.
func configOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("config %s: %v", s, err)
	}
	return m
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestChainOrder(t *testing.T) {
	// Request edits run in list order: the second system_message is
	// prepended after the first, so it ends up first.
	c := chainOf(t, "system_message", `{"system_message":"one"}`, "system_message", `{"system_message":"two"}`)
	sent, _ := run(t, c, &recorder{body: `{}`}, `{"messages":[{"role":"user","content":"q"}]}`)
	if got := roles(sent); !reflect.DeepEqual(got, []string{"system:two", "system:one", "user:q"}) {
		t.Errorf("messages %q", got)
	}
	if !reflect.DeepEqual(c.Names(), []string{"system_message", "system_message"}) {
		t.Errorf("names %v", c.Names())
	}
}

func TestChangesRequest(t *testing.T) {
	for name, want := range map[string]bool{
		"system_message": true, "drop_params": true, "payload_modifier": true, "consolidate_system": true,
		"modify_tools": true, "reasoning": true, "finish_reason": true, "streaming": true, "raise_client_errors": true,
		"caching": false, "logging": false, "log_tokens": false, "response_stats": false, "progress_tracking": false,
	} {
		if got := ChangesRequest(name); got != want {
			t.Errorf("ChangesRequest(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestWithTurnKeepsTheSample(t *testing.T) {
	ctx := WithSample(context.Background(), Sample{Benchmark: "b", Item: "i", Repeat: 2})
	got := SampleOf(WithTurn(ctx, 3))
	if got != (Sample{Benchmark: "b", Item: "i", Repeat: 2, Turn: 3}) {
		t.Errorf("sample %+v", got)
	}
	if SampleOf(ctx).Turn != 0 {
		t.Error("the parent context changed")
	}
}

// decodeBody takes what a json.Decoder into a map takes: an object, with
// anything after it ignored; nil for an array, a scalar, null or an error.
// Objects now go through jsonany, the rest through encoding/json.
func TestDecodeBodyKinds(t *testing.T) {
	for in, want := range map[string]map[string]any{
		`{"a":1,"s":"\u003cthink\u003e"}`: {"a": json.Number("1"), "s": "<think>"},
		`{"a":1} trailing`:                {"a": json.Number("1")},
		" {\"a\":\"caf\xe9\"}":            {"a": "caf\uFFFD"},
		`[{"a":1}]`:                       nil,
		`null`:                            nil,
		`"s"`:                             nil,
		`{"a":`:                           nil,
	} {
		if got := decodeBody([]byte(in)); !reflect.DeepEqual(got, want) {
			t.Errorf("decodeBody(%q) = %#v, want %#v", in, got, want)
		}
	}
}
