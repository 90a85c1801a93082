package shard_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// The tool_calling solver on a built-in benchmark (gsm8k) with only a
// resource server's tools: no sandbox is opened (the plan has none) and
// none of its tools is offered; each final message is scored by gsm8k's
// scorer, and the scorer's verdict is the sample's outcome. 1+1 calls the
// server and answers 2 (right), 2+2 answers 5 (wrong), 3+3 calls bash,
// which is no tool here (a tool error it is told of), then answers 6.
func TestAgentAnswersScored(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "q.jsonl")
	if err := os.WriteFile(data, []byte(`{"question": "What is 1+1?", "answer": "#### 2"}
{"question": "What is 2+2?", "answer": "#### 4"}
{"question": "What is 3+3?", "answer": "#### 6"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	answer := func(s string) sim.ScriptTurn { return sim.ScriptTurn{Answer: &s} }
	s, err := sim.New(sim.Config{Accuracy: 1, Scripts: []sim.Script{
		{Match: "What is 1+1?", Turns: []sim.ScriptTurn{
			{Calls: []sim.ScriptCall{{Name: "lookup", Arguments: json.RawMessage(`{"key": "1+1"}`)}}},
			answer("The answer is 2")}},
		{Match: "What is 2+2?", Turns: []sim.ScriptTurn{answer("The answer is 5")}},
		{Match: "What is 3+3?", Turns: []sim.ScriptTurn{
			{Calls: []sim.ScriptCall{{Name: "bash", Arguments: json.RawMessage(`{"command": "echo $((3+3))"}`)}}},
			answer("The answer is 6")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(s.Handler())
	t.Cleanup(model.Close)
	gym, sessions := gymServer(t)
	zero := 0.0
	p := &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "test", ScoringVersion: "1",
		RecipeHash: "sha256:recipe", PlanHash: "sha256:answers", OutputDir: "unused", Shards: 1,
		Services: []plan.Service{
			{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: model.URL + "/v1/chat/completions"},
			{Name: "tools", Type: "gym", URL: gym.URL},
		},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:bench",
			Solver: plan.Solver{Type: "tool_calling", Service: "sim", Generation: plan.Generation{Temperature: &zero},
				ResourceService: "tools", MaxTurns: 4, ToolTimeout: 30},
			Repeats: 1, MaxConcurrent: 2, Timeout: 60,
			Params: map[string]any{"data_path": data},
		}},
	}
	out := filepath.Join(dir, "out")
	if _, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out}); err != nil {
		t.Fatal(err)
	}
	sh := rundir.Dir(out).Benchmark("gsm8k").Shard(0, 1)
	rows, _, err := results.ReadRows(string(sh))
	if err != nil {
		t.Fatal(err)
	}
	turns, _, err := results.ReadTurns(sh.Turns())
	if err != nil {
		t.Fatal(err)
	}
	byItem := map[string][]results.Turn{}
	for _, tu := range turns {
		byItem[tu.ItemID] = append(byItem[tu.ItemID], tu)
	}
	want := map[int64]struct {
		correct   bool
		extracted string
		outcome   string
		turns     int
	}{0: {true, "2", "solved", 3}, 1: {false, "5", "failed_verifier", 1}, 2: {true, "6", "solved", 3}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		w := want[r.ItemIdx]
		ts := byItem[r.ItemID]
		if r.Correct == nil || *r.Correct != w.correct || r.Extracted != w.extracted || r.Outcome != "scored" {
			t.Errorf("item %d: correct %v extracted %q outcome %q, want %v %q scored", r.ItemIdx, r.Correct, r.Extracted, r.Outcome, w.correct, w.extracted)
		}
		if len(ts) != w.turns || ts[0].Outcome != w.outcome {
			t.Errorf("item %d: %d turns %+v, want %d with outcome %s", r.ItemIdx, len(ts), ts, w.turns, w.outcome)
		}
		switch r.ItemIdx {
		case 0:
			if ts[1].ToolName != "lookup" || ts[1].IsError || !strings.Contains(ts[1].Content, `"found": "yes"`) {
				t.Errorf("item 0: tool turn %+v, want the server's answer", ts[1])
			}
		case 2:
			if ts[1].ToolName != "bash" || !ts[1].IsError || !strings.Contains(ts[1].Content, `there is no tool named "bash"`) {
				t.Errorf("item 2: tool turn %+v, want bash refused as no tool (no sandbox tools)", ts[1])
			}
		}
	}
	if len(*sessions) != 1 {
		t.Errorf("resource server calls with sessions %q, want one (item 0's)", *sessions)
	}
}
