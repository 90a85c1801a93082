package intercept

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

func turnChain(t *testing.T, cfg map[string]any) *Chain {
	t.Helper()
	c, err := Build([]plan.Interceptor{{Name: "turn_counter", Config: cfg}}, Env{Proxy: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// turn sends one request of session to c; it returns what the model got
// (nil when the link answered) and the response.
func turn(t *testing.T, c *Chain, session, body string) (map[string]any, *Response) {
	t.Helper()
	e := &recorder{body: `{}`}
	req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{}, Body: decodeBody([]byte(body)),
		Sample: Sample{Item: session}}
	resp, err := c.Handler(e.handle)(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if e.calls() == 0 {
		return nil, resp
	}
	return e.got[0].Body, resp
}

const agentTurn = `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"fix the bug"}]}`

// TestTurnCounterBudget: max_turns 10 with the threshold trigger: nothing
// before 80%, a warning at turns 8 and 9 (80%, 90%), an urgent one at 10
// (100% ≥ 95%), then 429 session_budget_exhausted; sessions count apart.
func TestTurnCounterBudget(t *testing.T) {
	c := turnChain(t, map[string]any{"max_turns": 10.0})
	for n := 1; n <= 10; n++ {
		sent, _ := turn(t, c, "s1", agentTurn)
		msgs := sent["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		switch {
		case n < 8 && len(msgs) != 2:
			t.Errorf("turn %d: a reminder before 80%%: %v", n, last)
		case n >= 8 && n < 10 && (last["role"] != "system" || !strings.Contains(last["content"].(string), "Finish what you are doing")):
			t.Errorf("turn %d: last message %v, want the warning", n, last)
		case n == 10 && !strings.Contains(last["content"].(string), "Turn 10 of 10: 0 left. Give your final answer now"):
			t.Errorf("turn 10: last message %v, want the urgent reminder", last)
		}
	}
	sent, resp := turn(t, c, "s1", agentTurn)
	if sent != nil || resp.Status != 429 || !strings.Contains(string(resp.Body), `"code":"session_budget_exhausted"`) {
		t.Errorf("turn 11: sent %v, status %d %s", sent, resp.Status, resp.Body)
	}
	if sent, _ := turn(t, c, "s2", agentTurn); sent == nil {
		t.Error("another session was refused")
	}
}

// TestTurnCounterPeriodicUserMessage: every interval turns, the reminder
// ends the last user message (a string, or its last text part).
func TestTurnCounterPeriodicUserMessage(t *testing.T) {
	c := turnChain(t, map[string]any{"max_turns": 5.0, "trigger": "periodic", "interval": 2.0, "position": "user_message"})
	sent, _ := turn(t, c, "", agentTurn) // turn 1: no reminder; the session is the first user message's hash
	if got := roles(sent); strings.Join(got, "|") != "system:s|user:fix the bug" {
		t.Errorf("turn 1: %q", got)
	}
	sent, _ = turn(t, c, "", agentTurn)
	if got := roles(sent); strings.Join(got, "|") != "system:s|user:fix the bug\n\nReminder: 3 turns remain for this task." {
		t.Errorf("turn 2: %q", got)
	}
	parts := `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`
	c = turnChain(t, map[string]any{"max_turns": 5.0, "trigger": "periodic", "position": "user_message"})
	sent, _ = turn(t, c, "p", parts)
	content := sent["messages"].([]any)[0].(map[string]any)["content"].([]any)
	if len(content) != 2 || content[1].(map[string]any)["text"] != "Reminder: 4 turns remain for this task." {
		t.Errorf("content %v: want a text part added after the image", content)
	}
}

// TestTurnCounterInClient: in nel's own client the turn is the sample's
// (WithTurn), so a retry of one turn is not another turn, and a turn past
// max_turns is ErrTurnBudget, not a 429 the client would retry; a
// single-turn sample is at turn 1. Bad configs are refused either way.
func TestTurnCounterInClient(t *testing.T) {
	c, err := Build([]plan.Interceptor{{Name: "turn_counter", Config: map[string]any{"max_turns": 2.0}}}, Env{})
	if err != nil {
		t.Fatal(err)
	}
	e := &recorder{body: `{}`}
	send := func(turn int) error {
		req := &Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{}, Body: decodeBody([]byte(agentTurn)),
			Sample: Sample{Benchmark: "b", Item: "i", Turn: turn}}
		_, err := c.Handler(e.handle)(context.Background(), req)
		return err
	}
	for _, turn := range []int{0, 1, 2, 2, 2} {
		if err := send(turn); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
	}
	if err := send(3); !errors.Is(err, ErrTurnBudget) {
		t.Errorf("turn 3: error %v, want ErrTurnBudget", err)
	}
	if e.calls() != 5 {
		t.Errorf("the model got %d calls, want 5", e.calls())
	}
	for _, bad := range []map[string]any{{"position": "middle"}, {"trigger": "sometimes"}, {"interval": 0.0}} {
		for _, proxy := range []bool{false, true} {
			if _, err := Build([]plan.Interceptor{{Name: "turn_counter", Config: bad}}, Env{Proxy: proxy}); err == nil {
				t.Errorf("config %v accepted (proxy %v)", bad, proxy)
			}
		}
	}
}
