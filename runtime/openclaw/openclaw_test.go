package openclaw

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/failure"
)

func TestConfig(t *testing.T) {
	s := Settings{Bin: "openclaw", Thinking: "high", ContextWindow: 131072, MaxTokens: 4096, MaxConcurrent: 4, IdleTimeoutSeconds: 600}
	b, err := Config(s, "http://127.0.0.1:9/s/abc/v1", "nvidia/nemotron-x", "tok", "/app")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// Written out by hand from NeMo's config builder: the provider is the
	// model's prefix, the primary model provider/id, and thinking high
	// marks the model as reasoning (else OpenClaw refuses --thinking high).
	want := map[string]any{
		"models": map[string]any{
			"mode": "merge",
			"providers": map[string]any{"nvidia": map[string]any{
				"baseUrl": "http://127.0.0.1:9/s/abc/v1", "api": "openai-completions", "apiKey": "tok",
				"timeoutSeconds": 600.0,
				"models": []any{map[string]any{
					"id": "nvidia/nemotron-x", "name": "nvidia/nemotron-x", "input": []any{"text"},
					"contextWindow": 131072.0, "maxTokens": 4096.0, "reasoning": true,
				}},
			}},
		},
		"agents": map[string]any{"defaults": map[string]any{
			"model":         map[string]any{"primary": "nvidia/nvidia/nemotron-x"},
			"workspace":     "/app",
			"skipBootstrap": true,
			"compaction":    map[string]any{"mode": "safeguard"},
			"maxConcurrent": 4.0,
		}},
		"tools": map[string]any{"fs": map[string]any{"workspaceOnly": false}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config:\n%s", b)
	}
}

func TestConfigUnprefixedModelNoThinking(t *testing.T) {
	b, err := Config(Settings{Thinking: "off", MaxConcurrent: 1, IdleTimeoutSeconds: 5}, "http://h/v1", "llama", "k", "/w")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"custom": {`, `"primary": "custom/llama"`} {
		if !strings.Contains(s, want) {
			t.Errorf("config lacks %s:\n%s", want, s)
		}
	}
	// Left to OpenClaw's defaults: no window, no max tokens, not reasoning.
	for _, absent := range []string{"contextWindow", "maxTokens", "reasoning"} {
		if strings.Contains(s, absent) {
			t.Errorf("config has %s:\n%s", absent, s)
		}
	}
}

func TestArgs(t *testing.T) {
	got := Args(Settings{Bin: "/opt/oc/openclaw", Thinking: "high"}, "nel-1", "/tmp/m.txt")
	want := []string{"/opt/oc/openclaw", "agent", "--agent", "main", "--local", "--json", "--session-id", "nel-1", "--message-file", "/tmp/m.txt", "--thinking", "high"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Args = %q", got)
	}
	if got := Args(Settings{Bin: "oc"}, "s", "m"); slicesContain(got, "--thinking") {
		t.Errorf("no thinking level, yet %q", got)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real OpenClaw 2026.9.6's answered run (testdata/README.md).
func TestOutcomeAnswered(t *testing.T) {
	res := Outcome(fixture(t, "ok.json"), 0)
	if res.Outcome != agent.Answered || res.Err != nil {
		t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
	}
	const text = "I am nel's simulated model and I do not know this question, so I cannot answer it."
	if res.Answer != text {
		t.Errorf("answer %q", res.Answer)
	}
	// meta.agentMeta.usage: input 7228, output 21; durationMs and
	// meta.completion.finishReason as printed.
	if res.PromptTokens != 7228 || res.CompletionTokens != 21 {
		t.Errorf("tokens %d/%d", res.PromptTokens, res.CompletionTokens)
	}
	if len(res.Turns) != 1 || res.Turns[0].Role != "assistant" || res.Turns[0].Content != text || res.Turns[0].FinishReason != "stop" {
		t.Errorf("turns %+v", res.Turns)
	}
	var env Envelope
	if err := json.Unmarshal(fixture(t, "ok.json"), &env); err != nil {
		t.Fatal(err)
	}
	if res.Turns[0].LatencyMS != env.Meta.DurationMS || env.Meta.DurationMS <= 0 {
		t.Errorf("latency %v, durationMs %v", res.Turns[0].LatencyMS, env.Meta.DurationMS)
	}
}

// A provider's 400 and the CLI's own refusal are the agent's
// infrastructure failing, never a wrong answer.
func TestOutcomeFailures(t *testing.T) {
	for name, c := range map[string]struct {
		stdout []byte
		exit   int
		cat    failure.Category
		why    string
	}{
		"provider":     {fixture(t, "provider_error.json"), 1, failure.APIError, "LLM request failed: provider rejected the request schema or tool payload."},
		"cli":          {fixture(t, "cli_error.json"), 1, failure.APIError, `openclaw cli_error: Thinking level "high" is not supported`},
		"no json":      {[]byte("[openclaw] The CLI command failed.\n"), 1, failure.SandboxError, "no JSON result on stdout"},
		"empty reply":  {[]byte(`{"payloads": [], "meta": {"durationMs": 3}}`), 0, failure.APIError, "empty visible response"},
		"aborted":      {[]byte(`{"payloads": [{"text": "half"}], "meta": {"aborted": true}}`), 0, failure.APIError, "aborted"},
		"exit nonzero": {[]byte(`{"payloads": [{"text": "fine"}], "meta": {}}`), 2, failure.APIError, "exit status 2"},
	} {
		res := Outcome(c.stdout, c.exit)
		var fe *failure.Error
		if res.Outcome != agent.InfraError || !errors.As(res.Err, &fe) || fe.Category != c.cat {
			t.Errorf("%s: outcome %s, err %v", name, res.Outcome, res.Err)
			continue
		}
		if !strings.Contains(res.Err.Error(), c.why) {
			t.Errorf("%s: err %q, want it to say %q", name, res.Err, c.why)
		}
		if res.Answer != "" {
			t.Errorf("%s: answer %q", name, res.Answer)
		}
	}
}

// The envelope is the last top-level object with payloads, after
// whatever else the CLI printed.
func TestParseEnvelopeAmongOtherOutput(t *testing.T) {
	out := []byte("plugin {not json\n{\"progress\": 1}\n" + `{"payloads": [{"text": "first"}]}` + "\n" + `{"payloads": [{"text": "last"}], "meta": {}}` + "\ntrailing {")
	e, err := ParseEnvelope(out)
	if err != nil {
		t.Fatal(err)
	}
	if e.Text() != "last" {
		t.Errorf("text %q", e.Text())
	}
}

// The conversation of a run whose model called exec once, as OpenClaw
// sent it (testdata/request_tools.json): the call and its output become
// turns, the system prompt and the user's messages do not.
func TestTurns(t *testing.T) {
	final := agent.Turn{Role: "assistant", Content: "done: 42", LatencyMS: 12, FinishReason: "stop"}
	turns, err := Turns(fixture(t, "request_tools.json"), final)
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.Turn{
		{Index: 0, Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "call00", Name: "exec",
			Arguments: `{"command":"echo hi > /tmp/ocl/t1/ws/hello.txt && cat /tmp/ocl/t1/ws/hello.txt"}`}}},
		{Index: 1, Role: "tool", Content: "hi", ToolCallID: "call00", ToolName: "exec", OutputChars: 2},
		{Index: 2, Role: "assistant", Content: "done: 42", LatencyMS: 12, FinishReason: "stop"},
	}
	if !reflect.DeepEqual(turns, want) {
		t.Errorf("turns:\n%+v\nwant\n%+v", turns, want)
	}
	if turns, err := Turns(nil, final); err != nil || len(turns) != 1 || turns[0].Content != "done: 42" {
		t.Errorf("no request: %+v, %v", turns, err)
	}
	if _, err := Turns([]byte("{"), final); err == nil {
		t.Error("a malformed request read without error")
	}
}
