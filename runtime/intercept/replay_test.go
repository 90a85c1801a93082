package intercept

import (
	"context"
	"net/http"
	"testing"
)

// replayTurn sends body in session item to c, the endpoint answering
// answer; it returns the assistant contents the endpoint got.
func replayTurn(t *testing.T, c *Chain, item, answer, body string) []any {
	t.Helper()
	e := &recorder{body: answer}
	req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{}, Body: decodeBody([]byte(body)),
		Sample: Sample{Item: item}}
	if _, err := c.Handler(e.handle)(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, m := range messagesOf(e.got[0]) {
		if m["role"] == "assistant" {
			out = append(out, m["content"])
		}
	}
	return out
}

func answerWith(content, field, reasoning string) string {
	return `{"choices":[{"message":{"role":"assistant","content":"` + content + `","` + field + `":"` + reasoning + `"}}]}`
}

// A text-only turn is known by its content's hash within its session: its
// reasoning (the "reasoning" field, as vLLM ≥0.19 names it, or
// reasoning_content) comes back as a <think> block, once (content already
// starting with the tag is left alone); another session gets nothing; with
// cache_max_entries 1 the older turn is forgotten.
func TestReasoningReplayTextTurns(t *testing.T) {
	c := chainOf(t, "reasoning_replay", `{"cache_max_entries":1}`)
	replayTurn(t, c, "s1", answerWith("answer A", "reasoning", "why A"), `{"messages":[{"role":"user","content":"q"}]}`)
	withA := `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"answer A"},{"role":"user","content":"more"}]}`
	if got := replayTurn(t, c, "s2", `{}`, withA); got[0] != "answer A" {
		t.Errorf("another session got %q", got[0])
	}
	if got := replayTurn(t, c, "s1", answerWith("answer B", "reasoning_content", "why B"), withA); got[0] != "<think>why A</think>\nanswer A" {
		t.Errorf("turn A sent as %q", got[0])
	}
	withAB := `{"messages":[{"role":"assistant","content":"answer A"},{"role":"assistant","content":"<think>x</think>answer B"},{"role":"assistant","content":"answer B"}]}`
	got := replayTurn(t, c, "s1", `{}`, withAB)
	if got[0] != "answer A" || got[1] != "<think>x</think>answer B" || got[2] != "<think>why B</think>\nanswer B" {
		t.Errorf("turns sent as %q: want A forgotten (one entry), B tagged once", got)
	}
}

// NeMo splits <think> (the reasoning link) before reasoning_replay reads a
// response whatever the order; in nel a reasoning link listed first sees
// the response last, so reasoning_replay splits it itself then.
func TestReasoningReplayAfterReasoningLink(t *testing.T) {
	c := chainOf(t, "reasoning", `{}`, "reasoning_replay", `{"mode":"both","tag_open":"<thought>","tag_close":"</thought>"}`)
	replayTurn(t, c, "s", `{"choices":[{"message":{"role":"assistant","content":"<think>why C</think>answer C"}}]}`,
		`{"messages":[{"role":"user","content":"q"}]}`)
	e := &recorder{body: `{}`}
	req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{}, Sample: Sample{Item: "s"},
		Body: decodeBody([]byte(`{"messages":[{"role":"assistant","content":[{"type":"text","text":"answer C"}]}]}`))}
	if _, err := c.Handler(e.handle)(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	msg := messagesOf(e.got[0])[0]
	parts := msg["content"].([]any)
	if msg["reasoning_content"] != "why C" || msg["reasoning"] != "why C" || len(parts) != 2 ||
		parts[0].(map[string]any)["text"] != "<thought>why C</thought>\n" {
		t.Errorf("turn sent as %v", msg)
	}
}
