package metrics

import (
	"cmp"
	"slices"

	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/stats"
)

// Agent is the trajectory audit of an agentic benchmark (a tool-calling
// solver), computed from its turns.parquet: how long samples ran, which
// tools they used and how those failed, how samples ended, and the
// samples a reader should look at first.
type Agent struct {
	// Samples counts the samples with rows in turns.parquet.
	Samples int `json:"samples"`
	// Turns is the number of model turns (assistant messages, what
	// max_turns bounds) per sample.
	Turns TurnStats `json:"turns"`
	// ToolCalls counts every tool call; Tools breaks them down by tool,
	// most used first.
	ToolCalls int         `json:"tool_calls"`
	Tools     []ToolUsage `json:"tools,omitempty"`
	// Outcomes are the samples per agent outcome (solved, turn_budget,
	// infra_error…), most frequent first.
	Outcomes []OutcomeCount `json:"outcomes"`
	// Slowest and Longest are the samples with the most seconds and the
	// most turns, MaxAgentSamples of each.
	Slowest []AgentSample `json:"slowest"`
	Longest []AgentSample `json:"longest"`
}

// TurnStats summarises turns per sample.
type TurnStats struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Max    int     `json:"max"`
}

// ToolUsage is one tool's calls: how many, how many answered with an
// error, how many outputs were cut to max_output_chars.
type ToolUsage struct {
	Name      string  `json:"name"`
	Calls     int     `json:"calls"`
	Errors    int     `json:"errors"`
	ErrorRate float64 `json:"error_rate"`
	Truncated int     `json:"truncated"`
}

// OutcomeCount is how many samples ended one way, and their share of
// Agent.Samples.
type OutcomeCount struct {
	Outcome string  `json:"outcome"`
	Samples int     `json:"samples"`
	Share   float64 `json:"share"`
}

// AgentSample is one sample in the audit's lists. Seconds is the sum of
// its turns' latencies: model requests and tool calls, not the time
// between them. Reward is its result row's (the task's verifier's), nil
// when the sample has no verdict (an infrastructure failure).
type AgentSample struct {
	ItemID  string   `json:"item_id"`
	ItemIdx int64    `json:"item_idx"`
	Repeat  int64    `json:"repeat"`
	Turns   int      `json:"turns"`
	Seconds float64  `json:"seconds"`
	Reward  *float64 `json:"reward"`
	Outcome string   `json:"outcome"`
}

// MaxAgentSamples is how many samples Agent.Slowest and Agent.Longest
// list.
const MaxAgentSamples = 5

// AuditColumns are the turns.parquet columns ComputeAgent reads
// (results.ReadTurnColumns): none of the text.
var AuditColumns = []string{"item_id", "item_idx", "repeat", "role", "tool_name", "is_error", "truncated", "latency_ms", "outcome"}

// ComputeAgent returns the audit of turns (a benchmark's turns.parquet
// rows, in any order), nil when there are none.
func ComputeAgent(turns []results.Turn) *Agent {
	if len(turns) == 0 {
		return nil
	}
	type key struct {
		id     string
		repeat int64
	}
	samples := map[key]*AgentSample{}
	var order []*AgentSample
	tools := map[string]*ToolUsage{}
	a := &Agent{}
	for _, t := range turns {
		k := key{t.ItemID, t.Repeat}
		s := samples[k]
		if s == nil {
			s = &AgentSample{ItemID: t.ItemID, ItemIdx: t.ItemIdx, Repeat: t.Repeat, Outcome: t.Outcome}
			samples[k] = s
			order = append(order, s)
		}
		s.Seconds += t.LatencyMS / 1000
		switch t.Role {
		case "assistant":
			s.Turns++
		case "tool":
			u := tools[t.ToolName]
			if u == nil {
				u = &ToolUsage{Name: t.ToolName}
				tools[t.ToolName] = u
			}
			u.Calls++
			a.ToolCalls++
			if t.IsError {
				u.Errors++
			}
			if t.Truncated {
				u.Truncated++
			}
		}
	}
	a.Samples = len(order)
	a.Turns = turnStats(order)
	for _, u := range tools {
		u.ErrorRate = float64(u.Errors) / float64(u.Calls)
		a.Tools = append(a.Tools, *u)
	}
	slices.SortFunc(a.Tools, func(x, y ToolUsage) int { return cmp.Or(y.Calls-x.Calls, cmp.Compare(x.Name, y.Name)) })
	a.Outcomes = outcomeCounts(order)
	a.Slowest = top(order, func(x, y *AgentSample) int { return cmp.Or(cmp.Compare(y.Seconds, x.Seconds), y.Turns-x.Turns) })
	a.Longest = top(order, func(x, y *AgentSample) int { return cmp.Or(y.Turns-x.Turns, cmp.Compare(y.Seconds, x.Seconds)) })
	return a
}

// addRewards gives the agent's listed samples their rewards from the rows
// added (the benchmark's merged results): the lists name samples a reader
// looks at first, and whether they were solved is the first thing to
// know. Samples without a scored row leave Reward nil.
func (a *Accumulator) addRewards() {
	if a.agent == nil {
		return
	}
	for _, list := range [][]AgentSample{a.agent.Slowest, a.agent.Longest} {
		for i := range list {
			if r := a.want[RowKey{list[i].ItemID, list[i].Repeat}]; r != nil {
				v := *r
				list[i].Reward = &v
			}
		}
	}
}

func turnStats(samples []*AgentSample) TurnStats {
	n := make([]float64, len(samples))
	for i, s := range samples {
		n[i] = float64(s.Turns)
	}
	slices.Sort(n)
	return TurnStats{Mean: stats.Mean(n), Median: stats.Percentile(n, 50), Max: int(n[len(n)-1])}
}

func outcomeCounts(samples []*AgentSample) []OutcomeCount {
	counts := map[string]int{}
	for _, s := range samples {
		counts[s.Outcome]++
	}
	out := make([]OutcomeCount, 0, len(counts))
	for o, c := range counts {
		out = append(out, OutcomeCount{Outcome: o, Samples: c, Share: float64(c) / float64(len(samples))})
	}
	slices.SortFunc(out, func(x, y OutcomeCount) int { return cmp.Or(y.Samples-x.Samples, cmp.Compare(x.Outcome, y.Outcome)) })
	return out
}

// top returns the first MaxAgentSamples of samples by less, ties broken by
// dataset index and repeat so that the lists do not depend on row order.
func top(samples []*AgentSample, less func(x, y *AgentSample) int) []AgentSample {
	sorted := slices.Clone(samples)
	slices.SortFunc(sorted, func(x, y *AgentSample) int {
		return cmp.Or(less(x, y), cmp.Compare(x.ItemIdx, y.ItemIdx), cmp.Compare(x.ItemID, y.ItemID), cmp.Compare(x.Repeat, y.Repeat))
	})
	out := make([]AgentSample, 0, MaxAgentSamples)
	for _, s := range sorted[:min(len(sorted), MaxAgentSamples)] {
		out = append(out, *s)
	}
	return out
}
