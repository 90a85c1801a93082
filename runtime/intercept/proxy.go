package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
)

// ProxyConfig is `nel-run proxy --config FILE`: the chain in front of one
// upstream endpoint, for agents that call the model themselves (Harbor,
// Gym, containers) and so cannot use nel's client.
type ProxyConfig struct {
	// Listen is HOST:PORT (default 127.0.0.1:4000, NeMo's port; port 0:
	// any free port).
	Listen string `json:"listen"`
	// Upstream is the model endpoint's base URL, e.g. http://host:8000/v1.
	Upstream string `json:"upstream,omitempty"`
	// UpstreamEnv, instead, names the variable that holds it on the node
	// (a managed server's URL, known once it is up).
	UpstreamEnv string `json:"upstream_env,omitempty"`
	// Model fills a request body's "model" when the agent sent none.
	Model string `json:"model,omitempty"`
	// APIKeyEnv names the variable holding the upstream's key; the key is
	// never in the file. An agent's own Authorization is replaced by it.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Scope names this proxy's files among others of one run (a harness
	// benchmark's), as a shard's: pairs.json → pairs.<scope>.json.
	Scope        string             `json:"scope,omitempty"`
	Interceptors []plan.Interceptor `json:"interceptors"`
	// RequestTimeout bounds each upstream call, in seconds (NeMo's
	// proxy.request_timeout); a call that runs past it answers the agent
	// 504, as NeMo's adapter does. 0: no bound but the agent's own.
	RequestTimeout float64 `json:"request_timeout,omitempty"`
}

// LoadProxyConfig reads a proxy config file (JSON; unknown keys refused).
func LoadProxyConfig(path string) (ProxyConfig, error) {
	var c ProxyConfig
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case c.Upstream == "" && c.UpstreamEnv == "":
		return c, fmt.Errorf("%s: upstream: required (the model endpoint's base URL), or upstream_env", path)
	case c.Upstream != "" && c.UpstreamEnv != "":
		return c, fmt.Errorf("%s: upstream and upstream_env: give one", path)
	case c.Upstream != "":
		if err := checkUpstream(c.Upstream); err != nil {
			return c, fmt.Errorf("%s: %w", path, err)
		}
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:4000"
	}
	return c, nil
}

func checkUpstream(u string) error {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("upstream %q: want an http:// or https:// URL", u)
	}
	return nil
}

// Proxy serves the chain over HTTP: GET /health, and any POST through the
// chain to the upstream. A path /s/<hex>/… names a session (NeMo's
// routing): it keys the cache as a sample does, and is stripped.
type Proxy struct {
	cfg ProxyConfig
	key string
	// token, when set, is the only Authorization a client may send
	// (RunAgent's agent): nothing else on the network uses the key.
	token string
	chain *Chain
	base  http.RoundTripper
}

// NewProxy builds the proxy; key is the upstream's API key ("" for none).
func NewProxy(cfg ProxyConfig, key string, base http.RoundTripper, env Env) (*Proxy, error) {
	env.Proxy = true
	if cfg.Scope != "" {
		env.Scope = cfg.Scope
	}
	chain, err := Build(cfg.Interceptors, env)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &Proxy{cfg: cfg, key: key, chain: chain, base: base}, nil
}

// Close closes the chain.
func (p *Proxy) Close() error { return p.chain.Close() }

var sessionRE = regexp.MustCompile(`^/s/([a-f0-9]+)(/.*)?$`)

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/health" {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
		return
	}
	if r.Method != http.MethodPost {
		writeProxyError(w, http.StatusMethodNotAllowed, "only POST is proxied")
		return
	}
	if p.token != "" && r.Header.Get("Authorization") != "Bearer "+p.token {
		writeProxyError(w, http.StatusUnauthorized, "this proxy serves the agent nel-run started; its Authorization is not this")
		return
	}
	raw, err := readBody(r.Body)
	if err != nil {
		writeProxyError(w, http.StatusBadRequest, err.Error())
		return
	}
	req := &Request{Method: r.Method, Path: r.URL.Path, Header: forwardHeader(r.Header), Raw: raw, Body: decodeBody(raw), readLen: len(raw)}
	if m := sessionRE.FindStringSubmatch(req.Path); m != nil {
		req.Sample.Item, req.Path = "session:"+m[1], m[2]
	}
	if req.Body != nil && p.cfg.Model != "" {
		if _, ok := req.Body["model"]; !ok {
			req.Body["model"] = p.cfg.Model
		}
	}
	if p.token != "" {
		req.Header.Del("Authorization") // the run's token is for this proxy only
	}
	if p.key != "" {
		req.Header.Set("Authorization", "Bearer "+p.key)
	}
	ctx := r.Context()
	if p.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.cfg.RequestTimeout*float64(time.Second)))
		defer cancel()
	}
	resp, err := p.chain.Handler(p.endpoint)(ctx, req)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
		writeProxyError(w, http.StatusGatewayTimeout, fmt.Sprintf("the model did not answer within request_timeout (%gs)", p.cfg.RequestTimeout))
		return
	}
	if err != nil {
		// The agent sees the failure as a gateway error; the key never
		// reaches an error text (the upstream URL does).
		writeProxyError(w, http.StatusBadGateway, err.Error())
		return
	}
	for k, v := range resp.Header {
		if !hopByHop(k) && k != "Content-Encoding" {
			w.Header()[k] = v
		}
	}
	if resp.Cached {
		w.Header().Set(CachedHeader, "true")
	}
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
}

func (p *Proxy) endpoint(ctx context.Context, req *Request) (*Response, error) {
	path := req.Path
	base := strings.TrimRight(p.cfg.Upstream, "/")
	if strings.HasSuffix(base, "/v1") {
		// An agent given the proxy as its base URL asks /v1/…; the
		// upstream's base already ends in /v1.
		path = strings.TrimPrefix(path, "/v1")
	}
	target, err := joinURL(base, path)
	if err != nil {
		return nil, err
	}
	return send(ctx, p.base, target, req)
}

// forwardHeader is the agent's headers less the hop-by-hop ones and the
// length and encoding the proxy sets itself.
func forwardHeader(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if !hopByHop(k) && k != "Accept-Encoding" {
			out[k] = v
		}
	}
	return out
}

func writeProxyError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "nel_proxy_error"}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// Serve runs the proxy of cfg until ctx ends, calling ready with the
// address it listens on once it does.
func Serve(ctx context.Context, cfg ProxyConfig, getenv func(string) string, env Env, ready func(addr string)) error {
	p, err := newProxyFrom(cfg, getenv, env)
	if err != nil {
		return err
	}
	defer p.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ready(ln.Addr().String())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv)
}

// newProxyFrom builds the proxy of cfg with its upstream and key read from
// the environment where cfg names them.
func newProxyFrom(cfg ProxyConfig, getenv func(string) string, env Env) (*Proxy, error) {
	key := ""
	if cfg.APIKeyEnv != "" {
		if key = getenv(cfg.APIKeyEnv); key == "" {
			return nil, fmt.Errorf("api_key_env: $%s is not set", cfg.APIKeyEnv)
		}
	}
	if cfg.UpstreamEnv != "" {
		if cfg.Upstream = getenv(cfg.UpstreamEnv); cfg.Upstream == "" {
			return nil, fmt.Errorf("upstream_env: $%s is not set", cfg.UpstreamEnv)
		}
		if err := checkUpstream(cfg.Upstream); err != nil {
			return nil, fmt.Errorf("upstream_env $%s: %w", cfg.UpstreamEnv, err)
		}
	}
	return NewProxy(cfg, key, nil, env)
}

func shutdown(srv *http.Server) error {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
