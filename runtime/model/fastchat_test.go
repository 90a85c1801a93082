package model

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

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

// scanChat reads what encoding/json reads into chatReply, and fails where
// it fails: escapes (\u with surrogate pairs, \/), invalid UTF-8 (replaced),
// nulls, unknown members of every kind, duplicate members (the last wins),
// and bodies that are truncated, have trailing data or a wrong type.
func TestScanChatAsJSON(t *testing.T) {
	ok := []string{
		`{"choices":[{"message":{"content":"plain"}}]}`,
		`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"logprobs":null,"finish_reason":"stop","message":{"role":"assistant","content":"a\nb \"q\" \\ \/ \u00e9 \ud83d\ude00 \u2028","refusal":null,"tool_calls":[]}}],"usage":{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":null},"extra":{"a":[1,2.5e3,-0.1,true,false,null,{"b":"c"}]}}`,
		"{\"choices\":[{\"message\":{\"content\":\"bad \xff utf8\"}}]}",
		`{"choices":[{"message":{"content":null,"reasoning_content":null,"reasoning":"r","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}}]}`,
		`{"choices":[{"message":{"content":"first"}},{"message":{"content":"second"}}],"model":"a","model":"b"}`,
		`{"choices":null,"usage":null}`,
		`  {"usage":{"completion_tokens_details":{"reasoning_tokens":7,"accepted_prediction_tokens":0}}}  `,
		`{}`,
	}
	bad := []string{
		``, `{`, `{"choices":[{"message":{"content":"trunc`, `{"choices":[}`, `{"model":1}`,
		`{"choices":[{"message":{"content":["part"]}}]}`, `{"usage":{"prompt_tokens":1.5}}`,
		`{"a":tru}`, `{"a":01}`, `{} {}`, `{"a":1,}`, "{\"content\":\"ctl\x01\"}",
	}
	for _, body := range ok {
		var want, got chatReply
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("encoding/json refused %s: %v", body, err)
		}
		if err := scanChat([]byte(body), &got); err != nil {
			t.Errorf("scanChat(%s): %v", body, err)
			continue
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) {
			t.Errorf("scanChat(%s):\n got %s\nwant %s", body, gj, wj)
		}
	}
	for _, body := range bad {
		var want, got chatReply
		if json.Unmarshal([]byte(body), &want) == nil {
			t.Fatalf("encoding/json accepted %q", body)
		}
		if err := scanChat([]byte(body), &got); err == nil {
			t.Errorf("scanChat accepted %q", body)
		}
	}
}

// readBody reads what io.ReadAll(io.LimitReader(body, maxBody+1)) reads,
// whatever size the response said: right, unknown, too small, or an error
// partway.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("answer ", 300)
	for _, size := range []int64{int64(len(body)), -1, 10, 0, maxBody + 1} {
		got, err := readBody(iotest.OneByteReader(strings.NewReader(body)), size)
		if err != nil || string(got) != body {
			t.Fatalf("size %d: %d bytes, %v", size, len(got), err)
		}
	}
	boom := errors.New("boom")
	got, err := readBody(io.MultiReader(strings.NewReader("part"), iotest.ErrReader(boom)), 100)
	if !errors.Is(err, boom) || string(got) != "part" {
		t.Fatalf("error partway: %q, %v", got, err)
	}
}

// chatBodySize is a good guess: a gsm8k request's body, and one with a
// few escapes in every line, fit the buffer it sizes (text that is mostly
// escapes grows it once).
func TestChatBodySize(t *testing.T) {
	overlay := []field{{"temperature", []byte("0")}, {"seed", []byte("1234567890")}, {"max_tokens", []byte("512")}}
	for _, content := range []string{
		"Solve the following math problem step by step. Put your final numerical answer after 'The answer is'.\n\nProblem: " + strings.Repeat("Janet has 16 eggs. ", 20),
		strings.Repeat("She said \"twelve\" apples.\n", 20),
	} {
		msgs := []Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: content}}
		body := appendChatBody(nil, "nel-sim", msgs, overlay)
		if n := chatBodySize("nel-sim", msgs, overlay); len(body) > n || n > 2*len(body) {
			t.Fatalf("chatBodySize %d for a body of %d bytes", n, len(body))
		}
	}
}
