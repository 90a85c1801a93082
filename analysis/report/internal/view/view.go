// Package view holds what every report format says, as text: number
// formats, the headline and its intervals, the variance sentences, the
// runtime and provenance rows, failures and exemplars. Package report
// (markdown, JSON, CSV, LaTeX) and package htmlreport both build on it, so
// the formats say the same things in the same words.
package view

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/score"
)

// DocTitle is a report's title: title, or "nel evaluation report" when
// empty.
func DocTitle(title string) string {
	if title != "" {
		return title
	}
	return "nel evaluation report"
}

// NA is what an undefined value prints as.
const NA = "n/a"

// Num formats a score value: four decimals, NA when undefined.
func Num(v *float64) string {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return NA
	}
	return Fix(*v, 4)
}

// Fix formats x with prec decimals ("-0.0000" prints as "0.0000"); NA for
// NaN and ±Inf, which a bundle never holds but a hand-made one might.
func Fix(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return NA
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	if strings.TrimLeft(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

// Pct formats a share in [0, 1] as a percentage with one decimal.
func Pct(x float64) string { return Fix(100*x, 1) + "%" }

// Count formats an integer with thin grouping (12,345).
func Count[T int | int64](n T) string {
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

// MS formats milliseconds: "850 ms", "12.3 s".
func MS(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return NA
	case x >= 10000:
		return Fix(x/1000, 1) + " s"
	case x >= 1000:
		return Fix(x/1000, 2) + " s"
	case x >= 10:
		return Fix(x, 0) + " ms"
	}
	return Fix(x, 1) + " ms"
}

// duration formats seconds: "45.2 s", "12 min 3 s", "2 h 05 min".
func duration(s float64) string {
	switch {
	case s <= 0 || math.IsNaN(s) || math.IsInf(s, 0):
		return NA
	case s < 60:
		return Fix(s, 1) + " s"
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
	return Fix(x, 1)
}

// methodName is an interval method's short label.
func methodName(iv *metrics.Interval) string {
	switch iv.Method {
	case metrics.MethodBootstrapPercentile:
		return "bootstrap"
	case metrics.MethodCLTClustered:
		if iv.Clusters > 0 {
			return fmt.Sprintf("clt clustered (%d clusters)", iv.Clusters)
		}
		return "clt clustered"
	case "":
		return "interval"
	}
	return string(iv.Method)
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
	return Fix(iv.Lo, 4) + "–" + Fix(iv.Hi, 4)
}

// Intervals describes a score's intervals: nel's in a bracket headed
// with its level, "[95% CI clt 0.7911–0.8329]", and NeMo Evaluator's
// bootstrap after it as what it is, a parity figure and not a confidence
// claim (docs/statistics.md: it covers far less than its level near 0
// and 1), "(NeMo's bootstrap, parity only: 0.7905–0.8324)"; "" when it
// has none.
func Intervals(s metrics.Score) string {
	var parts []string
	if iv := s.CLT; iv != nil {
		parts = append(parts, "["+levelLabel(iv.Level)+" "+methodName(iv)+" "+rangeStr(iv)+"]")
	}
	if iv := s.Bootstrap; iv != nil {
		parts = append(parts, "("+ParityLabel+": "+rangeStr(iv)+")")
	}
	return strings.Join(parts, " ")
}

// ParityLabel names the bootstrap column wherever a report shows it: the
// figure NeMo Evaluator prints, kept so that its users can compare, not
// an interval nel claims covers at its level.
const ParityLabel = "NeMo's bootstrap, parity only"

// Headline is "pass@1 0.8120 [95% CI clt 0.7911–0.8329] (NeMo's
// bootstrap, parity only: 0.7905–0.8324)", or "pass@1 n/a (no
// intervals)".
func Headline(s metrics.Score) string {
	metric := s.Metric
	if metric == "" {
		metric = "score"
	}
	out := metric + " " + Num(s.Value)
	if iv := Intervals(s); iv != "" {
		return out + " " + iv
	}
	switch {
	case s.Value != nil && strings.HasPrefix(s.Metric, HarnessPrefix):
		return out + " (aggregate-only: the harness's own score, no items to compute an interval from)"
	case s.Value != nil:
		return out + " (no interval: fewer than two items)"
	}
	return out
}

// HarnessPrefix starts the names of the scores a peer harness reported
// itself (metrics.Bundle.Harness): an aggregate-only benchmark's headline.
const HarnessPrefix = "harness:"

// CILevel is the level both intervals of the suite's scores share, for
// column headings: "95% CI".
func CILevel(suite []*metrics.Bundle) string {
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

// HeadlineScore returns the bundle's headline (Metrics[0] when Headline is
// empty, for hand-written bundles).
func HeadlineScore(b *metrics.Bundle) metrics.Score {
	if b.Headline.Metric == "" && len(b.Metrics) > 0 {
		return b.Metrics[0]
	}
	return b.Headline
}

// PassAtK returns the pass@k metrics other than the headline.
func PassAtK(b *metrics.Bundle) []metrics.Score {
	var out []metrics.Score
	h := HeadlineScore(b).Metric
	for _, s := range b.Metrics {
		if strings.HasPrefix(s.Metric, "pass@") && s.Metric != h {
			out = append(out, s)
		}
	}
	return out
}

// ScorerMetrics returns the scorer:* metrics.
func ScorerMetrics(b *metrics.Bundle) []metrics.Score {
	var out []metrics.Score
	for _, s := range b.Metrics {
		if strings.HasPrefix(s.Metric, "scorer:") {
			out = append(out, s)
		}
	}
	return out
}

// OtherMetrics returns metrics that are neither the headline, pass@k nor
// scorer:* (a future bundle may add kinds; the report still shows them).
func OtherMetrics(b *metrics.Bundle) []metrics.Score {
	var out []metrics.Score
	h := HeadlineScore(b).Metric
	for _, s := range b.Metrics {
		if s.Metric != h && !strings.HasPrefix(s.Metric, "pass@") && !strings.HasPrefix(s.Metric, "scorer:") {
			out = append(out, s)
		}
	}
	return out
}

// BenchTitle is how a benchmark is named in headings: its name, with the key
// when that says more (gsm8k#cot).
func BenchTitle(b *metrics.Bundle) string {
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

// Key identifies a benchmark in tables and anchors.
func Key(b *metrics.Bundle) string {
	if b.Benchmark != "" {
		return b.Benchmark
	}
	return b.Name
}

// Design is "500 items × 4 repeats (2,000 samples)", with how many were
// scored when infrastructure failures left some out: "(2,000 samples,
// 1,992 scored)".
func Design(b *metrics.Bundle) string {
	s := fmt.Sprintf("%s items × %s repeats (%s samples", Count(b.Items), Count(b.Repeats), Count(b.Samples))
	if n := b.Validity.InfraErrors; n > 0 {
		s += ", " + Count(b.Samples-n) + " scored"
	}
	return s + ")"
}

// Invalid is what an INVALID benchmark shows where its score would be.
const Invalid = "INVALID"

// ValueCell is a summary table's value of b's headline: the number, or
// INVALID for a benchmark that did not measure its model.
func ValueCell(b *metrics.Bundle) string {
	if b.Validity.Invalid {
		return Invalid
	}
	return Num(HeadlineScore(b).Value)
}

// IntervalCells are a summary table's two interval cells of b's headline:
// none for an INVALID benchmark.
func IntervalCells(b *metrics.Bundle) (clt, bootstrap string) {
	if b.Validity.Invalid {
		return NA, NA
	}
	h := HeadlineScore(b)
	return IVCell(h.CLT), IVCell(h.Bootstrap)
}

// InvalidSentence says why b is INVALID and that its numbers are not
// reported; "" when it is valid.
func InvalidSentence(b *metrics.Bundle) string {
	if !b.Validity.Invalid {
		return ""
	}
	return "INVALID: " + b.Validity.Reason + ". No score is reported: the numbers would not measure the model. Fix the cause and run it again."
}

// InfraSummary is "8 of 2,000 samples (0.4%) failed for infrastructure
// reasons and are not scored (max_error_rate 5%)", or that there were
// none.
func InfraSummary(v metrics.Validity) string {
	if v.InfraErrors == 0 {
		return fmt.Sprintf("No infrastructure failures (%s samples)", Count(v.Samples))
	}
	s := fmt.Sprintf("%s of %s samples (%s) failed for infrastructure reasons and are not scored (max_error_rate %s",
		Count(v.InfraErrors), Count(v.Samples), metrics.Percent(v.Rate), metrics.Percent(v.MaxErrorRate))
	if v.MaxErrorRateFrom == "default" {
		s += ", the default"
	}
	s += ")"
	if v.Invalid {
		s += ": INVALID"
	}
	return s
}

// InfraCell is the summary table's infrastructure-failure column: "8
// (0.4%)", "2 (100.0%) INVALID", or "0".
func InfraCell(v metrics.Validity) string {
	if v.InfraErrors == 0 {
		return "0"
	}
	s := Count(v.InfraErrors) + " (" + Pct(v.Rate) + ")"
	if v.Invalid {
		s += " " + Invalid
	}
	return s
}

// MDESentence states the minimum detectable effect.
func MDESentence(v *metrics.Variance) string {
	power := v.Power
	if power <= 0 {
		power = 0.8
	}
	alpha := v.Alpha
	if alpha <= 0 {
		alpha = 0.05
	}
	return fmt.Sprintf("this run detects differences ≥ %s pp at %s power (two-sided α = %s, against an independent run of the same design)",
		Fix(100*v.MDE, 1), strconv.FormatFloat(100*power, 'f', -1, 64)+"%", strconv.FormatFloat(alpha, 'f', -1, 64))
}

// WithinStr describes the within-item variance.
func WithinStr(v *metrics.Variance) string {
	if !v.WithinEstimated {
		return "not estimable (one repeat)"
	}
	return Fix(v.Within, 4)
}

// OptimalSentence states the optimal repeats.
func OptimalSentence(b *metrics.Bundle, v *metrics.Variance) string {
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
		parts = append(parts, e.k+" "+Count(e.n))
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
		parts = append(parts, k+": "+Count(m[k]))
	}
	return strings.Join(parts, " · ")
}

// maxExemplar is how much of an exemplar's error a report shows.
const maxExemplar = 400

// ExemplarText flattens an exemplar's error to one line and shortens it.
func ExemplarText(s string) string {
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

// Exemplars are the first few of a failure category's exemplars, the ones a
// report shows.
func Exemplars(fc metrics.FailureCategory) []metrics.Exemplar {
	if len(fc.Exemplars) > maxExemplars {
		return fc.Exemplars[:maxExemplars]
	}
	return fc.Exemplars
}

// Simulated reports whether any benchmark ran against the simulated
// endpoint.
func Simulated(suite []*metrics.Bundle) bool {
	return slices.ContainsFunc(suite, func(b *metrics.Bundle) bool { return b.Provenance.Simulated })
}

// SimulatedWarning is printed prominently for a simulated benchmark.
const SimulatedWarning = "SIMULATED endpoint: these answers came from nel's simulator, not a model. The numbers test the pipeline; they say nothing about any model."

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

// ProvenanceRows lists the provenance as label/value pairs.
func ProvenanceRows(b *metrics.Bundle) [][2]string {
	p := b.Provenance
	sim := "no"
	if p.Simulated {
		sim = "YES — simulated endpoint, not a model"
	}
	rows := [][2]string{
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
	// What the shards recorded of themselves (bundles of older runs have
	// none): the nel-run build, the hosts, and each service's server.
	if bd := p.Build; bd != nil {
		v := orNA(bd.NelVersion)
		var extra []string
		if bd.Revision != "" {
			extra = append(extra, "rev "+provenance.Short(bd.Revision))
		}
		if bd.Modified {
			extra = append(extra, "modified")
		}
		if bd.GoVersion != "" {
			extra = append(extra, bd.GoVersion)
		}
		if len(extra) > 0 {
			v += " (" + strings.Join(extra, ", ") + ")"
		}
		rows = append(rows, [2]string{"nel build", v})
	}
	if len(p.Hosts) > 0 {
		v := strconv.Itoa(len(p.Hosts))
		if g := provenance.GPUSummary(p.Hosts); g != "" {
			v += " · GPUs " + g
		} else {
			v += " · no GPU seen"
		}
		rows = append(rows, [2]string{"Hosts", v})
	}
	for _, s := range p.Serving {
		label := "Server " + s.Service
		if s.Role == "judge" {
			label += " (judge)"
		}
		rows = append(rows, [2]string{label, ServingText(s)})
	}
	return rows
}

// ServingText is one line about a service's server: engine, model, the
// weights it serves, its version, fingerprint, image and parallelism.
func ServingText(s provenance.Serving) string {
	parts := []string{orNA(s.Engine), orNA(s.Model)}
	for _, m := range s.Models {
		if m.ID == s.Model && m.Root != "" && m.Root != m.ID {
			parts = append(parts, "root "+m.Root)
		}
	}
	if s.ServerVersion != "" {
		parts = append(parts, "version "+s.ServerVersion)
	}
	parts = append(parts, "fingerprint "+orNA(provenance.Short(s.Fingerprint)))
	if s.Image != "" {
		parts = append(parts, "image "+s.Image)
	}
	if s.TP > 0 || s.PP > 0 || s.DP > 0 || s.NumNodes > 0 {
		parts = append(parts, fmt.Sprintf("TP %d · PP %d · DP %d · nodes %d", s.TP, s.PP, s.DP, s.NumNodes))
	}
	if s.ProbeError != "" {
		parts = append(parts, "probe failed: "+s.ProbeError)
	}
	return strings.Join(parts, " · ")
}

// RuntimeRows lists the runtime statistics as label/value pairs.
func RuntimeRows(b *metrics.Bundle) [][2]string {
	r := b.Runtime
	l := r.LatencyMS
	rows := [][2]string{
		{"Latency p50 / p90 / p99", MS(l.P50) + " / " + MS(l.P90) + " / " + MS(l.P99)},
		{"Latency mean / max", MS(l.Mean) + " / " + MS(l.Max)},
		{"Wall time", duration(r.WallSeconds)},
		{"Samples/s", rate(r.SamplesPerSecond)},
		{"Completion tokens/s (throughput)", rate(r.TokensPerSecond)},
		{"Decode tokens/s per sample (p50)", rate(r.DecodeTokensPerSecondP50)},
		{"Tokens prompt / completion / reasoning", Count(r.PromptTokens) + " / " + Count(r.CompletionTokens) + " / " + Count(r.ReasoningTokens)},
		{"Finish reasons", countsStr(r.FinishReasons)},
		{"Interrupted samples", Count(r.Interrupted) + " (attempts " + attemptsStr(r.Attempts) + ")"},
	}
	if r.CacheHits != nil {
		rows = append(rows, [2]string{"Cache hits", Count(*r.CacheHits)})
	}
	return rows
}

// FailuresSummary is "4 of 1,992 scored samples (0.2%) are model errors,
// scored as wrong", or that there were none.
func FailuresSummary(f metrics.Failures) string {
	switch {
	case f.Samples == 0:
		return "No scored samples"
	case f.Failed == 0:
		return fmt.Sprintf("No model errors (%s scored samples)", Count(f.Samples))
	}
	return fmt.Sprintf("%s of %s scored samples (%s) are model errors, scored as wrong", Count(f.Failed), Count(f.Samples), Pct(f.Rate))
}

// FailuresCell is the summary table's model-error column: "4 (0.2%)".
func FailuresCell(f metrics.Failures) string {
	if f.Samples == 0 {
		return "0"
	}
	return Count(f.Failed) + " (" + Pct(f.Rate) + ")"
}

// Anchor is the id of a benchmark's section (GitHub's slug of its
// heading is unpredictable with punctuation, so sections carry an explicit
// anchor).
func Anchor(b *metrics.Bundle) string {
	var s strings.Builder
	s.WriteString("bench-")
	for _, r := range strings.ToLower(Key(b)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			s.WriteRune(r)
		} else {
			s.WriteByte('-')
		}
	}
	return s.String()
}

// IVCell is an interval for a table cell, with its method when it is not
// the column's plain one.
func IVCell(iv *metrics.Interval) string {
	if iv == nil {
		return NA
	}
	if iv.Method.Clustered() {
		return rangeStr(iv) + " (clustered)"
	}
	return rangeStr(iv)
}

// ScorerNotes go under a benchmark's scorer metrics: which scorer the
// headline comes from, and what makes an extra scorer differ from it (a
// NeMo Evaluator scorer kept with its quirk, score.Caveat). Without them
// a scorer:numeric_match 9 points under pass@1 reads as a contradiction.
// None when the benchmark has no scorer metrics.
func ScorerNotes(b *metrics.Bundle) []string {
	sc := ScorerMetrics(b)
	if len(sc) == 0 {
		return nil
	}
	own := "the benchmark's own scorer"
	if name := builtinScorer(b); name != "" {
		own = fmt.Sprintf("%s's own scorer, %s", b.Name, name)
	}
	notes := []string{fmt.Sprintf("The headline %s is scored by %s; each scorer: metric scores the same answers again with the scorer it names and does not change the headline.",
		HeadlineScore(b).Metric, own)}
	for _, s := range sc {
		if c := score.Caveat(strings.TrimPrefix(s.Metric, "scorer:")); c != "" {
			notes = append(notes, s.Metric+" is "+c+".")
		}
	}
	return notes
}

// builtinScorer names the scorer of a built-in benchmark's rewards; ""
// for a benchmark the recipe declares or another harness runs, whose
// scorer the bundle does not name.
func builtinScorer(b *metrics.Bundle) string {
	for _, k := range []string{"byob", "harness", "harbor"} {
		if _, ok := b.Methodology[k]; ok {
			return ""
		}
	}
	if bm, ok := bench.Lookup(b.Name); ok {
		return bm.Scorer
	}
	return ""
}

// IntervalHeads are the headers of a table's two interval columns for the
// scores it shows: the level and the methods the column holds, e.g.
// "95% CI (wilson)", and for the bootstrap column no level (it is NeMo's
// parity figure, not a confidence claim: ParityLabel) but its methods,
// "NeMo's bootstrap, parity only (bootstrap_percentile)", several joined
// by ", " ("95% CI (wilson, t)"). A bare "clt" would hide that the
// analytic column holds Wilson or t intervals; "clt" and "bootstrap" are
// kept for a column that holds none.
func IntervalHeads(level string, scores []metrics.Score) (analytic, bootstrap string) {
	var a, b []string
	add := func(to *[]string, iv *metrics.Interval) {
		if iv != nil && iv.Method != "" && !slices.Contains(*to, string(iv.Method)) {
			*to = append(*to, string(iv.Method))
		}
	}
	for _, s := range scores {
		add(&a, s.CLT)
		add(&b, s.Bootstrap)
	}
	head := func(label string, ms []string, none string) string {
		if len(ms) == 0 {
			ms = []string{none}
		}
		return label + " (" + strings.Join(ms, ", ") + ")"
	}
	return head(level, a, "clt"), head(ParityLabel, b, "bootstrap")
}

// HeadlineScores are the headlines of the suite's valid benchmarks (an
// INVALID one shows no interval): the summary table's scores.
func HeadlineScores(suite []*metrics.Bundle) []metrics.Score {
	var out []metrics.Score
	for _, b := range suite {
		if !b.Validity.Invalid {
			out = append(out, HeadlineScore(b))
		}
	}
	return out
}

// CategoryScores are b's categories' scores.
func CategoryScores(b *metrics.Bundle) []metrics.Score {
	out := make([]metrics.Score, len(b.Categories))
	for i, c := range b.Categories {
		out[i] = c.Score
	}
	return out
}

// IntervalNote says which interval column is the headline's and what the
// bootstrap column is, under a table that shows both.
const IntervalNote = "The first interval column is the one nel reports as the score's interval (docs/statistics.md says which method is chosen where). " +
	"The bootstrap column is a percentile bootstrap: NeMo Evaluator's over items (bootstrap_percentile), kept for parity, or over whole categories; it is not a confidence interval nel claims: near 0 or 1 it covers far less than its level."
