package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/analysis/report/internal/view"
	"github.com/nel-eval/nel/runtime/metrics"
)

// Document is the JSON report: the bundles as eval.json holds them, so
// `nel report DIR -f json | jq '.benchmarks[].headline'` works.
type Document struct {
	ReportVersion int               `json:"report_version"`
	Benchmarks    []*metrics.Bundle `json:"benchmarks"`
}

func renderJSON(w io.Writer, suite []*metrics.Bundle) error {
	if suite == nil {
		suite = []*metrics.Bundle{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Document{ReportVersion: Version, Benchmarks: suite})
}

// CSVHeader is the CSV report's header row. Each row is one (benchmark,
// metric): every metric of the bundle, then "category:<name>" for each
// category (the headline restricted to it), then for an agentic benchmark
// the trajectory audit's "agent:…" rows (agentCSV). Undefined values and
// missing intervals are empty cells.
//
// The validity columns repeat on every row of a benchmark: samples run,
// samples scored, infrastructure failures (never scored), the
// benchmark's max_error_rate, and valid (false: INVALID). An INVALID
// benchmark's rows have no value, n or intervals: they would not measure
// the model.
var CSVHeader = []string{
	"benchmark", "name", "metric", "value", "n",
	"ci_level", "clt_method", "clt_lo", "clt_hi", "bootstrap_method", "bootstrap_lo", "bootstrap_hi",
	"items", "repeats", "simulated",
	"samples", "scored_samples", "infra_errors", "max_error_rate", "valid",
}

// csvFloat is full precision, empty when undefined.
func csvFloat(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func renderCSV(w io.Writer, suite []*metrics.Bundle) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, b := range suite {
		row := func(metric string, s metrics.Score) []string {
			level := ""
			var clt, boot [3]string
			for _, x := range []struct {
				iv  *metrics.Interval
				out *[3]string
			}{{s.CLT, &clt}, {s.Bootstrap, &boot}} {
				if x.iv == nil {
					continue
				}
				*x.out = [3]string{string(x.iv.Method), csvFloat(&x.iv.Lo), csvFloat(&x.iv.Hi)}
				if level == "" {
					level = strconv.FormatFloat(x.iv.Level, 'g', -1, 64)
				}
			}
			v := b.Validity
			value, n := csvFloat(s.Value), strconv.Itoa(s.N)
			if v.Invalid {
				value, n, level, clt, boot = "", "", "", [3]string{}, [3]string{}
			}
			return []string{
				view.Key(b), b.Name, metric, value, n,
				level, clt[0], clt[1], clt[2], boot[0], boot[1], boot[2],
				strconv.Itoa(b.Items), strconv.Itoa(b.Repeats), strconv.FormatBool(b.Provenance.Simulated),
				strconv.Itoa(b.Samples), strconv.Itoa(b.Samples - v.InfraErrors), strconv.Itoa(v.InfraErrors),
				strconv.FormatFloat(v.MaxErrorRate, 'g', -1, 64), strconv.FormatBool(!v.Invalid),
			}
		}
		scores := b.Metrics
		if len(scores) == 0 && b.Headline.Metric != "" {
			scores = []metrics.Score{b.Headline}
		}
		for _, s := range scores {
			if err := cw.Write(row(s.Metric, s)); err != nil {
				return err
			}
		}
		for _, c := range b.Categories {
			if err := cw.Write(row("category:"+c.Name, c.Score)); err != nil {
				return err
			}
		}
		for _, r := range agentCSV(b) {
			if err := cw.Write(r); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// texEscaper escapes LaTeX's special characters (and the ones OT1 prints
// as something else) so any text typesets as itself.
var texEscaper = strings.NewReplacer(
	`\`, `\textbackslash{}`, `&`, `\&`, `%`, `\%`, `$`, `\$`, `#`, `\#`, `_`, `\_`,
	`{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`,
	`<`, `\textless{}`, `>`, `\textgreater{}`, `|`, `\textbar{}`, `"`, `\texttt{\char34}`,
	"–", "--", "—", "---", "×", `$\times$`, "≥", `$\geq$`, "→", `$\rightarrow$`, "·", `\textperiodcentered{}`,
	"α", `$\alpha$`, "≤", `$\leq$`, "…", `\dots{}`, "⚠", `(!)`,
	"\r\n", " ", "\n", " ", "\r", " ", "\t", " ",
)

// tex escapes s for LaTeX text mode.
func tex(s string) string { return texEscaper.Replace(s) }

type texWriter struct {
	w   *bufio.Writer
	err error
}

func (t *texWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// tabular writes a tabular; cells are escaped here.
func (t *texWriter) tabular(cols string, head []string, rows [][]string) {
	esc := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = tex(c)
		}
		return strings.Join(out, " & ")
	}
	t.printf("\\begin{tabular}{%s}\n\\hline\n%s \\\\\n\\hline\n", cols, esc(head))
	for _, r := range rows {
		t.printf("%s \\\\\n", esc(r))
	}
	t.printf("\\hline\n\\end{tabular}\n\n")
}

func renderLaTeX(w io.Writer, suite []*metrics.Bundle, opts Options) error {
	t := &texWriter{w: bufio.NewWriter(w)}
	t.printf("%% %s: LaTeX tabular fragments generated by nel report.\n", tex(view.DocTitle(opts.Title)))
	t.printf("%% \\input{} them in a document; they need no package.\n\n")
	level := view.CILevel(suite)
	if view.Simulated(suite) {
		t.printf("\\noindent\\textbf{%s}\n\n", tex(view.SimulatedWarning))
	}
	var rows [][]string
	for _, b := range suite {
		clt, boot := view.IntervalCells(b)
		rows = append(rows, []string{
			view.Key(b), view.HeadlineScore(b).Metric, view.ValueCell(b), clt, boot,
			view.Count(b.Items), view.Count(b.Repeats), view.InfraCell(b.Validity), view.FailuresCell(b.Failures),
		})
	}
	t.printf("%% Suite summary\n")
	ha, hb := view.IntervalHeads(level, view.HeadlineScores(suite))
	t.tabular("llrllrrrr", []string{"Benchmark", "Metric", "Value", ha, hb, "Items", "Repeats", "Infra failures", "Model errors"}, rows)
	t.printf("%s\n\n", tex(view.IntervalNote))

	for _, b := range suite {
		t.printf("%% Benchmark %s\n", tex(view.Key(b)))
		headline := view.Headline(view.HeadlineScore(b))
		if b.Validity.Invalid {
			headline = view.Invalid + " (" + view.HeadlineScore(b).Metric + " not reported)"
		}
		t.printf("\\noindent\\textbf{%s}: %s \\\\\n", tex(view.BenchTitle(b)), tex(headline+" · "+view.Design(b)))
		if b.Provenance.Simulated {
			t.printf("\\textbf{SIMULATED endpoint, not a model.} \\\\\n")
		}
		if s := view.InvalidSentence(b); s != "" {
			t.printf("\\textbf{%s} \\\\\n", tex(s))
		}
		if v := b.Variance; v != nil && !b.Validity.Invalid {
			t.printf("%s \\\\\n", tex("Variance: between-item "+view.Fix(v.Between, 4)+", within-item "+view.WithinStr(v)+"; "+view.MDESentence(v)+"."))
		}
		t.printf("%s \\\\\n", tex(view.InfraSummary(b.Validity)+"."))
		t.printf("%s \\\\\n", tex(view.FailuresSummary(b.Failures)+"."))
		for _, n := range b.Notes {
			t.printf("%s \\\\\n", tex("Note: "+n))
		}
		t.printf("\n")
		rows = rows[:0]
		scores := b.Metrics
		if len(scores) == 0 {
			scores = []metrics.Score{view.HeadlineScore(b)}
		}
		for _, s := range scores {
			rows = append(rows, []string{s.Metric, view.Num(s.Value), view.IVCell(s.CLT), view.IVCell(s.Bootstrap), view.Count(s.N)})
		}
		for _, c := range b.Categories {
			s := c.Score
			rows = append(rows, []string{"category: " + c.Name, view.Num(s.Value), view.IVCell(s.CLT), view.IVCell(s.Bootstrap), view.Count(s.N)})
		}
		if !b.Validity.Invalid {
			ha, hb := view.IntervalHeads(level, append(slices.Clone(scores), view.CategoryScores(b)...))
			t.tabular("lrllr", []string{"Metric", "Value", ha, hb, "n items"}, rows)
		}

		for _, x := range []struct {
			head string
			cs   []metrics.FailureCategory
		}{{"Infrastructure failure", b.Validity.Classes}, {"Model error", b.Failures.Categories}} {
			if len(x.cs) == 0 {
				continue
			}
			rows = rows[:0]
			for _, fc := range x.cs {
				rows = append(rows, []string{fc.Category, view.Count(fc.Count), view.Pct(fc.Share)})
			}
			t.tabular("lrr", []string{x.head, "Count", "Share"}, rows)
		}

		if b.Agent != nil {
			t.agent(b.Agent)
		}

		pairs := append(view.RuntimeRows(b), view.ProvenanceRows(b)...)
		rows = rows[:0]
		for _, p := range pairs {
			rows = append(rows, []string{p[0], p[1]})
		}
		t.tabular("ll", []string{"Runtime and provenance", ""}, rows)
	}
	if t.err != nil {
		return t.err
	}
	return t.w.Flush()
}

// agent writes the trajectory audit: its summary line, then one tabular
// per table, each under its title.
func (t *texWriter) agent(a *metrics.Agent) {
	t.printf("\\noindent\\textbf{%s}: %s \\\\\n\n", tex(view.AgentTitle), tex(view.AgentSummary(a)+"."))
	for _, tb := range view.AgentTables(a) {
		cols := make([]byte, len(tb.Head))
		for i := range cols {
			cols[i] = 'l'
			if i < len(tb.Align) && tb.Align[i] == 'r' {
				cols[i] = 'r'
			}
		}
		t.printf("%% %s\n", tex(tb.Title))
		t.tabular(string(cols), tb.Head, tb.Rows)
	}
}

// agentCSV are an agentic benchmark's CSV rows for its trajectory audit,
// each with a value and an n and the benchmark's other columns empty:
// agent:turns_mean, agent:turns_median and agent:turns_max (n: samples),
// agent:outcome:<outcome> (the share; n: its samples) and
// agent:tool_error_rate:<tool> (n: its calls).
func agentCSV(b *metrics.Bundle) [][]string {
	a := b.Agent
	if a == nil {
		return nil
	}
	line := func(metric string, v float64, n int) []string {
		r := make([]string, len(CSVHeader))
		r[0], r[1], r[2], r[3], r[4] = view.Key(b), b.Name, metric, strconv.FormatFloat(v, 'g', -1, 64), strconv.Itoa(n)
		return r
	}
	out := [][]string{
		line("agent:turns_mean", a.Turns.Mean, a.Samples),
		line("agent:turns_median", a.Turns.Median, a.Samples),
		line("agent:turns_max", float64(a.Turns.Max), a.Samples),
	}
	for _, o := range a.Outcomes {
		out = append(out, line("agent:outcome:"+o.Outcome, o.Share, o.Samples))
	}
	for _, u := range a.Tools {
		out = append(out, line("agent:tool_error_rate:"+u.Name, u.ErrorRate, u.Calls))
	}
	return out
}
