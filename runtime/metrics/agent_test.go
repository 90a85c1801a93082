package metrics

import (
	"reflect"
	"testing"

	"github.com/nel-eval/nel/runtime/results"
)

// auditTurns are four samples written out by hand: "a" solved in 3 model
// turns and 5 s, "b" failed by its verifier in 2 turns and 1.5 s with a
// cut file_read, "c" an infrastructure failure before its first turn, "d"
// stopped at its turn budget after 4 turns of 0.25 s, two of its bash
// calls failing.
func auditTurns() []results.Turn {
	row := func(id string, idx int64, role, tool string, ms float64, outcome string) results.Turn {
		return results.Turn{ItemID: id, ItemIdx: idx, Role: role, ToolName: tool, LatencyMS: ms, Outcome: outcome}
	}
	var ts []results.Turn
	ts = append(ts,
		row("a", 0, "assistant", "", 1000, "solved"), row("a", 0, "tool", "bash", 500, "solved"),
		row("a", 0, "assistant", "", 1000, "solved"), row("a", 0, "tool", "bash", 500, "solved"),
		row("a", 0, "assistant", "", 2000, "solved"),
		row("b", 1, "assistant", "", 1000, "failed_verifier"), row("b", 1, "tool", "file_read", 100, "failed_verifier"),
		row("b", 1, "assistant", "", 400, "failed_verifier"),
		row("c", 2, results.RoleNone, "", 0, "infra_error"),
	)
	ts[3].IsError = true
	ts[6].Truncated = true
	for i := range 4 {
		ts = append(ts, row("d", 3, "assistant", "", 250, "turn_budget"), row("d", 3, "tool", "bash", 0, "turn_budget"))
		ts[len(ts)-1].IsError = i%2 == 0
	}
	return ts
}

// The audit's numbers, counted by hand from auditTurns: turns per sample
// 3, 2, 0, 4 (mean 2.25, median 2.5, max 4); bash 6 calls, 3 errors;
// file_read 1 call, cut; one sample per outcome.
func TestComputeAgent(t *testing.T) {
	a := ComputeAgent(auditTurns())
	sample := func(id string, idx int64, turns int, secs float64, outcome string) AgentSample {
		return AgentSample{ItemID: id, ItemIdx: idx, Turns: turns, Seconds: secs, Outcome: outcome}
	}
	sa, sb, sc, sd := sample("a", 0, 3, 5, "solved"), sample("b", 1, 2, 1.5, "failed_verifier"),
		sample("c", 2, 0, 0, "infra_error"), sample("d", 3, 4, 1, "turn_budget")
	want := &Agent{
		Samples:   4,
		Turns:     TurnStats{Mean: 2.25, Median: 2.5, Max: 4},
		ToolCalls: 7,
		Tools: []ToolUsage{
			{Name: "bash", Calls: 6, Errors: 3, ErrorRate: 0.5},
			{Name: "file_read", Calls: 1, Truncated: 1},
		},
		Outcomes: []OutcomeCount{
			{"failed_verifier", 1, 0.25}, {"infra_error", 1, 0.25}, {"solved", 1, 0.25}, {"turn_budget", 1, 0.25},
		},
		Slowest: []AgentSample{sa, sb, sd, sc},
		Longest: []AgentSample{sd, sa, sb, sc},
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("ComputeAgent:\n got %+v\nwant %+v", a, want)
	}
	if ComputeAgent(nil) != nil {
		t.Error("ComputeAgent(nil) is not nil: a benchmark without turns would get an audit")
	}
}

// The lists keep MaxAgentSamples samples, ties broken by dataset index.
func TestComputeAgentTop(t *testing.T) {
	var ts []results.Turn
	for i := range 8 {
		ts = append(ts, results.Turn{ItemID: string(rune('h' - i)), ItemIdx: int64(7 - i), Role: "assistant", LatencyMS: 100, Outcome: "answered"})
	}
	a := ComputeAgent(ts)
	if len(a.Slowest) != MaxAgentSamples || len(a.Longest) != MaxAgentSamples {
		t.Fatalf("%d slowest, %d longest", len(a.Slowest), len(a.Longest))
	}
	for i, s := range a.Slowest {
		if s.ItemIdx != int64(i) {
			t.Errorf("slowest[%d] is index %d, want %d (ties by dataset index)", i, s.ItemIdx, i)
		}
	}
}
