package reproduce

import (
	"fmt"
	"io"
	"strings"
)

// Text writes the report for a terminal: one line per benchmark, its
// reasons indented under it, the notes, and the verdict line last
// ("REPRODUCED sha256:… (3 benchmarks within ±0.030)"), so that the last
// line of the output is the answer.
func (r *Report) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "reproduce %s\n  published %s\n  new       %s\n\n", r.recipe(), r.Published, r.New)
	for _, bm := range r.Benchmarks {
		fmt.Fprintf(&b, "%-12s %-12s %s\n", bm.Verdict, bm.Benchmark, bm.summary())
		for _, reason := range bm.Reasons {
			fmt.Fprintf(&b, "    %s\n", reason)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "\n%s %s (%s)\n", r.Verdict, r.recipe(), strings.Join(r.Reasons, "; "))
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown writes the report as a Markdown section: the verdict, a table
// of the benchmarks, their reasons, and the provenance differences.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Reproduction of `%s`: %s\n\n", r.recipe(), r.Verdict)
	fmt.Fprintf(&b, "%s.\n\n", strings.Join(r.Reasons, "; "))
	fmt.Fprintf(&b, "Published run `%s`, new run `%s`. Margin ±%g, two-sided α = %g, %g%% adjusted paired intervals on new − published.\n\n",
		r.Published, r.New, r.Margin, r.Alpha, 100*r.Level)
	b.WriteString("| Benchmark | Verdict | Metric | Published | New | Difference | CI | Test p | Paired items |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---|---:|---:|\n")
	for _, bm := range r.Benchmarks {
		if bm.Paired == 0 {
			fmt.Fprintf(&b, "| %s | **%s** | %s | %s | %s | | | | 0 |\n", md(bm.Benchmark), bm.Verdict, bm.Metric, value(bm.Published.Value), value(bm.New.Value))
			continue
		}
		fmt.Fprintf(&b, "| %s | **%s** | %s | %s | %s | %+.4f | [%+.4f, %+.4f] | %.4g | %d |\n", md(bm.Benchmark), bm.Verdict, bm.Metric,
			value(bm.Published.Value), value(bm.New.Value), bm.Delta, bm.CI.Lo, bm.CI.Hi, bm.Test.P, bm.Paired)
	}
	b.WriteString("\n")
	for _, bm := range r.Benchmarks {
		fmt.Fprintf(&b, "## %s: %s\n\n", md(bm.Benchmark), bm.Verdict)
		for _, reason := range bm.Reasons {
			fmt.Fprintf(&b, "- %s\n", md(reason))
		}
		b.WriteString("\n")
	}
	if len(r.Provenance) > 0 {
		b.WriteString("## Provenance differences\n\n| Benchmark | Field | Published | New | Kind |\n|---|---|---|---|---|\n")
		for _, d := range r.Provenance {
			kind := "infrastructure"
			if d.Methodology {
				kind = "**methodology**"
			}
			fmt.Fprintf(&b, "| %s | %s | `%s` | `%s` | %s |\n", md(d.Benchmark), md(d.Field), code(orNone(d.Published)), code(orNone(d.New)), kind)
		}
		b.WriteString("\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", md(n))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) recipe() string {
	if r.RecipeHash == "" {
		return "(no recipe hash)"
	}
	return r.RecipeHash
}

// summary is a benchmark's numbers on one line.
func (bm *Benchmark) summary() string {
	if bm.Paired == 0 {
		return fmt.Sprintf("%s %s → %s", metricOr(bm.Metric), value(bm.Published.Value), value(bm.New.Value))
	}
	return fmt.Sprintf("%s %s → %s  Δ %+.4f [%+.4f, %+.4f]  p = %.3g  (%d items)", bm.Metric,
		value(bm.Published.Value), value(bm.New.Value), bm.Delta, bm.CI.Lo, bm.CI.Hi, bm.Test.P, bm.Paired)
}

func metricOr(m string) string {
	if m == "" {
		return "headline"
	}
	return m
}

func value(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.4f", *v)
}

// md escapes the characters that would break a table cell.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// code keeps a value inside one code span.
func code(s string) string {
	return strings.NewReplacer("`", "'", "|", `\|`, "\n", " ").Replace(s)
}
