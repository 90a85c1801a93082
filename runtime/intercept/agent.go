package intercept

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/serve"
)

// Agent is a program that calls the model itself (a peer harness, the
// Harbor CLI, a stand-in in tests), run behind the proxy so that its calls
// go through the service's chain: `nel-run proxy --config FILE -- CMD…`.
type Agent struct {
	Argv []string
	// URLEnv is the variable the agent reads its model endpoint's base URL
	// from; it gets the proxy's (http://HOST:PORT/v1).
	URLEnv string
	// KeyEnv is the variable the agent reads its API key from; it gets a
	// token made for this run, the only key the proxy takes. The upstream's
	// key stays with the proxy: the agent never sees it, and nothing else
	// that reaches the proxy's port can spend it.
	KeyEnv         string
	Stdout, Stderr io.Writer
}

// RunAgent serves cfg's proxy on a free port of its listen host, runs the agent against it tied to this
// process (a kill -9 of nel-run takes the agent along), and stops the
// proxy when the agent exits. Its error is the agent's exit (an
// *exec.ExitError for a status other than 0) or the proxy's failure.
//
// A listen address on every interface (0.0.0.0:PORT) is advertised by this
// host's name, for agents whose model calls come from containers of their
// own (Harbor's task containers do not share the node's loopback).
func RunAgent(ctx context.Context, cfg ProxyConfig, getenv func(string) string, env Env, a Agent) error {
	if len(a.Argv) == 0 {
		return fmt.Errorf("no agent command")
	}
	ap, err := StartAgentProxy(ctx, cfg, getenv, env)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, a.Argv[0], a.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = a.Stdout, a.Stderr
	cmd.Env = agentEnv(os.Environ(), a, cfg.APIKeyEnv, ap.URL, ap.Token)
	// CommandContext's kill on ctx's end reaches the agent only; the group
	// stops what it started too.
	cmd.Cancel = func() error { return serve.StopGroup(cmd) }
	cmd.WaitDelay = 10 * time.Second
	ran := serve.RunTied(cmd, serve.Tie{Group: true})
	if err := ap.Stop(); err != nil && ran == nil {
		return err
	}
	return ran
}

// AgentProxy is cfg's proxy serving one agent (a program nel runs, nel
// run's harnesses included): its base URL, and the token that is the only
// key it takes, made for this agent. The upstream's key stays with it.
type AgentProxy struct {
	URL, Token string
	p          *Proxy
	srv        *http.Server
	served     chan error
}

// StartAgentProxy serves cfg's proxy on a free port of its listen host
// until Stop.
func StartAgentProxy(ctx context.Context, cfg ProxyConfig, getenv func(string) string, env Env) (*AgentProxy, error) {
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	// A free port: two agents on one node must not need two configs.
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", cfg.Listen, err)
	}
	p, err := newProxyFrom(cfg, getenv, env)
	if err != nil {
		return nil, err
	}
	if p.token, err = newToken(); err != nil {
		p.Close()
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		p.Close()
		return nil, err
	}
	ap := &AgentProxy{Token: p.token, p: p, srv: &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}, served: make(chan error, 1)}
	go func() { ap.served <- ap.srv.Serve(ln) }()
	if ap.URL, err = advertised(ln.Addr().String()); err != nil {
		ap.Stop()
		return nil, err
	}
	env.Logger.Info("nel-run proxy: serving the agent", "url", ap.URL, "upstream", p.cfg.Upstream, "interceptors", len(cfg.Interceptors))
	return ap, nil
}

// Stop stops serving and closes the chain; its error is the server's.
func (a *AgentProxy) Stop() error {
	defer a.p.Close()
	if err := shutdown(a.srv); err != nil {
		return err
	}
	select {
	case err := <-a.served:
		if err != nil && err != http.ErrServerClosed {
			return err
		}
	default:
	}
	return nil
}

// agentEnv is env with the agent's URL and key variables set, and without
// the variable that holds the upstream's key.
func agentEnv(env []string, a Agent, keyEnv, url, token string) []string {
	set := map[string]string{a.URLEnv: url}
	if a.KeyEnv != "" {
		set[a.KeyEnv] = token
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok && (keyEnv == "" || k != keyEnv) {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

// advertised is the base URL an agent reaches the listener at.
func advertised(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("name this host for the agent: %w", err)
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/v1", nil
}

func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "nel-proxy-" + hex.EncodeToString(b), nil
}
