package view

import (
	"fmt"
	"strconv"

	"github.com/nel-eval/nel/runtime/metrics"
)

// Table is a titled table that every format renders, cells as text.
type Table struct {
	Title string
	Head  []string
	// Align has one letter per column: 'r' right-aligned (numbers),
	// anything else left.
	Align string
	Rows  [][]string
}

// AgentTitle heads the trajectory audit's section.
const AgentTitle = "Trajectories"

// AgentSummary is the audit's first line: "4 samples with trajectories ·
// model turns per sample mean 2.25, median 2.5, max 4 · 7 tool calls".
func AgentSummary(a *metrics.Agent) string {
	return fmt.Sprintf("%s samples with trajectories · model turns per sample mean %s, median %s, max %s · %s tool calls",
		Count(a.Samples), Fix(a.Turns.Mean, 2), strconv.FormatFloat(a.Turns.Median, 'f', -1, 64), Count(a.Turns.Max), Count(a.ToolCalls))
}

// AgentTables are the audit's tables: how samples ended, tool usage, the
// slowest and the longest samples. Tool usage is left out when no tool
// was called.
func AgentTables(a *metrics.Agent) []Table {
	outcomes := Table{Title: "Outcomes", Head: []string{"Outcome", "Samples", "Share"}, Align: "_rr"}
	for _, o := range a.Outcomes {
		outcomes.Rows = append(outcomes.Rows, []string{o.Outcome, Count(o.Samples), Pct(o.Share)})
	}
	tables := []Table{outcomes}
	if len(a.Tools) > 0 {
		tools := Table{Title: "Tool usage", Head: []string{"Tool", "Calls", "Errors", "Error rate", "Truncated"}, Align: "_rrrr"}
		for _, u := range a.Tools {
			tools.Rows = append(tools.Rows, []string{u.Name, Count(u.Calls), Count(u.Errors), Pct(u.ErrorRate), Count(u.Truncated)})
		}
		tables = append(tables, tools)
	}
	return append(tables, sampleTable("Slowest samples", a.Slowest), sampleTable("Longest samples", a.Longest))
}

func sampleTable(title string, samples []metrics.AgentSample) Table {
	t := Table{Title: title, Head: []string{"Item", "Index", "Repeat", "Turns", "Seconds", "Reward", "Outcome"}, Align: "_rrrrr_"}
	for _, s := range samples {
		reward := "n/a" // no verdict: an infrastructure failure
		if s.Reward != nil {
			reward = Fix(*s.Reward, 2)
		}
		t.Rows = append(t.Rows, []string{s.ItemID, Count(s.ItemIdx), Count(s.Repeat), Count(s.Turns), Fix(s.Seconds, 1), reward, s.Outcome})
	}
	return t
}
