package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/nel-eval/nel/runtime/metrics"
)

// Formats.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// WriteJSON writes v as indented JSON with a final newline.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// Render writes the reports in format; multi says whether the inputs were
// run directories (the JSON is then a MultiReport).
func Render(w io.Writer, format string, reports []*Report, multi bool, verdict string, warnings []string) error {
	switch format {
	case FormatJSON:
		if !multi && len(reports) == 1 {
			r := *reports[0]
			r.Warnings = append(append([]string{}, warnings...), r.Warnings...)
			return WriteJSON(w, &r)
		}
		return WriteJSON(w, &MultiReport{ReportVersion: ReportVersion, Verdict: verdict, Benchmarks: reports, Warnings: warnings})
	case FormatMarkdown:
		var b strings.Builder
		if multi {
			fmt.Fprintf(&b, "# nel compare: %s\n\n", verdict)
			for _, wn := range warnings {
				fmt.Fprintf(&b, "- ⚠ %s\n", wn)
			}
			if len(warnings) > 0 {
				b.WriteString("\n")
			}
		} else {
			for _, wn := range warnings {
				fmt.Fprintf(&b, "> ⚠ %s\n\n", wn)
			}
		}
		for _, r := range reports {
			markdown(&b, r, multi)
		}
		_, err := io.WriteString(w, b.String())
		return err
	default:
		var b strings.Builder
		if multi {
			fmt.Fprintf(&b, "%s (worst of %d benchmarks)\n", verdict, len(reports))
			for _, wn := range warnings {
				fmt.Fprintf(&b, "warning: %s\n", wn)
			}
			b.WriteString("\n")
		} else {
			for _, wn := range warnings {
				fmt.Fprintf(&b, "warning: %s\n", wn)
			}
		}
		for i, r := range reports {
			if i > 0 {
				b.WriteString("\n")
			}
			text(&b, r)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
}

func text(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "%s  %s\n", r.Verdict, r.Benchmark)
	fmt.Fprintf(b, "Baseline:  %s%s\n", r.Baseline.Path, modelText(r.Baseline))
	fmt.Fprintf(b, "Candidate: %s%s\n", r.Candidate.Path, modelText(r.Candidate))
	if !r.Methodology.Same {
		fmt.Fprintf(b, "Methodology: DIFFERENT (allowed): %s\n", strings.ReplaceAll(r.Methodology.Explain(r.Benchmark), "\n", "\n  "))
	}
	p := r.Pairing
	if r.Verdict != Invalid {
		fmt.Fprintf(b, "Items:     %d paired (coverage %.1f%%), %d only in baseline, %d only in candidate, %d changed\n",
			p.Paired, 100*p.Coverage, p.OnlyInBaseline, p.OnlyInCandidate, p.Changed)
		if p.Method != "" {
			fmt.Fprintf(b, "Paired:    %s\n", p.Method)
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "warning: %s\n", w)
	}
	b.WriteString("\nVERDICT REASONS\n")
	for _, s := range r.VerdictReasons {
		fmt.Fprintf(b, "- %s\n", s)
	}
	if r.Verdict == Invalid {
		return
	}
	b.WriteString("\nMETRICS (over paired items)\n")
	fmt.Fprintf(b, "%-22s %9s %9s %9s  %-22s %-18s %s\n", "metric", "baseline", "candidate", "delta", "95% CI", "interval", "corr")
	for _, m := range r.Metrics {
		ci, method := "-", "-"
		if m.CI != nil {
			ci = fmt.Sprintf("[%+.4f, %+.4f]", m.CI.Lo, m.CI.Hi)
			method = m.CI.Label()
		}
		corr := "null"
		if m.Correlation != nil {
			corr = fmt.Sprintf("%.3f", *m.Correlation)
		}
		fmt.Fprintf(b, "%-22s %9.4f %9.4f %+9.4f  %-22s %-18s %s\n", m.Metric, m.Baseline, m.Candidate, m.Delta, ci, method, corr)
		if m.CorrelationNote != "" {
			fmt.Fprintf(b, "  correlation %s\n", m.CorrelationNote)
		}
	}
	if f := r.Flips; f != nil {
		fmt.Fprintf(b, "\nFLIPS (correct = per-item mean reward > %g)\n", f.CorrectAbove)
		fmt.Fprintf(b, "both correct %d · regressions %d · improvements %d · both wrong %d\n", f.BothCorrect, f.Regressions, f.Improvements, f.BothWrong)
		exemplarsText(b, "regression", f.RegressionExemplars)
		exemplarsText(b, "improvement", f.ImprovementExemplars)
	}
	if t := r.Test; t != nil {
		fmt.Fprintf(b, "\nTEST  %s: p = %.6g (%s)%s\n", t.Name, t.P, t.Alternative, map[bool]string{true: fmt.Sprintf(" — significant at α = %g", t.Alpha), false: ""}[t.Significant])
		fmt.Fprintf(b, "  %s\n", t.Reason)
	}
	if m := r.MDE; m != nil && m.Value != nil {
		fmt.Fprintf(b, "MDE   %.4f in reward units (80%% power, two-sided α 0.05; SD of per-item deltas %.4f over %d items)\n", *m.Value, m.SDDelta, m.N)
	}
}

func modelText(ri RunInfo) string {
	var parts []string
	if ri.Model != "" {
		parts = append(parts, "model "+ri.Model)
	}
	if ri.Source != "" {
		parts = append(parts, ri.Source+" run, recipe hash "+orNone(ri.RecipeHash))
	}
	if ri.Simulated {
		parts = append(parts, "SIMULATED")
	}
	if v := ri.Validity; v.InfraErrors > 0 {
		parts = append(parts, "infra failures, not scored: "+infraText(v))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  (" + strings.Join(parts, ", ") + ")"
}

func exemplarsText(b *strings.Builder, kind string, ex []FlipExemplar) {
	for _, e := range ex {
		fmt.Fprintf(b, "  %s item %d %s", kind, e.ItemIdx, e.ItemID)
		if e.Category != "" {
			fmt.Fprintf(b, " [%s]", e.Category)
		}
		fmt.Fprintf(b, ": expected %q, baseline %q (%.2f) → candidate %q (%.2f)\n", e.Expected, e.BaselineExtracted, e.BaselineReward, e.CandidateExtracted, e.CandidateReward)
		if e.BaselineResponse != "" || e.CandidateResponse != "" {
			fmt.Fprintf(b, "    baseline:  %s\n    candidate: %s\n", e.BaselineResponse, e.CandidateResponse)
		}
	}
}

func markdown(b *strings.Builder, r *Report, multi bool) {
	h := "#"
	if multi {
		h = "##"
	}
	fmt.Fprintf(b, "%s %s: %s\n\n", h, r.Benchmark, r.Verdict)
	fmt.Fprintf(b, "| | path | model |\n|---|---|---|\n| baseline | `%s` | %s%s |\n| candidate | `%s` | %s%s |\n\n",
		r.Baseline.Path, r.Baseline.Model, sourceCell(r.Baseline), r.Candidate.Path, r.Candidate.Model, sourceCell(r.Candidate))
	if bv, cv := r.Baseline.Validity, r.Candidate.Validity; bv.InfraErrors+cv.InfraErrors > 0 {
		fmt.Fprintf(b, "Infrastructure failures, not scored: baseline %s, candidate %s.\n\n", infraText(bv), infraText(cv))
	}
	p := r.Pairing
	if r.Verdict != Invalid {
		fmt.Fprintf(b, "Items: %d paired (coverage %.1f%%), %d only in baseline, %d only in candidate, %d changed.\n\n",
			p.Paired, 100*p.Coverage, p.OnlyInBaseline, p.OnlyInCandidate, p.Changed)
		if p.Method != "" {
			fmt.Fprintf(b, "Paired: %s.\n\n", p.Method)
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "> ⚠ %s\n\n", w)
	}
	for _, s := range r.VerdictReasons {
		fmt.Fprintf(b, "- %s\n", s)
	}
	if r.Verdict == Invalid {
		b.WriteString("\n")
		return
	}
	b.WriteString("\n| metric | baseline | candidate | delta | 95% CI | interval | correlation |\n|---|---:|---:|---:|---|---|---:|\n")
	for _, m := range r.Metrics {
		ci, method := "–", "–"
		if m.CI != nil {
			ci = fmt.Sprintf("[%+.4f, %+.4f]", m.CI.Lo, m.CI.Hi)
			method = m.CI.Label()
		}
		corr := "–"
		if m.Correlation != nil {
			corr = fmt.Sprintf("%.3f", *m.Correlation)
		}
		fmt.Fprintf(b, "| %s | %.4f | %.4f | %+.4f | %s | %s | %s |\n", m.Metric, m.Baseline, m.Candidate, m.Delta, ci, method, corr)
	}
	if f := r.Flips; f != nil {
		fmt.Fprintf(b, "\nFlips (correct = per-item mean reward > %g): both correct %d, **regressions %d**, improvements %d, both wrong %d.\n",
			f.CorrectAbove, f.BothCorrect, f.Regressions, f.Improvements, f.BothWrong)
		if len(f.RegressionExemplars)+len(f.ImprovementExemplars) > 0 {
			b.WriteString("\n| flip | item | category | expected | baseline | candidate |\n|---|---|---|---|---|---|\n")
			for _, list := range []struct {
				kind string
				ex   []FlipExemplar
			}{{"regression", f.RegressionExemplars}, {"improvement", f.ImprovementExemplars}} {
				for _, e := range list.ex {
					fmt.Fprintf(b, "| %s | %d `%s` | %s | %s | %s | %s |\n", list.kind, e.ItemIdx, e.ItemID, e.Category, mdCell(e.Expected),
						mdCell(e.BaselineExtracted+" "+e.BaselineResponse), mdCell(e.CandidateExtracted+" "+e.CandidateResponse))
				}
			}
		}
	}
	if t := r.Test; t != nil {
		fmt.Fprintf(b, "\nTest: **%s**, p = %.6g (%s). %s.\n", t.Name, t.P, t.Alternative, t.Reason)
	}
	if m := r.MDE; m != nil && m.Value != nil {
		fmt.Fprintf(b, "MDE: %.4f in reward units (80%% power, two-sided α 0.05).\n", *m.Value)
	}
	b.WriteString("\n")
}

// infraText is "6 of 100 samples (6%), INVALID above max_error_rate 5%".
func infraText(v metrics.Validity) string {
	s := fmt.Sprintf("%d of %d samples (%s)", v.InfraErrors, v.Samples, metrics.Percent(v.Rate))
	if v.Invalid {
		s += ", INVALID above max_error_rate " + metrics.Percent(v.MaxErrorRate)
	}
	return s
}

func mdCell(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "|", `\|`))
	return strings.ReplaceAll(s, "\n", " ")
}

// sourceCell marks a NeMo Evaluator side in the markdown table.
func sourceCell(ri RunInfo) string {
	if ri.Source == "" {
		return ""
	}
	return " (" + ri.Source + " run; recipe hash `" + orNone(ri.RecipeHash) + "` is NeMo's config_hash)"
}
