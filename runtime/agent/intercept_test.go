package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/sim"
)

// chainModel is a real model client for the simulator with the chain of
// specs under it, as a shard builds it; every request the simulator got is
// in the returned buffer, one JSON line each.
func chainModel(t *testing.T, specs []plan.Interceptor, scripts ...sim.Script) (*model.Client, *bytes.Buffer) {
	t.Helper()
	chain, err := intercept.Build(specs, intercept.Env{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &bytes.Buffer{}
	s, err := sim.New(sim.Config{Scripts: scripts, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := model.New(model.Config{BaseURL: srv.URL + "/v1", Model: sim.DefaultModel, RetryBase: time.Millisecond,
		MaxRetries: 3, Middleware: chain.Middleware()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, rec
}

// sentMessages decodes the recorded requests' messages.
func sentMessages(t *testing.T, rec *bytes.Buffer) [][]map[string]any {
	t.Helper()
	var out [][]map[string]any
	for _, line := range strings.Split(strings.TrimSpace(rec.String()), "\n") {
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal([]byte(line), &body); err != nil {
			t.Fatalf("recorded request %q: %v", line, err)
		}
		out = append(out, body.Messages)
	}
	return out
}

// A recipe's turn_counter runs in nel's own client: with max_turns 5 (under
// the solver's 50), turns 4 (80%) and 5 (100%) carry a system reminder, the
// sixth turn never reaches the model (not retried), and the sample ends
// turn_budget, a model failure, as the solver's own max_turns would.
func TestTurnCounterInProcess(t *testing.T) {
	m, rec := chainModel(t, []plan.Interceptor{{Name: "turn_counter", Config: map[string]any{"max_turns": 5}}},
		sim.Script{Match: "endless task", Endless: []sim.ScriptCall{call("bash", `{"command":"ls"}`), call("bash", `{"command":"pwd"}`)}})
	var log callLog
	ctx := intercept.WithSample(context.Background(), intercept.Sample{Benchmark: "b", Item: "i1"})
	res := runOK(t, ctx, Config{}, m, []Tool{echo("bash", &log)}, "the endless task")
	if res.Outcome != TurnBudget || !errors.Is(res.Err, intercept.ErrTurnBudget) {
		t.Fatalf("outcome %s (%v), want turn_budget from the turn counter", res.Outcome, res.Err)
	}
	if res.Category() != failure.TurnBudget {
		t.Errorf("category %s, want turn_budget", res.Category())
	}
	if n := len(log.get()); n != 5 {
		t.Errorf("%d tool calls ran, want 5 (one per allowed turn)", n)
	}
	sent := sentMessages(t, rec)
	if len(sent) != 5 {
		t.Fatalf("the model got %d requests, want 5", len(sent))
	}
	for i, msgs := range sent {
		last := msgs[len(msgs)-1]
		text, _ := last["content"].(string)
		reminded := last["role"] == "system"
		switch turn := i + 1; {
		case turn < 4 && reminded:
			t.Errorf("turn %d: a reminder before 80%%: %q", turn, text)
		case turn == 4 && !strings.HasPrefix(text, "Turn 4 of 5: 1 left."):
			t.Errorf("turn 4: last message %v, want the warning", last)
		case turn == 5 && !strings.HasPrefix(text, "Turn 5 of 5: 0 left. Give your final answer now"):
			t.Errorf("turn 5: last message %v, want the urgent reminder", last)
		}
	}
	// The reminder is on the wire only: the conversation nel keeps has none.
	for _, m := range res.Messages {
		if m.Role == "system" {
			t.Errorf("the kept conversation has a system message %q", m.Content)
		}
	}
}

// thinkingServer is a recording endpoint for a model that reasons: its
// n-th answer (from 1) gives reasoning_content "thought n" and, before the
// third, calls bash with the id call_n; the third answers "done". It
// returns its URL and the request bodies it got.
func thinkingServer(t *testing.T) (string, *[]map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		got = append(got, body)
		n := len(got)
		mu.Unlock()
		msg := map[string]any{"role": "assistant", "content": "done", "reasoning_content": fmt.Sprintf("thought %d", n)}
		finish := "stop"
		if n < 3 {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", n), "type": "function",
				"function": map[string]any{"name": "bash", "arguments": `{"command":"ls"}`}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &got
}

// A recipe's reasoning_replay in a multi-turn run of nel's own loop: each
// later request carries the earlier assistant turns with their reasoning
// back in place, as <think> blocks (think_tags, the default) or as
// reasoning_content and reasoning (native); without the link nel sends
// none (the loop keeps a turn's content and calls only).
func TestReasoningReplayMultiTurn(t *testing.T) {
	for _, tc := range []struct {
		specs []plan.Interceptor
		// want is what the third request's two assistant turns carry.
		want func(msg map[string]any, n int) bool
	}{
		{nil, func(msg map[string]any, _ int) bool {
			return msg["reasoning_content"] == nil && !strings.Contains(fmt.Sprint(msg["content"]), "thought")
		}},
		{[]plan.Interceptor{{Name: "reasoning_replay"}}, func(msg map[string]any, n int) bool {
			return msg["content"] == fmt.Sprintf("<think>thought %d</think>\n", n) && msg["reasoning_content"] == nil
		}},
		{[]plan.Interceptor{{Name: "reasoning_replay", Config: map[string]any{"mode": "native"}}}, func(msg map[string]any, n int) bool {
			want := fmt.Sprintf("thought %d", n)
			return msg["reasoning_content"] == want && msg["reasoning"] == want && !strings.Contains(fmt.Sprint(msg["content"]), "think")
		}},
	} {
		url, got := thinkingServer(t)
		chain, err := intercept.Build(tc.specs, intercept.Env{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.New(model.Config{BaseURL: url + "/v1", Model: "m", RetryBase: time.Millisecond, MaxRetries: 1,
			Middleware: chain.Middleware()})
		if err != nil {
			t.Fatal(err)
		}
		var log callLog
		ctx := intercept.WithSample(context.Background(), intercept.Sample{Benchmark: "b", Item: "i1"})
		res := runOK(t, ctx, Config{}, m, []Tool{echo("bash", &log)}, "look around")
		m.Close()
		if res.Outcome != Answered || res.Answer != "done" || len(*got) != 3 {
			t.Fatalf("%v: outcome %s answer %q after %d requests (%v)", tc.specs, res.Outcome, res.Answer, len(*got), res.Err)
		}
		var assistants []map[string]any
		for _, x := range (*got)[2]["messages"].([]any) {
			if msg := x.(map[string]any); msg["role"] == "assistant" {
				assistants = append(assistants, msg)
			}
		}
		if len(assistants) != 2 {
			t.Fatalf("%v: third request has %d assistant turns, want 2", tc.specs, len(assistants))
		}
		for i, msg := range assistants {
			if !tc.want(msg, i+1) {
				t.Errorf("%v: assistant turn %d sent as %v", tc.specs, i+1, msg)
			}
		}
	}
}
