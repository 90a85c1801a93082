package compiler

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// TestProxySettings: NeMo's proxy.extra_body, proxy.verbose and
// proxy.request_timeout reach the plan as what they do. extra_body is a
// payload_modifier adding it, before the first caching link (NeMo's cache
// key covers extra_body); verbose a logging link last; request_timeout
// the per-request timeout of the benchmarks that use the service, unless
// a benchmark sets its own, and never above the sample's timeout.
func TestProxySettings(t *testing.T) {
	l := newTestLoader(t)
	src := `services: m: {type: "api", url: "http://127.0.0.1:8000/v1", model: "m", proxy: {
	interceptors: [{name: "system_message", config: {system_message: "Be brief."}}, {name: "caching", config: {cache_dir: "/c"}}]
	extra_body: {top_k: 20, chat_template_kwargs: {thinking: false}}
	verbose: true
	request_timeout: 300
}}
benchmarks: [
	{name: "gsm8k", solver: {type: "simple", service: "m"}},
	{name: "gsm8k", request_timeout: 30, solver: {type: "simple", service: "m"}},
	{name: "gsm8k", timeout: 100, solver: {type: "simple", service: "m"}},
]
`
	s, err := l.Load("r.cue", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := Unsupported(s); len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	p := mustPlan(t, s)
	m, _ := p.Service("m")
	var names []string
	for _, ic := range m.Interceptors {
		names = append(names, ic.Name)
	}
	if got := strings.Join(names, ","); got != "system_message,payload_modifier,caching,logging" {
		t.Fatalf("chain %s, want system_message,payload_modifier,caching,logging", got)
	}
	b, _ := json.Marshal(m.Interceptors[1].Config)
	if string(b) != `{"params_to_add":{"chat_template_kwargs":{"thinking":false},"top_k":20}}` {
		t.Errorf("extra_body link config %s", b)
	}
	for i, want := range []float64{300, 30, 100} {
		if got := p.Benchmarks[i].RequestTimeout; got != want {
			t.Errorf("benchmarks[%d] request_timeout %g, want %g", i, got, want)
		}
	}
}

// TestHarnessProxyTimeout: a harness calls the model itself, so a
// service's proxy.request_timeout alone puts it behind nel-run proxy,
// which bounds its calls.
func TestHarnessProxyTimeout(t *testing.T) {
	r := &Recipe{Services: map[string]*Service{"m": {Type: "api", Proxy: map[string]any{"request_timeout": 90.0}}}}
	p := &plan.Plan{Services: []plan.Service{{Name: "m", Model: "m"}}}
	b := plan.Benchmark{Key: "lm-eval://x", Solver: plan.Solver{Service: "m"}, Harness: &plan.Harness{Kind: "lm-eval"}}
	hp, ok := harnessProxyOf(r, p, b)
	if !ok || !strings.Contains(hp.Config, `"request_timeout": 90`) {
		t.Errorf("proxy %v: %s, want one with request_timeout 90", ok, hp.Config)
	}
	r.Services["m"].Proxy = nil
	if _, ok := harnessProxyOf(r, p, b); ok {
		t.Errorf("a service without chain or timeout got a proxy")
	}
}
