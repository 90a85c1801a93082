package compiler

import (
	"strings"
	"testing"
)

// NeMo's URL rule, with the protocol following the path the URL names.
func TestQuickEndpoint(t *testing.T) {
	for _, c := range []struct{ in, url, protocol string }{
		{"http://h:8000/v1", "http://h:8000/v1/chat/completions", "chat_completions"},
		{"http://h:8000/v1/", "http://h:8000/v1/chat/completions", "chat_completions"},
		{"https://h/v1/chat/completions", "https://h/v1/chat/completions", "chat_completions"},
		{"https://h/v1/completions/", "https://h/v1/completions", "completions"},
		{"https://h/v1/responses", "https://h/v1/responses", "responses"},
		{"https://h", "https://h/chat/completions", "chat_completions"},
	} {
		url, protocol := QuickEndpoint(c.in)
		if url != c.url || protocol != c.protocol {
			t.Errorf("QuickEndpoint(%q) = %q, %q; want %q, %q", c.in, url, protocol, c.url, c.protocol)
		}
	}
}

// Whatever the flags say arrives in the recipe as written: a value cannot
// become YAML structure (a key, a comment, a list), nor change type.
func TestQuickRecipeValuesStayValues(t *testing.T) {
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	prompt := "Be brief.\n# not a comment\nkey: value\n- item\n\"quoted\" 'single' $(rm -rf /) `x` \\ \t ünï"
	q := Quick{Bench: "gsm8k", ModelURL: "http://h:8000/v1", ModelID: "org/model: 7b #1", SystemPrompt: prompt,
		APIKeyEnv: "MY_KEY", Temperature: 0.7, MaxTokens: 512, Repeats: 3, MaxProblems: 20}
	s, src, err := l.LoadQuick(q, t.TempDir(), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	r := s.Recipe
	b := r.Benchmarks[0]
	sv := r.Services["model"]
	if b.Solver.SystemPrompt == nil || *b.Solver.SystemPrompt != prompt {
		t.Errorf("system prompt %v, want %q", b.Solver.SystemPrompt, prompt)
	}
	if sv.Model != q.ModelID || sv.URL != "http://h:8000/v1/chat/completions" || sv.Protocol != "chat_completions" || sv.APIKey != "${MY_KEY}" {
		t.Errorf("service %+v", sv)
	}
	if g := sv.Generation; g == nil || g.Temperature == nil || *g.Temperature != 0.7 || g.MaxTokens == nil || *g.MaxTokens != 512 {
		t.Errorf("generation %+v", sv.Generation)
	}
	if b.Repeats != 3 || b.MaxProblems == nil || *b.MaxProblems != 20 || b.Solver.Type != "simple" || b.Solver.Service != "model" {
		t.Errorf("benchmark %+v", b)
	}
	if len(r.Services) != 1 || len(r.Benchmarks) != 1 {
		t.Errorf("%d services, %d benchmarks, want 1 and 1", len(r.Services), len(r.Benchmarks))
	}
}

// Nothing a recipe could not hold is built; each refusal names the flag.
func TestQuickRecipeRefuses(t *testing.T) {
	for _, c := range []struct {
		q    Quick
		flag string
	}{
		{Quick{ModelURL: "http://h/v1", ModelID: "m"}, "--bench"},
		{Quick{Bench: "nope", ModelURL: "http://h/v1", ModelID: "m"}, "--bench nope: not a built-in benchmark"},
		{Quick{Bench: "hf://org/x", ModelURL: "http://h/v1", ModelID: "m"}, "--bench hf://org/x: not supported yet"},
		{Quick{Bench: "gsm8k", ModelID: "m"}, "--model-url is required"},
		{Quick{Bench: "gsm8k", ModelURL: "h:8000/v1", ModelID: "m"}, "--model-url \"h:8000/v1\""},
		{Quick{Bench: "gsm8k", ModelURL: "http://h/v1"}, "--model-id is required"},
		{Quick{Bench: "gsm8k", ModelURL: "http://h/v1", ModelID: "m", APIKeyEnv: "nvapi-123"}, "--api-key-env \"nvapi-123\""},
	} {
		_, err := QuickRecipe(c.q)
		if err == nil || !strings.HasPrefix(err.Error(), c.flag) {
			t.Errorf("%+v: error %v, want one starting %q", c.q, err, c.flag)
		}
	}
}
