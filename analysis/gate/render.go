package gate

import (
	"fmt"
	"io"
	"strings"

	"github.com/nel-eval/nel/analysis/compare"
)

// Render writes the report as text, markdown or json.
func Render(w io.Writer, format string, r *Report) error {
	switch format {
	case compare.FormatJSON:
		return compare.WriteJSON(w, r)
	case compare.FormatMarkdown:
		_, err := io.WriteString(w, markdown(r))
		return err
	}
	_, err := io.WriteString(w, text(r))
	return err
}

func deltaText(d *float64) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%+.4f", *d)
}

// text follows NeMo's layout (the verdict, the inputs, the reasons, then
// one line per benchmark with its reasons below it).
func text(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Verdict)
	fmt.Fprintf(&b, "Policy:    %s\n", r.Policy)
	fmt.Fprintf(&b, "Baseline:  %s\n", r.Baseline)
	fmt.Fprintf(&b, "Candidate: %s\n", r.Candidate)
	if r.Holm != nil {
		fmt.Fprintf(&b, "Holm:      family-wise error control over %d gated benchmark(s), one-sided level %.4g\n", len(r.Holm.Family), r.Holm.Level)
	}
	b.WriteString("\nVERDICT REASONS\n")
	for _, s := range r.VerdictReasons {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\nWARNINGS\n")
		for _, s := range r.Warnings {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(s, "\n", "\n  "))
		}
	}
	nameW := len("name")
	for _, x := range r.Benchmarks {
		nameW = max(nameW, len(x.Benchmark))
	}
	b.WriteString("\nBENCHMARKS\n")
	fmt.Fprintf(&b, "%-*s  %-10s  %-21s  %-12s  %8s  %s\n", nameW, "name", "tier", "status", "metric", "delta", "n")
	b.WriteString(strings.Repeat("-", nameW+2+10+2+21+2+12+2+8+2+5) + "\n")
	for _, x := range r.Benchmarks {
		fmt.Fprintf(&b, "%-*s  %-10s  %-21s  %-12s  %8s  %d\n", nameW, x.Benchmark, x.Tier, x.Status, x.Metric, deltaText(x.Delta), x.NPaired)
		for _, s := range x.Reasons {
			fmt.Fprintf(&b, "- %s\n", s)
		}
		if x.PValue != nil {
			line := fmt.Sprintf("  p(damage > %.4f) = %.4g (one-sided", x.MaxDropThreshold, *x.PValue)
			if x.PHolm != nil {
				line += fmt.Sprintf(", Holm-adjusted %.4g", *x.PHolm)
			}
			fmt.Fprintf(&b, "%s; %s)\n", line, x.CIMethod)
		}
		if x.Needed != nil {
			fmt.Fprintf(&b, "  to decide: %s\n", x.Needed.Note)
		}
	}
	return b.String()
}

func markdown(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Gate: %s\n\n", r.Verdict)
	fmt.Fprintf(&b, "- Policy: `%s`\n- Baseline: `%s`\n- Candidate: `%s`\n", r.Policy, r.Baseline, r.Candidate)
	if r.Holm != nil {
		fmt.Fprintf(&b, "- Holm family-wise control over %d gated benchmark(s), one-sided level %.4g\n", len(r.Holm.Family), r.Holm.Level)
	}
	b.WriteString("\n## Verdict reasons\n\n")
	for _, s := range r.VerdictReasons {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, s := range r.Warnings {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(s, "\n", "; "))
		}
	}
	b.WriteString("\n## Benchmarks\n\n| name | tier | status | metric | baseline | candidate | delta | CI on delta | n | reasons |\n|---|---|---|---|---:|---:|---:|---|---:|---|\n")
	f := func(x *float64) string {
		if x == nil {
			return "–"
		}
		return fmt.Sprintf("%.4f", *x)
	}
	for _, x := range r.Benchmarks {
		ci := "–"
		if x.DeltaCILower != nil && x.DeltaCIUpper != nil {
			ci = fmt.Sprintf("[%+.4f, %+.4f]", *x.DeltaCILower, *x.DeltaCIUpper)
		}
		reasons := strings.Join(x.Reasons, "; ")
		if x.Needed != nil {
			reasons += "; to decide: " + x.Needed.Note
		}
		fmt.Fprintf(&b, "| %s | %s | **%s** | %s | %s | %s | %s | %s | %d | %s |\n", x.Benchmark, x.Tier, x.Status, x.Metric,
			f(x.BaselineScore), f(x.CandidateScore), deltaText(x.Delta), ci, x.NPaired, strings.ReplaceAll(reasons, "|", `\|`))
	}
	return b.String()
}
