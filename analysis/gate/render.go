package gate

import (
	"cmp"
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
		fmt.Fprintf(&b, "Holm:      the breach tests' p-values adjusted over %d gated benchmark(s) (family-wise error control); a BREACH needs the adjusted p < %.4g\n", len(r.Holm.Family), r.Holm.Level)
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
		for _, l := range testLines(x, r.Level) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		if x.Needed != nil {
			fmt.Fprintf(&b, "  to decide: %s\n", x.Needed.Note)
		}
	}
	return b.String()
}

// formatP prints a p-value after "p": "< 0.0001" when it is that small,
// else "= " and the value.
func formatP(p float64) string {
	if p < 1e-4 {
		return pText(p)
	}
	return "= " + pText(p)
}

// pText is a p-value on its own: "< 0.0001" when it is that small.
func pText(p float64) string {
	if p < 1e-4 {
		return "< 0.0001"
	}
	return fmt.Sprintf("%.4g", p)
}

// testLines say what the paired numbers of x are, read aloud: what damage
// is, the method of the interval and the tests, and the two one-sided
// tests against max_drop with their hypotheses (the breach test's p is not
// a probability of damage: p = 1 only says there is no evidence of a
// breach). Nothing when x has no paired test.
func testLines(x *Result, level float64) []string {
	if x.PValue == nil || x.PWithin == nil {
		return nil
	}
	if level == 0 {
		level = 0.95 // a report from before the field
	}
	t := x.MaxDropThreshold
	holm := ""
	if x.PHolm != nil {
		holm = fmt.Sprintf(", Holm-adjusted %s", pText(*x.PHolm))
	}
	return []string{
		fmt.Sprintf("damage = %s; the %.4g%% CI and both tests: %s", damageDefinition(x.Direction), 100*level, cmp.Or(x.test, x.CIMethod)),
		fmt.Sprintf("breach test: H0 damage ≤ %.4f, H1 damage > %.4f: one-sided p %s%s", t, t, formatP(*x.PValue), holm),
		fmt.Sprintf("within test: H0 damage ≥ %.4f, H1 damage < %.4f: one-sided p %s", t, t, formatP(*x.PWithin)),
		fmt.Sprintf("(each decides at p < %.4g, as the %.4g%% interval's ends do; a p-value is not the probability of damage)", (1-level)/2, 100*level),
	}
}

// pCell is a p-value in a table cell, with its Holm-adjusted value.
func pCell(p, holm *float64) string {
	if p == nil {
		return "–"
	}
	s := pText(*p)
	if holm != nil {
		s += " (Holm " + pText(*holm) + ")"
	}
	return s
}

func markdown(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Gate: %s\n\n", r.Verdict)
	fmt.Fprintf(&b, "- Policy: `%s`\n- Baseline: `%s`\n- Candidate: `%s`\n", r.Policy, r.Baseline, r.Candidate)
	if r.Holm != nil {
		fmt.Fprintf(&b, "- Holm: the breach tests' p-values adjusted over %d gated benchmark(s) (family-wise error control); a BREACH needs the adjusted p < %.4g\n", len(r.Holm.Family), r.Holm.Level)
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
	level := cmp.Or(r.Level, 0.95)
	fmt.Fprintf(&b, "\n## Benchmarks\n\n| name | tier | status | metric | baseline | candidate | delta | %.4g%% CI on delta | breach p | within p | n | reasons |\n|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---|\n", 100*level)
	f := func(x *float64) string {
		if x == nil {
			return "–"
		}
		return fmt.Sprintf("%.4f", *x)
	}
	var tests []string
	for _, x := range r.Benchmarks {
		ci := "–"
		if x.DeltaCILower != nil && x.DeltaCIUpper != nil {
			ci = fmt.Sprintf("[%+.4f, %+.4f]", *x.DeltaCILower, *x.DeltaCIUpper)
		}
		reasons := strings.Join(x.Reasons, "; ")
		if x.Needed != nil {
			reasons += "; to decide: " + x.Needed.Note
		}
		fmt.Fprintf(&b, "| %s | %s | **%s** | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", x.Benchmark, x.Tier, x.Status, x.Metric,
			f(x.BaselineScore), f(x.CandidateScore), deltaText(x.Delta), ci, pCell(x.PValue, x.PHolm), pCell(x.PWithin, nil), x.NPaired, strings.ReplaceAll(reasons, "|", `\|`))
		if x.test != "" {
			tests = append(tests, fmt.Sprintf("%s: %s", x.Benchmark, x.test))
		}
	}
	fmt.Fprintf(&b, "\ndamage = baseline − candidate (candidate − baseline for lower_is_better). "+
		"Breach p: one-sided test of H0 damage ≤ max_drop against H1 damage > max_drop; within p: H0 damage ≥ max_drop against H1 damage < max_drop. "+
		"Each decides at p < %.4g, as the %.4g%% interval's ends do; a p-value is not the probability of damage.", (1-level)/2, 100*level)
	if len(tests) > 0 {
		fmt.Fprintf(&b, " Interval and tests: %s.", strings.Join(tests, "; "))
	}
	b.WriteString("\n")
	return b.String()
}
