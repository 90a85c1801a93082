package runctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Render writes the status as text, or as JSON when asJSON.
func (st *Status) Render(w io.Writer, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	var b strings.Builder
	if st.Dir != "" {
		fmt.Fprintf(&b, "run:    %s (plan %s)\n", st.Dir, st.PlanHash)
	}
	fmt.Fprintf(&b, "state:  %s: %s\n", st.State, st.Note)
	if st.ETA != nil {
		fmt.Fprintf(&b, "eta:    %s at %.1f samples/s\n", time.Duration(st.ETA.Seconds*float64(time.Second)).Round(time.Second), st.ETA.Rate)
	}
	for _, bs := range st.Benchmarks {
		fmt.Fprintf(&b, "%s: %s\n", bs.Key, bs.text())
	}
	if len(st.Jobs) > 0 {
		b.WriteString("jobs:\n")
		for _, j := range st.Jobs {
			fmt.Fprintf(&b, "  %-12s %-10s %s", j.ID, j.State, j.Elapsed)
			if j.Reason != "" && j.Reason != "None" {
				fmt.Fprintf(&b, "  (%s)", j.Reason)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (bs BenchStatus) text() string {
	var parts []string
	switch {
	case bs.Merged:
		parts = append(parts, fmt.Sprintf("%d samples, merged", bs.Done))
	case bs.Total > 0:
		parts = append(parts, fmt.Sprintf("%d of %d samples (%.1f%%)", bs.Done, bs.Total, 100*float64(bs.Done)/float64(bs.Total)))
	default:
		parts = append(parts, fmt.Sprintf("%d samples done (the total is known once a shard finishes)", bs.Done))
	}
	if !bs.Merged {
		parts = append(parts, fmt.Sprintf("%d of %d shards finished", bs.ShardsDone, bs.Shards))
	}
	if bs.ShardsRunning > 0 {
		parts = append(parts, fmt.Sprintf("%d running", bs.ShardsRunning))
	}
	if bs.ShardsInterrupted > 0 {
		parts = append(parts, fmt.Sprintf("%d interrupted", bs.ShardsInterrupted))
	}
	if bs.InFlight > 0 {
		parts = append(parts, fmt.Sprintf("%d started, not finished", bs.InFlight))
	}
	parts = append(parts, fmt.Sprintf("%d failed (model or infrastructure errors)", bs.Failed))
	if bs.InfraFailed > 0 {
		// Not scored: what counts against max_error_rate.
		parts = append(parts, fmt.Sprintf("%d of them infrastructure failures, not scored", bs.InfraFailed))
	}
	if bs.Stale > 0 {
		parts = append(parts, fmt.Sprintf("%d journals of another plan (their samples do not count)", bs.Stale))
	}
	return strings.Join(parts, ", ")
}
