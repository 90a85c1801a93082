package intercept

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// upstream is a recording model endpoint.
type upstream struct {
	mu     sync.Mutex
	bodies []map[string]any
	auth   []string
	paths  []string
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.bodies = append(u.bodies, decodeBody(b))
	u.auth = append(u.auth, r.Header.Get("Authorization"))
	u.paths = append(u.paths, r.URL.Path)
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"x","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"<think>t</think>42"}}],"usage":{"completion_tokens":3}}`)
}

func post(t *testing.T, url, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer agent-own-key")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, decodeBody(b)
}

// TestProxyForAnotherProcess: an agent that is not nel (a plain HTTP
// client) gets the chain: the system message and the model name reach the
// upstream, the upstream's key replaces the agent's, the reasoning link
// splits <think>, and the same request again is answered from the cache.
func TestProxyForAnotherProcess(t *testing.T) {
	up := &upstream{}
	us := httptest.NewServer(up)
	defer us.Close()
	cfg := ProxyConfig{Upstream: us.URL + "/v1", Model: "served", Interceptors: []plan.Interceptor{
		{Name: "system_message", Config: configOf(t, `{"system_message":"Be brief."}`)},
		{Name: "caching", Config: configOf(t, `{"cache_dir":`+jsonString(t.TempDir())+`}`)},
		{Name: "reasoning"},
	}}
	p, err := NewProxy(cfg, "upstream-key", nil, Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ps := httptest.NewServer(p)
	defer ps.Close()

	const body = `{"messages":[{"role":"user","content":"q"}],"temperature":0}`
	resp, got := post(t, ps.URL+"/v1/chat/completions", body)
	if resp.StatusCode != 200 || resp.Header.Get(CachedHeader) != "" {
		t.Fatalf("status %d, cached %q", resp.StatusCode, resp.Header.Get(CachedHeader))
	}
	msg := got["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "42" || msg["reasoning_content"] != "t" {
		t.Errorf("message %v: want content 42, reasoning_content t", msg)
	}
	if len(up.bodies) != 1 {
		t.Fatalf("%d upstream calls", len(up.bodies))
	}
	if up.paths[0] != "/v1/chat/completions" || up.auth[0] != "Bearer upstream-key" || up.bodies[0]["model"] != "served" {
		t.Errorf("upstream got path %s, auth %q, model %v", up.paths[0], up.auth[0], up.bodies[0]["model"])
	}
	if got := roles(up.bodies[0]); strings.Join(got, ",") != "system:Be brief.,user:q" {
		t.Errorf("upstream messages %v", got)
	}

	resp, _ = post(t, ps.URL+"/v1/chat/completions", body)
	if resp.Header.Get(CachedHeader) != "true" || len(up.bodies) != 1 {
		t.Errorf("second call: cached %q, %d upstream calls (want a cache hit, 1)", resp.Header.Get(CachedHeader), len(up.bodies))
	}
	// Another session is another sample: asked again.
	post(t, ps.URL+"/s/abc123/v1/chat/completions", body)
	if len(up.bodies) != 2 || up.paths[1] != "/v1/chat/completions" {
		t.Errorf("session call: %d upstream calls, path %v", len(up.bodies), up.paths)
	}

	h, err := http.Get(ps.URL + "/health")
	if err != nil || h.StatusCode != 200 {
		t.Fatalf("health: %v %v", h, err)
	}
	h.Body.Close()
	h, _ = http.Get(ps.URL + "/v1/models")
	if h.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/models: %d, want 405", h.StatusCode)
	}
	h.Body.Close()
}

func TestLoadProxyConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "p.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := LoadProxyConfig(write(`{"upstream":"http://h:8000/v1","interceptors":[{"name":"logging"}]}`))
	if err != nil || c.Listen != "127.0.0.1:4000" || c.Interceptors[0].Name != "logging" {
		t.Errorf("config %+v, err %v", c, err)
	}
	for in, want := range map[string]string{
		`{"interceptors":[]}`:                    "upstream: required",
		`{"upstream":"h:8000"}`:                  "want an http://",
		`{"upstream":"http://h","api_key":"sk"}`: `unknown field "api_key"`,
	} {
		if _, err := LoadProxyConfig(write(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

// TestProxyRequestTimeout: proxy.request_timeout bounds each upstream
// call; one that runs past it answers the agent 504, as NeMo's adapter
// does, and a quick one passes.
func TestProxyRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "slow") {
			<-release
		}
		io.WriteString(w, `{"choices":[]}`)
	}))
	defer slow.Close()
	defer close(release)
	p, err := NewProxy(ProxyConfig{Upstream: slow.URL + "/v1", RequestTimeout: 0.2}, "", nil, Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ps := httptest.NewServer(p)
	defer ps.Close()
	resp, got := post(t, ps.URL+"/v1/slow", `{}`)
	msg, _ := got["error"].(map[string]any)["message"].(string)
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(msg, "request_timeout (0.2s)") {
		t.Errorf("slow call: %d %q, want 504 naming request_timeout", resp.StatusCode, msg)
	}
	if resp, _ := post(t, ps.URL+"/v1/chat/completions", `{}`); resp.StatusCode != 200 {
		t.Errorf("quick call: %d, want 200", resp.StatusCode)
	}
}
