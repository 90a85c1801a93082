package model

import (
	"encoding/json"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// The hot path writes the very bytes the slow path (go-openai's body, then
// mergeFields) sends: the same request must stay the same bytes, for a
// cache's keys and for reproducibility. Inputs cover the escapes
// (quotes, backslashes, control characters, HTML characters, non-ASCII,
// invalid UTF-8, U+2028), empty contents, a tool answer, generation
// parameters and extra_body overriding a member.
func TestChatBodyMatches(t *testing.T) {
	temp, topP, maxTok := 0.0, 0.95, int64(512)
	texts := []string{
		"", "plain", "Question: what is 2+2?\nAnswer:", "tab\there\r\nand \"quotes\" and \\slashes\\",
		"<b>bold</b> & more", "naïve café — ünïcode 日本語", "bad utf8 \xff\xfe end", "line\u2028sep\u2029", "ctrl \x00\x01\x1f",
	}
	gens := []plan.Generation{
		{},
		{Temperature: &temp, TopP: &topP, MaxTokens: &maxTok, Stop: []string{"\n\n", "<end>"}},
		{ExtraBody: map[string]any{"model": "other", "chat_template_kwargs": map[string]any{"enable_thinking": false}}},
		{ExtraBody: map[string]any{"messages": nil}},
	}
	c, err := New(Config{BaseURL: "http://x/v1", Model: "m<&>\"1\""})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		for _, g := range gens {
			req := Request{Messages: []Message{
				{Role: "system", Content: text}, {Role: "user", Content: "Q: " + text},
				{Role: "assistant"}, {Role: "tool", Content: text, ToolCallID: "call_" + text},
			}, Generation: g, Seed: 42}
			overlay, err := c.overlay(req)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := json.Marshal(chatRequest(c.cfg.Model, req))
			if err != nil {
				t.Fatal(err)
			}
			want, err := mergeFields(slow, overlay)
			if err != nil {
				t.Fatal(err)
			}
			got := appendChatBody(nil, c.cfg.Model, req.Messages, overlay)
			if string(got) != string(want) {
				t.Errorf("text %q, generation %+v:\n got %s\nwant %s", text, g, got, want)
			}
		}
	}
}

// The answer's fields read the same as through go-openai: content,
// reasoning under either name, finish reason, model, fingerprint, usage
// with reasoning tokens, tool calls.
func TestDecodeChat(t *testing.T) {
	body := `{"id":"x","model":"served","system_fingerprint":"nel-sim-abc","choices":[{"index":0,"finish_reason":"length",
	"message":{"role":"assistant","content":"The answer is 4.","reasoning":"2+2",
	"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":2}"}}]}}],
	"usage":{"prompt_tokens":11,"completion_tokens":7,"completion_tokens_details":{"reasoning_tokens":3}}}`
	r, err := decodeChat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "The answer is 4." || r.Reasoning != "2+2" || r.FinishReason != "length" || r.Model != "served" ||
		!r.Simulated || r.SystemFingerprint != "nel-sim-abc" || r.PromptTokens != 11 || r.CompletionTokens != 7 ||
		r.ReasoningTokens != 3 || len(r.ToolCalls) != 1 || r.ToolCalls[0] != (ToolCall{"c1", "add", `{"a":2}`}) {
		t.Errorf("decoded %+v", r)
	}
	r, err = decodeChat([]byte(`{"choices":[{"message":{"content":"x","reasoning_content":"first","reasoning":"second"}}]}`))
	if err != nil || r.Reasoning != "first" {
		t.Errorf("reasoning_content wins: %+v, %v", r, err)
	}
	if _, err := decodeChat([]byte(`{"choices":[]}`)); err != errEmptyChoices {
		t.Errorf("no choices: %v", err)
	}
	if _, err := decodeChat([]byte(`{"choices":[{"message":{"content":"`)); err == nil {
		t.Error("a truncated body decoded")
	}
}
