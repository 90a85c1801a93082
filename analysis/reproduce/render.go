package reproduce

import (
	"fmt"
	"io"
	"strings"
)

// Text writes the report for a terminal: one line per benchmark, its
// reasons indented under it, the provenance differences apart from the
// statistics, the notes, and the verdict line last ("REPRODUCED sha256:…
// (3 benchmarks within ±0.030)"), so that the last line of the output is
// the answer.
func (r *Report) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "reproduce %s\n  published %s\n  new       %s\n\n", r.recipe(), r.Published, r.New)
	for _, bm := range r.Benchmarks {
		fmt.Fprintf(&b, "%-12s %-12s %s\n", bm.Verdict, bm.Benchmark, bm.summary(len(r.HolmFamily)))
		if nc := bm.notComparable(); nc != "" {
			fmt.Fprintf(&b, "    %s\n", nc)
		}
		for _, reason := range bm.Reasons {
			fmt.Fprintf(&b, "    %s\n", reason)
		}
	}
	if len(r.Provenance) > 0 {
		b.WriteString("\nprovenance differences (apart from the statistics; a methodology one makes its benchmark not comparable):\n")
		for _, d := range r.Provenance {
			fmt.Fprintf(&b, "    %s: %s\n", d.Benchmark, d.Text())
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "\n%s %s (%s)\n", r.Verdict, r.recipe(), strings.Join(r.Reasons, "; "))
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown writes the report as a Markdown section: the verdict, the rule,
// a table of the benchmarks, their reasons, and the provenance
// differences.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Reproduction of `%s`: %s\n\n", r.recipe(), r.Verdict)
	fmt.Fprintf(&b, "%s.\n\n", strings.Join(r.Reasons, "; "))
	fmt.Fprintf(&b, "Published run `%s`, new run `%s`, compared by the difference new − published on paired items (adjusted paired intervals). "+
		"REPRODUCED when the two one-sided tests at α = %g put it within ±%g (the %.4g%% interval inside the margin); "+
		"DIFFERENT when the two-sided test is significant at α = %g and the interval leaves the margin; INCONCLUSIVE otherwise.",
		r.Published, r.New, r.Alpha, r.Margin, 100*(1-2*r.Alpha), r.Alpha)
	if m := len(r.HolmFamily); m > 1 {
		fmt.Fprintf(&b, " Both families of p-values are Holm-adjusted over the %d benchmarks.", m)
	}
	b.WriteString(" A methodology difference makes a benchmark not comparable: DIFFERENT whatever its statistics.\n\n")
	fmt.Fprintf(&b, "| Benchmark | Verdict | Statistics | Metric | Published | New | Difference | %g%% CI | %.4g%% equivalence interval | Equivalence p (TOST, H0 \\|Δ\\| ≥ margin) | Difference p (two-sided, H0 Δ = 0) | Paired items |\n",
		100*r.Level, 100*(1-2*r.Alpha))
	b.WriteString("|---|---|---|---|---:|---:|---:|---|---|---:|---:|---:|\n")
	for _, bm := range r.Benchmarks {
		verdict := "**" + bm.Verdict + "**"
		if len(bm.NotComparable) > 0 {
			verdict += " (not comparable)"
		}
		if bm.Paired == 0 {
			fmt.Fprintf(&b, "| %s | %s | | %s | %s | %s | | | | | | 0 |\n", md(bm.Benchmark), verdict, bm.Metric, side(bm.Published), side(bm.New))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %+.4f | [%+.4f, %+.4f] | [%+.4f, %+.4f] | %.4g | %.4g | %d |\n", md(bm.Benchmark), verdict, bm.Statistics, bm.Metric,
			value(bm.Published.Value), value(bm.New.Value), bm.Delta, bm.CI.Lo, bm.CI.Hi, bm.Equivalence.Lo, bm.Equivalence.Hi, bm.Equivalence.PHolm, bm.Test.PHolm, bm.Paired)
	}
	b.WriteString("\n")
	for _, bm := range r.Benchmarks {
		fmt.Fprintf(&b, "## %s: %s\n\n", md(bm.Benchmark), bm.Verdict)
		if nc := bm.notComparable(); nc != "" {
			fmt.Fprintf(&b, "- %s\n", md(nc))
		}
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
				kind = "**methodology** (not comparable)"
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

// summary is a benchmark's numbers on one line: the interval that
// decides equivalence and the two p-values that decide, each with the
// null hypothesis it tests, Holm-adjusted when the family has several
// benchmarks.
func (bm *Benchmark) summary(family int) string {
	if bm.Paired == 0 {
		return fmt.Sprintf("%s %s → %s", metricOr(bm.Metric), side(bm.Published), side(bm.New))
	}
	p := "p"
	if family > 1 {
		p = "Holm p"
	}
	e := bm.Equivalence
	return fmt.Sprintf("%s %s → %s  Δ %+.4f  %.4g%% equivalence interval [%+.4f, %+.4f]  equivalence (TOST, H0 |Δ| ≥ %g) %s = %.3g  difference (two-sided, H0 Δ = 0) %s = %.3g  (%d items)", bm.Metric,
		value(bm.Published.Value), value(bm.New.Value), bm.Delta, 100*e.Level, e.Lo, e.Hi, e.Margin, p, e.PHolm, p, bm.Test.PHolm, bm.Paired)
}

// notComparable says, apart from the statistics, that a methodology
// difference decides; "" when there is none.
func (bm *Benchmark) notComparable() string {
	if len(bm.NotComparable) == 0 {
		return ""
	}
	s := fmt.Sprintf("not comparable: the %s %s (methodology; see the provenance differences): DIFFERENT whatever the numbers",
		strings.Join(bm.NotComparable, ", "), plural(len(bm.NotComparable), "differs", "differ"))
	if bm.Statistics != "" {
		s += fmt.Sprintf(", whose verdict alone would be %s", bm.Statistics)
	}
	return s
}

func metricOr(m string) string {
	if m == "" {
		return "headline"
	}
	return m
}

// side is a run's value, or INVALID for a run whose value does not
// measure its model.
func side(s Score) string {
	if s.Invalid {
		return "INVALID"
	}
	return value(s.Value)
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
