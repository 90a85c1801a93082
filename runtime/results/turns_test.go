package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/agent"
)

// agentSamples are three samples of a tool-calling benchmark, written by
// hand: "a" solved in 6 turns (it reuses the call id c1 in its second
// assistant turn, as some endpoints do, and one tool output of 70,000
// bytes is kept as a digest), "b" stopped at its turn budget after two
// failing bash calls, "c" an infrastructure failure before its first turn.
func agentSamples() (rows []Row, turns [][]agent.Turn, outcomes []agent.Outcome) {
	key := func(id string, idx int64) Row {
		return Row{RecipeHash: "sha256:r", Benchmark: "harbor://demo", ItemID: id, ItemIdx: idx, Model: "org/agent-" + id}
	}
	big := strings.Repeat("x", 70_000)
	a := []agent.Turn{
		{Index: 0, Role: "assistant", Content: "Let me look.", Reasoning: "list first",
			ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}},
			LatencyMS: 100, PromptTokens: 50, CompletionTokens: 10, FinishReason: "tool_calls"},
		{Index: 1, Role: "tool", Content: "main.py\n", ToolCallID: "c1", ToolName: "bash", OutputChars: 8, LatencyMS: 5},
		{Index: 2, Role: "assistant", ToolCalls: []agent.ToolCall{
			{ID: "c1", Name: "str_replace_editor", Arguments: `{"command":"str_replace","path":"/app/main.py","old_str":"1","new_str":"2"}`},
			{ID: "c2", Name: "bash", Arguments: `{"command":"python main.py"}`},
		}, LatencyMS: 200, PromptTokens: 80, CompletionTokens: 30, FinishReason: "tool_calls"},
		{Index: 3, Role: "tool", Content: "edited", ToolCallID: "c1", ToolName: "str_replace_editor", OutputChars: 6, LatencyMS: 2},
		{Index: 4, Role: "tool", Content: big, ToolCallID: "c2", ToolName: "bash", OutputChars: 100_000, Truncated: true, LatencyMS: 40},
		{Index: 5, Role: "assistant", Content: "Done.", LatencyMS: 150, PromptTokens: 120, CompletionTokens: 3, FinishReason: "stop"},
	}
	b := []agent.Turn{
		{Index: 0, Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"make"}`}}, LatencyMS: 90},
		{Index: 1, Role: "tool", Content: "exit status 1", ToolCallID: "c1", ToolName: "bash", IsError: true, OutputChars: 13, LatencyMS: 7},
		{Index: 2, Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c2", Name: "bash", Arguments: `{"command":"make"}`}}, LatencyMS: 95},
		{Index: 3, Role: "tool", Content: "exit status 1", ToolCallID: "c2", ToolName: "bash", IsError: true, OutputChars: 13, LatencyMS: 6},
	}
	return []Row{key("a", 0), key("b", 1), key("c", 2)},
		[][]agent.Turn{a, b, nil},
		[]agent.Outcome{agent.Solved, agent.TurnBudget, agent.InfraError}
}

func agentTurnRows() []Turn {
	rows, turns, outcomes := agentSamples()
	var all []Turn
	for i := range rows {
		all = append(all, TurnsOf(rows[i], 1, turns[i], outcomes[i])...)
	}
	return all
}

// TurnsOf keys every row, gives a tool turn its call's arguments (from the
// latest assistant turn, where an id is reused), keeps long content as its
// digest, and gives a sample without turns one "none" row.
func TestTurnsOf(t *testing.T) {
	all := agentTurnRows()
	if len(all) != 6+4+1 {
		t.Fatalf("%d rows, want 11", len(all))
	}
	a := all[:6]
	if got := a[3].ToolArguments; !strings.Contains(got, `"str_replace"`) {
		t.Errorf("turn 3 (answers the second c1) has arguments %s, want str_replace_editor's", got)
	}
	if got := a[1].ToolArguments; got != `{"command":"ls"}` {
		t.Errorf("turn 1 arguments = %s", got)
	}
	if a[0].ToolArguments != "" || a[0].ToolCalls != `[{"id":"c1","name":"bash","arguments":"{\"command\":\"ls\"}"}]` {
		t.Errorf("assistant turn 0: tool_arguments %q, tool_calls %s", a[0].ToolArguments, a[0].ToolCalls)
	}
	sum := sha256.Sum256([]byte(strings.Repeat("x", 70_000)))
	if big := a[4]; big.Content != "" || big.ContentBytes != 70_000 || big.ContentSHA256 != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("long output: content %d bytes inline, content_bytes %d, sha %s", len(big.Content), big.ContentBytes, big.ContentSHA256)
	}
	if a[1].ContentSHA256 != "" || a[1].ContentBytes != 8 {
		t.Errorf("short output: sha %q, bytes %d", a[1].ContentSHA256, a[1].ContentBytes)
	}
	for _, r := range a {
		if r.Outcome != "solved" || r.ItemID != "a" || r.Shard != 1 || r.RecipeHash != "sha256:r" || r.Model != "org/agent-a" {
			t.Errorf("turn %d keyed %s/%d/%s model %s outcome %s", r.TurnIndex, r.ItemID, r.Shard, r.RecipeHash, r.Model, r.Outcome)
		}
	}
	if c := all[10]; c.Role != RoleNone || c.ItemID != "c" || c.ItemIdx != 2 || c.Outcome != "infra_error" || c.Model != "org/agent-c" {
		t.Errorf("turnless sample's row = %+v", c)
	}
}

// WriteTurns and ReadTurns round-trip every column, and AgentTurns gives
// back the agent.Turns (content kept as a digest excepted).
func TestTurnsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "turns.parquet")
	want := agentTurnRows()
	if err := WriteTurns(path, want, map[string]string{MetaBenchmark: "harbor://demo"}); err != nil {
		t.Fatal(err)
	}
	got, meta, err := ReadTurns(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back differs:\n got %+v\nwant %+v", got, want)
	}
	if meta[MetaBenchmark] != "harbor://demo" || meta[MetaRows] != "11" {
		t.Errorf("metadata %v", meta)
	}
	_, turns, _ := agentSamples()
	back, err := AgentTurns(got[:6])
	if err != nil {
		t.Fatal(err)
	}
	turns[0][4].Content = "" // kept as its digest
	if !reflect.DeepEqual(back, turns[0]) {
		t.Errorf("AgentTurns:\n got %+v\nwant %+v", back, turns[0])
	}
	if back, err := AgentTurns(got[10:]); err != nil || len(back) != 0 {
		t.Errorf("AgentTurns(none row) = %v, %v", back, err)
	}
	empty := filepath.Join(t.TempDir(), "empty.parquet")
	if err := WriteTurns(empty, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, _, err := ReadTurns(empty); err != nil || len(got) != 0 {
		t.Errorf("empty file read back %d rows, %v", len(got), err)
	}
}

// A real DuckDB answers the trajectory questions over turns.parquet with
// plain SQL: turns per sample, calls per tool, the outcome table. The
// expected numbers are counted by hand from agentSamples.
func TestTurnsDuckDB(t *testing.T) {
	testenv.DuckDBReader(t)
	dir := t.TempDir()
	if err := WriteTurns(filepath.Join(dir, "turns.parquet"), agentTurnRows(), nil); err != nil {
		t.Fatal(err)
	}
	// Each row as JSON, its keys sorted (encoding/json's map order).
	query := func(sql string) string {
		b, err := json.Marshal(testenv.DuckDBQuery(t, dir, sql))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct{ sql, want string }{
		{`SELECT item_id, count(*) FILTER (WHERE role <> 'none') AS turns FROM 'turns.parquet' GROUP BY 1 ORDER BY 1`,
			`[{"item_id":"a","turns":"6"},{"item_id":"b","turns":"4"},{"item_id":"c","turns":"0"}]`},
		{`SELECT tool_name, count(*) AS calls, count(*) FILTER (WHERE is_error) AS errors, count(*) FILTER (WHERE truncated) AS cut
		  FROM 'turns.parquet' WHERE role = 'tool' GROUP BY tool_name ORDER BY 1`,
			`[{"calls":"4","cut":"1","errors":"2","tool_name":"bash"},{"calls":"1","cut":"0","errors":"0","tool_name":"str_replace_editor"}]`},
		{`SELECT outcome, count(DISTINCT (item_id, "repeat")) AS samples FROM 'turns.parquet' GROUP BY 1 ORDER BY 1`,
			`[{"outcome":"infra_error","samples":"1"},{"outcome":"solved","samples":"1"},{"outcome":"turn_budget","samples":"1"}]`},
		{`SELECT tool_arguments::JSON->>'command' AS cmd FROM 'turns.parquet' WHERE item_id = 'a' AND turn_index = 3`,
			`[{"cmd":"str_replace"}]`},
		{`SELECT content_bytes, length(content) AS inline, content_sha256 LIKE 'sha256:%' AS digested FROM 'turns.parquet' WHERE item_id = 'a' AND turn_index = 4`,
			`[{"content_bytes":"70000","digested":true,"inline":"0"}]`},
		{`SELECT sum(prompt_tokens) AS p, sum(completion_tokens) AS c FROM 'turns.parquet' WHERE role = 'assistant' AND item_id = 'a'`,
			`[{"c":"43","p":"250"}]`},
		{`SELECT model, count(*) AS n FROM 'turns.parquet' GROUP BY 1 ORDER BY 1`,
			`[{"model":"org/agent-a","n":"6"},{"model":"org/agent-b","n":"4"},{"model":"org/agent-c","n":"1"}]`},
	} {
		if got := query(c.sql); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
}
