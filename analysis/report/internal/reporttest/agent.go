package reporttest

import (
	"os"
	"testing"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// AgentRun writes a merged tool-calling benchmark with the writers nel-run
// uses (results.WriteRows, results.WriteTurns) and returns its bundle as
// nel report computes it from the folder. Four tasks:
//
//	fix-bug       solved, 3 model turns, 0.8+0.2+1.0+0.1+0.9 = 3.0 s
//	flaky-test    failed_verifier, 2 turns, bash fails: 0.5+1.5+0.5 = 2.5 s
//	endless       turn_budget, 4 turns of 0.25 s, its first bash output cut
//	dead-sandbox  infra_error before its first turn
func AgentRun(t testing.TB) *metrics.Bundle {
	t.Helper()
	bdir := rundir.Dir(t.TempDir()).Benchmark("harbor-demo")
	if err := os.MkdirAll(string(bdir), 0o755); err != nil {
		t.Fatal(err)
	}
	call := func(id, name string) []agent.ToolCall {
		return []agent.ToolCall{{ID: id, Name: name, Arguments: `{}`}}
	}
	asst := func(i int, ms float64, calls []agent.ToolCall) agent.Turn {
		return agent.Turn{Index: i, Role: "assistant", ToolCalls: calls, LatencyMS: ms}
	}
	tool := func(i int, id, name string, ms float64) agent.Turn {
		return agent.Turn{Index: i, Role: "tool", ToolCallID: id, ToolName: name, Content: "out", LatencyMS: ms}
	}
	flaky := []agent.Turn{asst(0, 500, call("c1", "bash")), tool(1, "c1", "bash", 1500), asst(2, 500, nil)}
	flaky[1].IsError = true
	var endless []agent.Turn
	for i := range 4 {
		endless = append(endless, asst(2*i, 250, call("c", "bash")), tool(2*i+1, "c", "bash", 0))
	}
	endless[1].Truncated, endless[1].OutputChars = true, 100_000
	tasks := []struct {
		id      string
		reward  float64
		outcome agent.Outcome
		turns   []agent.Turn
	}{
		{"fix-bug", 1, agent.Solved, []agent.Turn{
			asst(0, 800, call("c1", "bash")), tool(1, "c1", "bash", 200),
			asst(2, 1000, call("c2", "str_replace_editor")), tool(3, "c2", "str_replace_editor", 100),
			asst(4, 900, nil),
		}},
		{"flaky-test", 0, agent.FailedVerifier, flaky},
		{"endless", 0, agent.TurnBudget, endless},
		{"dead-sandbox", 0, agent.InfraError, nil},
	}
	var rows []results.Row
	var turns []results.Turn
	for i, task := range tasks {
		r := results.Row{RecipeHash: "sha256:r", Benchmark: "harbor-demo", ItemID: task.id, ItemIdx: int64(i), Reward: task.reward, Attempts: 1, Outcome: string(failure.Scored)}
		if task.outcome == agent.InfraError {
			r.ErrorCategory, r.Outcome = string(failure.SandboxError), string(failure.InfraError)
		}
		rows = append(rows, r)
		turns = append(turns, results.TurnsOf(r, 0, task.turns, task.outcome)...)
	}
	meta := map[string]string{results.MetaBenchmark: "harbor-demo", results.MetaRepeats: "1", results.MetaShard: "merged/1"}
	if err := results.WriteTurns(bdir.Turns(), turns, meta); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteRows(bdir.Results(), rows, meta); err != nil {
		t.Fatal(err)
	}
	b, err := metrics.FromParquet(string(bdir))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
