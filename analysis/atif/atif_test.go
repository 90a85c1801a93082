package atif

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/results"
)

// sample is a task solved in three assistant turns: two parallel calls,
// one of them with malformed arguments and one cut output, then a call
// that fails, then the answer.
func sample() Sample {
	return Sample{
		SessionID:   "sha256:r/harbor://demo/fix-bug/0",
		Agent:       Agent{Name: "nel", Version: "v0.1.0", ModelName: "m"},
		System:      "You are a careful engineer.",
		Instruction: "Fix the bug in /app/main.py.",
		Turns: []agent.Turn{
			{Index: 0, Role: "assistant", Content: "Looking.", Reasoning: "read then run",
				ToolCalls: []agent.ToolCall{
					{ID: "c1", Name: "file_read", Arguments: `{"path":"/app/main.py"}`},
					{ID: "c2", Name: "bash", Arguments: `{"command": "ls`},
				},
				LatencyMS: 120, PromptTokens: 40, CompletionTokens: 12, FinishReason: "tool_calls"},
			{Index: 1, Role: "tool", ToolCallID: "c1", ToolName: "file_read", Content: "print(1/0)", OutputChars: 10, LatencyMS: 3},
			{Index: 2, Role: "tool", ToolCallID: "c2", ToolName: "bash", Content: "head…[cut 900 chars]…tail", IsError: true, OutputChars: 920, Truncated: true, LatencyMS: 4},
			{Index: 3, Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c3", Name: "str_replace_editor", Arguments: `{"command":"str_replace","path":"/app/main.py","old_str":"1/0","new_str":"1"}`}},
				LatencyMS: 80, PromptTokens: 70, CompletionTokens: 20, FinishReason: "tool_calls"},
			{Index: 4, Role: "tool", ToolCallID: "c3", ToolName: "str_replace_editor", Content: "edited /app/main.py", OutputChars: 19, LatencyMS: 2},
			{Index: 5, Role: "assistant", Content: "Fixed.", LatencyMS: 50, PromptTokens: 95, CompletionTokens: 3, FinishReason: "stop"},
		},
		Extra: map[string]any{"outcome": "solved", "reward": 1.0},
	}
}

// Convert gives the document in testdata/solved.json, written and checked
// by hand against the ATIF v1.4 RFC: steps numbered from 1, a system and a
// user step, each assistant turn an agent step whose observation holds the
// following tool turns' outputs (source_call_id = its tool_call_id),
// malformed arguments as {} with the text kept in extra, token totals that
// are the sums of the steps' (40+70+95, 12+20+3).
func TestConvert(t *testing.T) {
	tr, err := Convert(sample())
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(tr, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/solved.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
		t.Errorf("Convert:\n%s\nwant testdata/solved.json:\n%s", got, want)
	}
}

// A tool turn must answer a call of the assistant turn before it, and a
// turn's role must be one of the two.
func TestConvertRefuses(t *testing.T) {
	for _, c := range []struct {
		turns []agent.Turn
		want  string
	}{
		{[]agent.Turn{{Index: 0, Role: "tool", ToolCallID: "c1"}}, `turn 0: tool answer to call "c1", which no assistant turn before it made`},
		{[]agent.Turn{
			{Index: 0, Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: "{}"}}},
			{Index: 1, Role: "tool", ToolCallID: "c9"},
		}, `turn 1: tool answer to call "c9"`},
		{[]agent.Turn{{Index: 0, Role: "user"}}, `turn 0: role "user" is neither assistant nor tool`},
	} {
		_, err := Convert(Sample{SessionID: "s", Turns: c.turns})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Convert(%+v) = %v, want %q", c.turns, err, c.want)
		}
	}
}

// Samples regroups turns.parquet rows (here made by results.TurnsOf, rows
// of two samples interleaved) into what Convert takes: converting the
// first gives testdata/solved.json again, once the instruction (which
// turns.parquet does not hold) is set.
func TestSamples(t *testing.T) {
	s := sample()
	a := results.TurnsOf(results.Row{RecipeHash: "sha256:r", Benchmark: "harbor://demo", ItemID: "fix-bug"}, 0, s.Turns, agent.Solved)
	none := results.TurnsOf(results.Row{RecipeHash: "sha256:r", Benchmark: "harbor://demo", ItemID: "dead", Repeat: 1}, 0, nil, agent.InfraError)
	rows := append(append(append([]results.Turn{}, a[:2]...), none...), a[2:]...)
	got, err := Samples(rows, s.Agent)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SessionID != s.SessionID || got[1].SessionID != "sha256:r/harbor://demo/dead/1" || len(got[1].Turns) != 0 {
		t.Fatalf("Samples = %+v", got)
	}
	wantExtra := map[string]any{"benchmark": "harbor://demo", "item_id": "fix-bug", "repeat": int64(0), "outcome": "solved"}
	if !reflect.DeepEqual(got[0].Extra, wantExtra) {
		t.Errorf("extra %v, want %v", got[0].Extra, wantExtra)
	}
	got[0].System, got[0].Instruction, got[0].Extra = s.System, s.Instruction, s.Extra
	tr, err := Convert(got[0])
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.MarshalIndent(tr, "", "  ")
	want, err := os.ReadFile("testdata/solved.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(doc), bytes.TrimSpace(want)) {
		t.Errorf("Convert(Samples(rows)[0]):\n%s\nwant testdata/solved.json", doc)
	}
}
