package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/report/internal/reporttest"
	"github.com/nel-eval/nel/runtime/metrics"
)

func agentRun(t *testing.T) *metrics.Bundle { return reporttest.AgentRun(t) }

// section returns out from the line that starts with start to the next
// line that starts with end.
func section(t *testing.T, out, start, end string) string {
	t.Helper()
	i := strings.Index(out, start)
	if i < 0 {
		t.Fatalf("no %q in:\n%s", start, out)
	}
	j := strings.Index(out[i:], end)
	if j < 0 {
		t.Fatalf("no %q after %q in:\n%s", end, start, out)
	}
	return out[i : i+j]
}

// The markdown report's trajectory audit is testdata/agent.md, read and
// checked by hand against agentRun's tasks: 4 samples, turns 3, 2, 4, 0
// (mean 2.25, median 2.5, max 4), bash 6 calls of which 1 failed and 1
// was cut, one sample per outcome, slowest fix-bug (3.0 s) then
// flaky-test (2.5 s), longest endless (4 turns) then fix-bug (3); the
// rewards of the rows, n/a for dead-sandbox's infrastructure failure.
func TestAgentMarkdown(t *testing.T) {
	out := renderString(t, []*metrics.Bundle{agentRun(t)}, Markdown)
	got := section(t, out, "### Trajectories", "### Provenance")
	want, err := os.ReadFile(filepath.Join("testdata", "agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("trajectory audit:\n%s\nwant testdata/agent.md:\n%s", got, want)
	}
	if strings.Contains(renderString(t, reporttest.Suite(), Markdown), "Trajectories") {
		t.Error("a report of benchmarks without turns has a trajectory audit")
	}
}

// The other formats say the same: LaTeX tables, CSV rows, the bundle's
// agent object in JSON.
func TestAgentFormats(t *testing.T) {
	suite := []*metrics.Bundle{agentRun(t)}
	reporttest.MustContain(t, "latex", renderString(t, suite, LaTeX),
		`\textbf{Trajectories}: 4 samples with trajectories \textperiodcentered{} model turns per sample mean 2.25, median 2.5, max 4 \textperiodcentered{} 7 tool calls.`,
		"% Tool usage\n\\begin{tabular}{lrrrr}",
		`bash & 6 & 1 & 16.7\% & 1 \\`,
		`fix-bug & 0 & 0 & 3 & 3.0 & 1.00 & solved \\`,
		`dead-sandbox & 3 & 0 & 0 & 0.0 & n/a & infra\_error \\`,
	)
	reporttest.MustContain(t, "csv", renderString(t, suite, CSV),
		"harbor-demo,harbor-demo,agent:turns_mean,2.25,4,",
		"harbor-demo,harbor-demo,agent:turns_median,2.5,4,",
		"harbor-demo,harbor-demo,agent:outcome:solved,0.25,1,",
		"harbor-demo,harbor-demo,agent:tool_error_rate:bash,0.16666666666666666,6,",
		"harbor-demo,harbor-demo,agent:tool_error_rate:str_replace_editor,0,1,",
	)
	reporttest.MustContain(t, "json", renderString(t, suite, JSON),
		`"agent": {`, `"tool_calls": 7`, `"outcome": "turn_budget"`, `"item_id": "dead-sandbox"`, `"reward": null`, `"reward": 1,`)
}
