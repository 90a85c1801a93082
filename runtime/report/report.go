// Package report renders a run's benchmark bundles (eval.json, see
// runtime/metrics) as a suite report: markdown for a terminal or a pull
// request, one self-contained HTML file with charts, JSON for jq, CSV for a
// spreadsheet and LaTeX tabulars for a paper.
//
// Every format says the same things: a suite summary, then per benchmark
// the headline with both its intervals labelled, pass@k, the variance
// decomposition and the minimum detectable effect, categories, extra
// scorer metrics, runtime, failures with exemplars, provenance and the
// bundle's notes. An undefined value prints as "n/a" with the note that
// explains it, never as NaN.
package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/metrics"
)

// Version is the version of the JSON report format.
const Version = 1

// Format is an output format.
type Format string

// The formats.
const (
	Markdown Format = "markdown"
	HTML     Format = "html"
	JSON     Format = "json"
	CSV      Format = "csv"
	LaTeX    Format = "latex"
)

// Formats lists every format, in the order help texts name them.
var Formats = []Format{Markdown, HTML, JSON, CSV, LaTeX}

// extensions maps a file extension to the format it implies.
var extensions = map[string]Format{
	".md":       Markdown,
	".markdown": Markdown,
	".html":     HTML,
	".htm":      HTML,
	".json":     JSON,
	".csv":      CSV,
	".tex":      LaTeX,
}

// ParseFormat parses a format name ("md" and "tex" are accepted as
// aliases).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case Markdown, HTML, JSON, CSV, LaTeX:
		return f, nil
	case "md":
		return Markdown, nil
	case "tex":
		return LaTeX, nil
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown report format %q (valid: %s)", s, strings.Join(names, ", "))
}

// FormatForPath infers the format from a file name's extension; ok is
// false when the extension names none.
func FormatForPath(path string) (f Format, ok bool) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 || strings.ContainsAny(path[i:], `/\`) {
		return "", false
	}
	f, ok = extensions[strings.ToLower(path[i:])]
	return f, ok
}

// Options adjust a report.
type Options struct {
	// Title heads the report; empty means "nel evaluation report".
	Title string
	// Source names where the bundles came from (the run directory), shown
	// under the title; may be empty.
	Source string
}

func (o Options) title() string {
	if o.Title != "" {
		return o.Title
	}
	return "nel evaluation report"
}

// Render writes the report of suite in format.
func Render(w io.Writer, suite []*metrics.Bundle, format Format, opts Options) error {
	if slices.Contains(suite, nil) {
		return fmt.Errorf("report: nil bundle in suite")
	}
	switch format {
	case Markdown:
		return renderMarkdown(w, suite, opts)
	case HTML:
		return renderHTML(w, suite, opts)
	case JSON:
		return renderJSON(w, suite)
	case CSV:
		return renderCSV(w, suite)
	case LaTeX:
		return renderLaTeX(w, suite, opts)
	}
	_, err := ParseFormat(string(format))
	return err
}

// NA is what an undefined value prints as.
const NA = "n/a"

// num formats a score value: four decimals, NA when undefined.
func num(v *float64) string {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return NA
	}
	return fix(*v, 4)
}

// fix formats x with prec decimals ("-0.0000" prints as "0.0000"); NA for
// NaN and ±Inf, which a bundle never holds but a hand-made one might.
func fix(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return NA
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	if strings.TrimLeft(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

// pct formats a share in [0, 1] as a percentage with one decimal.
func pct(x float64) string { return fix(100*x, 1) + "%" }

// count formats an integer with thin grouping (12,345).
func count[T int | int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ms formats milliseconds: "850 ms", "12.3 s".
func ms(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return NA
	case x >= 10000:
		return fix(x/1000, 1) + " s"
	case x >= 1000:
		return fix(x/1000, 2) + " s"
	case x >= 10:
		return fix(x, 0) + " ms"
	}
	return fix(x, 1) + " ms"
}

// duration formats seconds: "45.2 s", "12 min 3 s", "2 h 05 min".
func duration(s float64) string {
	switch {
	case s <= 0 || math.IsNaN(s) || math.IsInf(s, 0):
		return NA
	case s < 60:
		return fix(s, 1) + " s"
	case s < 3600:
		m := int(s) / 60
		return fmt.Sprintf("%d min %d s", m, int(s)-60*m)
	}
	h := int(s) / 3600
	return fmt.Sprintf("%d h %02d min", h, (int(s)-3600*h)/60)
}

// rate formats a throughput with one decimal, NA when zero (unknown).
func rate(x float64) string {
	if x <= 0 {
		return NA
	}
	return fix(x, 1)
}

// methodName is an interval method's short label.
func methodName(iv *metrics.Interval) string {
	switch iv.Method {
	case "bootstrap_percentile":
		return "bootstrap"
	case "clt_clustered":
		if iv.Clusters > 0 {
			return fmt.Sprintf("clt clustered (%d clusters)", iv.Clusters)
		}
		return "clt clustered"
	case "":
		return "interval"
	}
	return iv.Method
}

// levelLabel is "95% CI" for a level of 0.95.
func levelLabel(level float64) string {
	if level <= 0 || level >= 1 {
		return "CI"
	}
	return strconv.FormatFloat(100*level, 'f', -1, 64) + "% CI"
}

// rangeStr is "lo–hi".
func rangeStr(iv *metrics.Interval) string {
	if iv == nil {
		return NA
	}
	return fix(iv.Lo, 4) + "–" + fix(iv.Hi, 4)
}

// intervals describes both of a score's intervals in one bracket:
// "[95% CI clt 0.7911–0.8329; bootstrap 0.7905–0.8324]", or "" when it
// has none.
func intervals(s metrics.Score) string {
	var parts []string
	level := 0.0
	for _, iv := range []*metrics.Interval{s.CLT, s.Bootstrap} {
		if iv == nil {
			continue
		}
		p := methodName(iv) + " " + rangeStr(iv)
		if level != 0 && iv.Level != level {
			p = levelLabel(iv.Level) + " " + p
		}
		if level == 0 {
			level = iv.Level
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return "[" + levelLabel(level) + " " + strings.Join(parts, "; ") + "]"
}

// headline is "pass@1 0.8120 [95% CI clt 0.7911–0.8329; bootstrap
// 0.7905–0.8324]", or "pass@1 n/a (no intervals)".
func headline(s metrics.Score) string {
	metric := s.Metric
	if metric == "" {
		metric = "score"
	}
	out := metric + " " + num(s.Value)
	if iv := intervals(s); iv != "" {
		return out + " " + iv
	}
	if s.Value != nil {
		return out + " (no interval: fewer than two items)"
	}
	return out
}

// ciLevel is the level both intervals of the suite's scores share, for
// column headings: "95% CI".
func ciLevel(suite []*metrics.Bundle) string {
	for _, b := range suite {
		for _, s := range b.Metrics {
			for _, iv := range []*metrics.Interval{s.CLT, s.Bootstrap} {
				if iv != nil {
					return levelLabel(iv.Level)
				}
			}
		}
	}
	return levelLabel(0.95)
}

// headlineScore returns the bundle's headline (Metrics[0] when Headline is
// empty, for hand-written bundles).
func headlineScore(b *metrics.Bundle) metrics.Score {
	if b.Headline.Metric == "" && len(b.Metrics) > 0 {
		return b.Metrics[0]
	}
	return b.Headline
}

// passAtK returns the pass@k metrics other than the headline.
func passAtK(b *metrics.Bundle) []metrics.Score {
	var out []metrics.Score
	h := headlineScore(b).Metric
	for _, s := range b.Metrics {
		if strings.HasPrefix(s.Metric, "pass@") && s.Metric != h {
			out = append(out, s)
		}
	}
	return out
}

// scorerMetrics returns the scorer:* metrics.
func scorerMetrics(b *metrics.Bundle) []metrics.Score {
	var out []metrics.Score
	for _, s := range b.Metrics {
		if strings.HasPrefix(s.Metric, "scorer:") {
			out = append(out, s)
		}
	}
	return out
}

// otherMetrics returns metrics that are neither the headline, pass@k nor
// scorer:* (a future bundle may add kinds; the report still shows them).
func otherMetrics(b *metrics.Bundle) []metrics.Score {
	var out []metrics.Score
	h := headlineScore(b).Metric
	for _, s := range b.Metrics {
		if s.Metric != h && !strings.HasPrefix(s.Metric, "pass@") && !strings.HasPrefix(s.Metric, "scorer:") {
			out = append(out, s)
		}
	}
	return out
}

// title is how a benchmark is named in headings: its name, with the key
// when that says more (gsm8k#cot).
func title(b *metrics.Bundle) string {
	switch {
	case b.Name == "" && b.Benchmark == "":
		return "(unnamed benchmark)"
	case b.Name == "":
		return b.Benchmark
	case b.Benchmark == "" || b.Benchmark == b.Name:
		return b.Name
	}
	return b.Name + " (" + b.Benchmark + ")"
}

// key identifies a benchmark in tables and anchors.
func key(b *metrics.Bundle) string {
	if b.Benchmark != "" {
		return b.Benchmark
	}
	return b.Name
}

// design is "500 items × 4 repeats (2,000 samples)".
func design(b *metrics.Bundle) string {
	return fmt.Sprintf("%s items × %s repeats (%s samples)", count(b.Items), count(b.Repeats), count(b.Samples))
}

// mdeSentence states the minimum detectable effect.
func mdeSentence(v *metrics.Variance) string {
	power := v.Power
	if power <= 0 {
		power = 0.8
	}
	alpha := v.Alpha
	if alpha <= 0 {
		alpha = 0.05
	}
	return fmt.Sprintf("this run detects differences ≥ %s pp at %s power (two-sided α = %s, against an independent run of the same design)",
		fix(100*v.MDE, 1), strconv.FormatFloat(100*power, 'f', -1, 64)+"%", strconv.FormatFloat(alpha, 'f', -1, 64))
}

// withinSentence describes the within-item variance.
func withinStr(v *metrics.Variance) string {
	if !v.WithinEstimated {
		return "not estimable (one repeat)"
	}
	return fix(v.Within, 4)
}

// optimalSentence states the optimal repeats.
func optimalSentence(b *metrics.Bundle, v *metrics.Variance) string {
	s := fmt.Sprintf("%d repeat", v.OptimalRepeats)
	if v.OptimalRepeats != 1 {
		s += "s"
	}
	s += " per item minimise the standard error per unit of compute"
	if v.ItemCost > 0 {
		unit := " samples"
		if v.ItemCost == 1 {
			unit = " sample"
		}
		s += " (adding an item costs " + strconv.FormatFloat(v.ItemCost, 'g', 4, 64) + unit + " more than a repeat)"
	}
	if !v.WithinEstimated {
		s += "; with one repeat the within-item variance is unknown, so this is a lower bound"
	} else if b.Repeats > 0 && v.OptimalRepeats != b.Repeats {
		s += fmt.Sprintf("; this run used %d", b.Repeats)
	}
	return s
}

// sortedCounts returns a map's entries by count descending, then key.
func sortedCounts(m map[string]int) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	slices.SortFunc(out, func(a, b kv) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.k, b.k)
	})
	return out
}

type kv struct {
	k string
	n int
}

// countsStr is "stop 1,990 · length 10".
func countsStr(m map[string]int) string {
	if len(m) == 0 {
		return NA
	}
	var parts []string
	for _, e := range sortedCounts(m) {
		parts = append(parts, e.k+" "+count(e.n))
	}
	return strings.Join(parts, " · ")
}

// attemptsStr lists attempts numerically ("1: 990 · 2: 10").
func attemptsStr(m map[string]int) string {
	if len(m) == 0 {
		return NA
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, errA := strconv.Atoi(a)
		y, errB := strconv.Atoi(b)
		if errA == nil && errB == nil {
			return x - y
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+": "+count(m[k]))
	}
	return strings.Join(parts, " · ")
}

// maxExemplar is how much of an exemplar's error a report shows.
const maxExemplar = 400

// exemplarText flattens an exemplar's error to one line and shortens it.
func exemplarText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "(no error text)"
	}
	if r := []rune(s); len(r) > maxExemplar {
		return string(r[:maxExemplar]) + "…"
	}
	return s
}

// maxExemplars is how many exemplars a failure category shows.
const maxExemplars = 3

func exemplars(fc metrics.FailureCategory) []metrics.Exemplar {
	if len(fc.Exemplars) > maxExemplars {
		return fc.Exemplars[:maxExemplars]
	}
	return fc.Exemplars
}

// simulated reports whether any benchmark ran against the simulated
// endpoint.
func simulated(suite []*metrics.Bundle) bool {
	return slices.ContainsFunc(suite, func(b *metrics.Bundle) bool { return b.Provenance.Simulated })
}

// simulatedWarning is printed prominently for a simulated benchmark.
const simulatedWarning = "SIMULATED endpoint: these answers came from nel's simulator, not a model. The numbers test the pipeline; they say nothing about any model."

// orNA returns s, or NA when empty.
func orNA(s string) string {
	if s == "" {
		return NA
	}
	return s
}

// timeSpan is "started → ended".
func timeSpan(p metrics.Provenance) string {
	if p.StartedAt == "" && p.EndedAt == "" {
		return NA
	}
	return orNA(p.StartedAt) + " → " + orNA(p.EndedAt)
}

// provenanceRows lists the provenance as label/value pairs.
func provenanceRows(b *metrics.Bundle) [][2]string {
	p := b.Provenance
	sim := "no"
	if p.Simulated {
		sim = "YES — simulated endpoint, not a model"
	}
	return [][2]string{
		{"Model", orNA(p.Model)},
		{"Simulated", sim},
		{"Recipe hash", orNA(p.RecipeHash)},
		{"Plan hash", orNA(p.PlanHash)},
		{"Benchmark hash", orNA(p.BenchmarkHash)},
		{"Dataset digest", orNA(p.DatasetDigest)},
		{"nel version", orNA(p.NelVersion)},
		{"Scoring version", orNA(p.ScoringVersion)},
		{"Shards", strconv.Itoa(p.Shards)},
		{"Time span", timeSpan(p)},
	}
}

// runtimeRows lists the runtime statistics as label/value pairs.
func runtimeRows(b *metrics.Bundle) [][2]string {
	r := b.Runtime
	l := r.LatencyMS
	rows := [][2]string{
		{"Latency p50 / p90 / p99", ms(l.P50) + " / " + ms(l.P90) + " / " + ms(l.P99)},
		{"Latency mean / max", ms(l.Mean) + " / " + ms(l.Max)},
		{"Wall time", duration(r.WallSeconds)},
		{"Samples/s", rate(r.SamplesPerSecond)},
		{"Completion tokens/s (throughput)", rate(r.TokensPerSecond)},
		{"Decode tokens/s per sample (p50)", rate(r.DecodeTokensPerSecondP50)},
		{"Tokens prompt / completion / reasoning", count(r.PromptTokens) + " / " + count(r.CompletionTokens) + " / " + count(r.ReasoningTokens)},
		{"Finish reasons", countsStr(r.FinishReasons)},
		{"Interrupted samples", count(r.Interrupted) + " (attempts " + attemptsStr(r.Attempts) + ")"},
	}
	if r.CacheHits != nil {
		rows = append(rows, [2]string{"Cache hits", count(*r.CacheHits)})
	}
	return rows
}

// failuresSummary is "12 of 2,000 samples failed (0.6%)".
func failuresSummary(f metrics.Failures) string {
	if f.Samples == 0 {
		return "no samples"
	}
	return fmt.Sprintf("%s of %s samples failed (%s)", count(f.Failed), count(f.Samples), pct(f.Rate))
}

// failuresCell is the summary table's failure column: "12 (0.6%)".
func failuresCell(f metrics.Failures) string {
	if f.Samples == 0 {
		return "0"
	}
	return count(f.Failed) + " (" + pct(f.Rate) + ")"
}
