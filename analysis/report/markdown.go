package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/nel-eval/nel/analysis/report/internal/view"
	"github.com/nel-eval/nel/runtime/metrics"
)

// mdEscaper backslash-escapes the characters that markdown (CommonMark and
// GitHub tables) would read as markup, and the HTML that renderers pass
// through: text from a bundle prints as itself.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`,
	`<`, `\<`, `>`, `\>`, `|`, `\|`, `#`, `\#`, `&`, `\&`, `~`, `\~`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// mdText escapes s for markdown text, tables included.
func mdText(s string) string { return mdEscaper.Replace(s) }

// mdCode writes s as an inline code span, whatever backticks it holds: the
// fence is one backtick longer than the longest run inside, with spaces
// padding content that starts or ends with one. In a table cell '|' is
// escaped (GitHub splits cells before it reads code spans).
func mdCode(s string, inTable bool) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	if inTable {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	return fence + s + fence
}

type mdWriter struct {
	w   *bufio.Writer
	err error
}

func (m *mdWriter) printf(format string, args ...any) {
	if m.err == nil {
		_, m.err = fmt.Fprintf(m.w, format, args...)
	}
}

// table writes a GitHub table; cells must already be escaped.
func (m *mdWriter) table(head []string, rows [][]string, align string) {
	m.printf("| %s |\n|", strings.Join(head, " | "))
	for i := range head {
		if i < len(align) && align[i] == 'r' {
			m.printf("---:|")
		} else {
			m.printf("---|")
		}
	}
	m.printf("\n")
	for _, r := range rows {
		m.printf("| %s |\n", strings.Join(r, " | "))
	}
	m.printf("\n")
}

func renderMarkdown(w io.Writer, suite []*metrics.Bundle, opts Options) error {
	m := &mdWriter{w: bufio.NewWriter(w)}
	m.printf("# %s\n\n", mdText(view.DocTitle(opts.Title)))
	if opts.Source != "" {
		m.printf("Run: %s · %d benchmark(s)\n\n", mdCode(opts.Source, false), len(suite))
	}
	if view.Simulated(suite) {
		m.printf("> **⚠ %s** Affected: ", view.SimulatedWarning)
		var names []string
		for _, b := range suite {
			if b.Provenance.Simulated {
				names = append(names, mdCode(view.Key(b), false))
			}
		}
		m.printf("%s.\n\n", strings.Join(names, ", "))
	}
	if len(suite) == 0 {
		m.printf("No benchmarks.\n")
		return m.flush()
	}

	m.printf("## Summary\n\n")
	level := view.CILevel(suite)
	var rows [][]string
	for _, b := range suite {
		h := view.HeadlineScore(b)
		value := view.ValueCell(b)
		if b.Provenance.Simulated {
			value += " (simulated)"
		}
		clt, boot := view.IntervalCells(b)
		rows = append(rows, []string{
			"[" + mdText(view.Key(b)) + "](#" + view.Anchor(b) + ")", mdCode(h.Metric, true), "**" + value + "**",
			clt, boot, view.Count(b.Items), view.Count(b.Repeats), view.InfraCell(b.Validity), view.FailuresCell(b.Failures),
		})
	}
	ha, hb := view.IntervalHeads(level, view.HeadlineScores(suite))
	m.table([]string{"Benchmark", "Metric", "Value", ha, hb, "Items", "Repeats", "Infra failures (not scored)", "Model errors"}, rows, "__rrrrrrr")
	m.printf("%s\n\n", mdText(view.IntervalNote))

	for _, b := range suite {
		m.benchmark(b)
	}
	return m.flush()
}

func (m *mdWriter) flush() error {
	if m.err != nil {
		return m.err
	}
	return m.w.Flush()
}

// scoreRows are the rows of a metric table.
func scoreRows(scores []metrics.Score, name func(metrics.Score) string) [][]string {
	var rows [][]string
	for _, s := range scores {
		rows = append(rows, []string{name(s), view.Num(s.Value), view.IVCell(s.CLT), view.IVCell(s.Bootstrap), view.Count(s.N)})
	}
	return rows
}

// mdHeadline is headline(s) with the metric's name escaped (the rest is
// numbers and labels this package writes).
func mdHeadline(s metrics.Score) string {
	out := view.Headline(s)
	if s.Metric != "" {
		out = mdText(s.Metric) + strings.TrimPrefix(out, s.Metric)
	}
	return out
}

func (m *mdWriter) benchmark(b *metrics.Bundle) {
	m.printf("<a id=\"%s\"></a>\n\n## %s\n\n", view.Anchor(b), mdText(view.BenchTitle(b)))
	if b.Provenance.Simulated {
		m.printf("> **⚠ %s**\n\n", view.SimulatedWarning)
	}
	h := view.HeadlineScore(b)
	if b.Validity.Invalid {
		m.printf("> **⛔ %s**\n\n", mdText(view.InvalidSentence(b)))
		m.printf("**%s** · %s not reported · %s", view.Invalid, mdText(h.Metric), view.Design(b))
	} else {
		m.printf("**%s** · %s", mdHeadline(h), view.Design(b))
	}
	if b.Binary {
		m.printf(" · binary rewards")
	}
	m.printf("\n\n")
	if len(b.Notes) > 0 {
		m.printf("**Notes**\n\n")
		for _, n := range b.Notes {
			m.printf("- %s\n", mdText(n))
		}
		m.printf("\n")
	}
	if !b.Validity.Invalid {
		m.scores(b)
	}

	m.printf("### Runtime\n\n")
	var rows [][]string
	for _, r := range view.RuntimeRows(b) {
		rows = append(rows, []string{r[0], mdText(r[1])})
	}
	m.table([]string{"Statistic", "Value"}, rows, "_r")

	m.printf("### Infrastructure failures\n\n%s.\n\n", mdText(view.InfraSummary(b.Validity)))
	m.failureClasses(b.Validity.Classes, "Share of samples")
	m.printf("### Model errors\n\n%s.\n\n", mdText(view.FailuresSummary(b.Failures)))
	m.failureClasses(b.Failures.Categories, "Share of scored samples")
	if b.Agent != nil {
		m.agent(b.Agent)
	}

	m.printf("### Provenance\n\n")
	rows = rows[:0]
	for _, r := range view.ProvenanceRows(b) {
		v := mdCode(r[1], true)
		if r[0] == "Simulated" && b.Provenance.Simulated {
			v = "**" + mdText(r[1]) + "**"
		} else if r[0] == "Simulated" || r[0] == "Shards" || r[0] == "Time span" || r[1] == NA {
			v = mdText(r[1])
		}
		rows = append(rows, []string{r[0], v})
	}
	m.table([]string{"Field", "Value"}, rows, "__")
}

// failureClasses writes a table of failure classes (the share column
// headed share) and their exemplars; nothing when there are none.
func (m *mdWriter) failureClasses(cs []metrics.FailureCategory, share string) {
	if len(cs) == 0 {
		return
	}
	var rows [][]string
	for _, fc := range cs {
		rows = append(rows, []string{mdCode(fc.Category, true), view.Count(fc.Count), view.Pct(fc.Share)})
	}
	m.table([]string{"Category", "Count", share}, rows, "_rr")
	for _, fc := range cs {
		ex := view.Exemplars(fc)
		if len(ex) == 0 {
			continue
		}
		m.printf("Examples of %s:\n\n", mdCode(fc.Category, false))
		for _, e := range ex {
			m.printf("- item %s (index %d, repeat %d): %s\n", mdCode(e.ItemID, false), e.ItemIdx, e.Repeat, mdCode(view.ExemplarText(e.Error), false))
		}
		m.printf("\n")
	}
}

// scores writes the sections of b's numbers: pass@k, the variance
// decomposition, categories and scorer metrics.
func (m *mdWriter) scores(b *metrics.Bundle) {
	h := view.HeadlineScore(b)
	level := view.CILevel([]*metrics.Bundle{b})
	head := func(scores []metrics.Score) []string {
		ha, hb := view.IntervalHeads(level, scores)
		return []string{"Metric", "Value", ha, hb, "n items"}
	}
	metricName := func(s metrics.Score) string { return mdCode(s.Metric, true) }

	if ks := view.PassAtK(b); len(ks) > 0 {
		m.printf("### pass@k\n\n")
		ks = append([]metrics.Score{h}, ks...)
		m.table(head(ks), scoreRows(ks, metricName), "_rrrr")
	}

	m.printf("### Variance decomposition\n\n")
	if v := b.Variance; v != nil {
		m.printf("- between-item variance %s · within-item variance %s\n", view.Fix(v.Between, 4), view.WithinStr(v))
		m.printf("- standard error of the headline at %s items × %s repeats: %s\n", view.Count(b.Items), view.Count(b.Repeats), view.Fix(v.SE, 4))
		m.printf("- optimal repeats: %s\n", view.OptimalSentence(b, v))
		m.printf("- minimum detectable effect: **%s**\n\n", view.MDESentence(v))
	} else {
		m.printf("Not available (fewer than two items).\n\n")
	}

	if len(b.Categories) > 0 {
		m.printf("### Categories\n\n")
		var rows [][]string
		for _, c := range b.Categories {
			s := c.Score
			rows = append(rows, []string{mdText(c.Name), view.Num(s.Value), view.IVCell(s.CLT), view.IVCell(s.Bootstrap), view.Count(s.N)})
		}
		ha, hb := view.IntervalHeads(level, view.CategoryScores(b))
		m.table([]string{"Category", mdCode(h.Metric, true), ha, hb, "n items"}, rows, "_rrrr")
	}

	if sc := append(view.ScorerMetrics(b), view.OtherMetrics(b)...); len(sc) > 0 {
		m.printf("### Scorer metrics\n\n")
		m.table(head(sc), scoreRows(sc, metricName), "_rrrr")
		notes := view.ScorerNotes(b)
		for _, n := range notes {
			m.printf("- %s\n", mdText(n))
		}
		if len(notes) > 0 {
			m.printf("\n")
		}
	}
}

// agent writes the trajectory audit of an agentic benchmark.
func (m *mdWriter) agent(a *metrics.Agent) {
	m.printf("### %s\n\n%s.\n\n", view.AgentTitle, mdText(view.AgentSummary(a)))
	for _, t := range view.AgentTables(a) {
		rows := make([][]string, len(t.Rows))
		for i, r := range t.Rows {
			for _, c := range r {
				rows[i] = append(rows[i], mdText(c))
			}
		}
		m.printf("**%s**\n\n", t.Title)
		m.table(t.Head, rows, t.Align)
	}
}
