package intercept

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// RunAgent gives the agent the proxy's URL and a run token in the variables
// it names, takes the upstream key's variable out of its environment, and
// returns the agent's exit.
func TestRunAgentEnvironment(t *testing.T) {
	us := httptest.NewServer(&upstream{})
	defer us.Close()
	t.Setenv("NEL_TEST_UPSTREAM_KEY", "sk-secret")
	var out bytes.Buffer
	cfg := ProxyConfig{Listen: "127.0.0.1:4000", Upstream: us.URL + "/v1", APIKeyEnv: "NEL_TEST_UPSTREAM_KEY"}
	err := RunAgent(context.Background(), cfg, os.Getenv, Env{}, Agent{
		Argv:   []string{"sh", "-c", `echo "$U|$K|${NEL_TEST_UPSTREAM_KEY-unset}"; exit 4`},
		URLEnv: "U", KeyEnv: "K", Stdout: &out, Stderr: &out,
	})
	if err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Errorf("error %v, want the agent's exit status 4", err)
	}
	parts := strings.Split(strings.TrimSpace(out.String()), "|")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "http://127.0.0.1:") || strings.HasSuffix(parts[0], ":4000/v1") ||
		!strings.HasSuffix(parts[0], "/v1") || !strings.HasPrefix(parts[1], "nel-proxy-") || parts[2] != "unset" {
		t.Errorf("the agent saw %q: want a free port's URL, a token, no upstream key", out.String())
	}
	host, _ := os.Hostname()
	if got, err := advertised("0.0.0.0:5"); err != nil || got != "http://"+host+":5/v1" {
		t.Errorf("advertised 0.0.0.0:5 as %q (%v), want this host's name", got, err)
	}
}

// With a run token, only the agent that has it is served, and the token
// goes no further: a keyless upstream gets no Authorization.
func TestProxyTokenStaysHere(t *testing.T) {
	up := &upstream{}
	us := httptest.NewServer(up)
	defer us.Close()
	p, err := NewProxy(ProxyConfig{Upstream: us.URL + "/v1"}, "", nil, Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.token = "agent-own-key" // what post sends
	ps := httptest.NewServer(p)
	defer ps.Close()
	if resp, _ := post(t, ps.URL+"/v1/chat/completions", `{"messages":[]}`); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if len(up.auth) != 1 || up.auth[0] != "" {
		t.Errorf("upstream got Authorization %q, want none", up.auth)
	}
	p.token = "another"
	if resp, _ := post(t, ps.URL+"/v1/chat/completions", `{"messages":[]}`); resp.StatusCode != 401 || len(up.auth) != 1 {
		t.Errorf("a client without the token: status %d, %d upstream calls", resp.StatusCode, len(up.auth))
	}
}
