// Package htmlreport renders a run's benchmark bundles as one
// self-contained HTML page with charts: the HTML format of package
// analysis/report (nel report -f html), and the HTML model card (-f
// model-card-html, modelcard.go). It is a package of its own because
// html/template and gonum/plot (charts, embedded fonts) weigh megabytes that
// nel-run, which writes the other formats, must not carry.
package htmlreport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"sync"

	"gonum.org/v1/plot/font"

	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/report/internal/view"
	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/metrics"
)

// WriteFile writes suite's HTML report into dir as report.html
// (report.FileName(report.HTML)), atomically, and returns its path.
func WriteFile(dir string, suite []*metrics.Bundle, opts report.Options) (string, error) {
	path := filepath.Join(dir, report.FileName(report.HTML))
	// Render fully first: a failure leaves no file behind.
	var buf bytes.Buffer
	if err := Render(&buf, suite, opts); err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(path, buf.Bytes()); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return path, nil
}

// The HTML report is one file: inline CSS, charts as inline SVG, the font
// as a data: URL; no script and no external URL. Every string from a
// bundle goes through html/template.

type htmlPage struct {
	Title     string
	Source    string
	FontCSS   template.CSS
	Simulated bool
	Warning   string
	Level     string
	// Heads are the summary's interval columns' headers
	// (view.IntervalHeads), Note what they are.
	Heads   [2]string
	Note    string
	Rows    []htmlSummaryRow
	Chart   chart
	Benches []htmlBench
	Version int
	// AgentTitle heads an agentic benchmark's trajectory audit.
	AgentTitle string
}

type htmlSummaryRow struct {
	Anchor, Key, Metric, Value, CLT, Bootstrap, Items, Repeats, Infra, Failures string
	Simulated, NA, Invalid                                                      bool
}

type htmlScore struct {
	Name, Value, CLT, Bootstrap, N string
	NA                             bool
}

type htmlBench struct {
	Anchor, Title, Key string
	Simulated          bool
	Metric, Value      string
	NA                 bool
	Intervals, Design  string
	Binary             bool
	Notes              []string
	PassK              []htmlScore
	Variance           []string
	MDE                string
	CategoryHead       string
	// Heads name the methods of the benchmark's interval columns.
	Heads         [2]string
	Categories    []htmlScore
	CategoryChart chart
	Scorers       []htmlScore
	ScorerNotes   []string
	Runtime       [][2]string
	LatencyChart  chart
	FailSummary   string
	Samples       string
	Failed        int
	Failures      []htmlFailure
	FailureChart  chart
	Provenance    [][2]string
	// Invalid is InvalidSentence for an INVALID benchmark: its numbers
	// are not shown.
	Invalid      string
	InfraSummary string
	Infra        []htmlFailure
	// AgentSummary and Agent are the trajectory audit of an agentic
	// benchmark ("" and nil for the others).
	AgentSummary string
	Agent        []htmlTable
}

// htmlTable is a view.Table with each cell's alignment decided.
type htmlTable struct {
	Title string
	Head  []htmlCell
	Rows  [][]htmlCell
}

type htmlCell struct {
	Text string
	Num  bool // right-aligned
}

func htmlTables(ts []view.Table) []htmlTable {
	cells := func(t view.Table, texts []string) []htmlCell {
		out := make([]htmlCell, len(texts))
		for i, c := range texts {
			out[i] = htmlCell{Text: c, Num: i < len(t.Align) && t.Align[i] == 'r'}
		}
		return out
	}
	var out []htmlTable
	for _, t := range ts {
		ht := htmlTable{Title: t.Title, Head: cells(t, t.Head)}
		for _, r := range t.Rows {
			ht.Rows = append(ht.Rows, cells(t, r))
		}
		out = append(out, ht)
	}
	return out
}

type htmlFailure struct {
	Category, Count, Share string
	Exemplars              []htmlExemplar
}

type htmlExemplar struct {
	ItemID, Where, Error string
}

func htmlScores(scores []metrics.Score) []htmlScore {
	var out []htmlScore
	for _, s := range scores {
		out = append(out, htmlScore{Name: s.Metric, Value: view.Num(s.Value), CLT: view.IVCell(s.CLT), Bootstrap: view.IVCell(s.Bootstrap), N: view.Count(s.N), NA: s.Value == nil})
	}
	return out
}

// htmlFailures are failure classes with their exemplars.
func htmlFailures(cs []metrics.FailureCategory) []htmlFailure {
	var out []htmlFailure
	for _, fc := range cs {
		hf := htmlFailure{Category: fc.Category, Count: view.Count(fc.Count), Share: view.Pct(fc.Share)}
		for _, e := range view.Exemplars(fc) {
			hf.Exemplars = append(hf.Exemplars, htmlExemplar{
				ItemID: e.ItemID, Where: "index " + view.Count(e.ItemIdx) + ", repeat " + view.Count(e.Repeat),
				Error: view.ExemplarText(e.Error),
			})
		}
		out = append(out, hf)
	}
	return out
}

// Render writes the HTML report of suite: one self-contained file, the
// same content as report.Render's other formats with charts added.
func Render(w io.Writer, suite []*metrics.Bundle, opts report.Options) error {
	if slices.Contains(suite, nil) {
		return fmt.Errorf("report: nil bundle in suite")
	}
	page := htmlPage{
		Title:      view.DocTitle(opts.Title),
		Source:     opts.Source,
		FontCSS:    fontCSS(),
		Simulated:  view.Simulated(suite),
		Warning:    view.SimulatedWarning,
		Level:      view.CILevel(suite),
		Note:       view.IntervalNote,
		Chart:      suiteChart(suite),
		Version:    report.Version,
		AgentTitle: view.AgentTitle,
	}
	page.Heads[0], page.Heads[1] = view.IntervalHeads(page.Level, view.HeadlineScores(suite))
	for _, b := range suite {
		h := view.HeadlineScore(b)
		clt, boot := view.IntervalCells(b)
		page.Rows = append(page.Rows, htmlSummaryRow{
			Anchor: view.Anchor(b), Key: view.Key(b), Metric: h.Metric, Value: view.ValueCell(b),
			CLT: clt, Bootstrap: boot, Items: view.Count(b.Items),
			Repeats: view.Count(b.Repeats), Infra: view.InfraCell(b.Validity), Failures: view.FailuresCell(b.Failures),
			Simulated: b.Provenance.Simulated, NA: h.Value == nil || b.Validity.Invalid, Invalid: b.Validity.Invalid,
		})
		hb := htmlBench{
			Anchor: view.Anchor(b), Title: view.BenchTitle(b), Key: view.Key(b), Simulated: b.Provenance.Simulated,
			Metric: h.Metric, Value: view.Num(h.Value), NA: h.Value == nil, Intervals: view.Intervals(h),
			Design: view.Design(b), Binary: b.Binary, Notes: b.Notes,
			PassK:         htmlScores(view.PassAtK(b)),
			Scorers:       htmlScores(append(view.ScorerMetrics(b), view.OtherMetrics(b)...)),
			ScorerNotes:   view.ScorerNotes(b),
			CategoryHead:  h.Metric,
			Heads:         benchHeads(b),
			CategoryChart: categoryChart(b),
			Runtime:       view.RuntimeRows(b),
			LatencyChart:  latencyChart(b),
			FailSummary:   view.FailuresSummary(b.Failures),
			Samples:       view.Count(b.Samples),
			Failed:        b.Failures.Failed,
			FailureChart:  failureChart(b),
			Provenance:    view.ProvenanceRows(b),
			Invalid:       view.InvalidSentence(b),
			InfraSummary:  view.InfraSummary(b.Validity),
			Infra:         htmlFailures(b.Validity.Classes),
			Failures:      htmlFailures(b.Failures.Categories),
		}
		if a := b.Agent; a != nil {
			hb.AgentSummary, hb.Agent = view.AgentSummary(a), htmlTables(view.AgentTables(a))
		}
		if hb.Invalid != "" {
			// No number of an INVALID benchmark is shown, not even in
			// its headline.
			hb.Value, hb.NA, hb.Intervals = view.Invalid, true, h.Metric+" not reported"
			hb.PassK, hb.Scorers, hb.Categories, hb.CategoryChart = nil, nil, nil, chart{Skip: "Not shown: the benchmark is INVALID."}
			hb.ScorerNotes = nil
		}
		if hb.Intervals == "" && h.Value != nil {
			hb.Intervals = "no interval: fewer than two items"
		}
		if len(hb.PassK) > 0 {
			hb.PassK = append(htmlScores([]metrics.Score{h}), hb.PassK...)
		}
		if v := b.Variance; v != nil && hb.Invalid == "" {
			hb.Variance = []string{
				"Between-item variance: " + view.Fix(v.Between, 4),
				"Within-item variance: " + view.WithinStr(v),
				"Standard error at " + view.Count(b.Items) + " items × " + view.Count(b.Repeats) + " repeats: " + view.Fix(v.SE, 4),
				"Optimal repeats: " + view.OptimalSentence(b, v),
			}
			hb.MDE = view.MDESentence(v)
		}
		for _, c := range b.Categories {
			if hb.Invalid != "" {
				break
			}
			s := htmlScores([]metrics.Score{c.Score})[0]
			s.Name = c.Name
			hb.Categories = append(hb.Categories, s)
		}
		page.Benches = append(page.Benches, hb)
	}
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, page); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

var (
	fontOnce sync.Once
	fontRule template.CSS
)

// fontCSS embeds Liberation Sans, the charts' font, as a web font so the
// page and its charts render the same everywhere.
func fontCSS() template.CSS {
	fontOnce.Do(func() {
		// font.DefaultCache holds gonum/plot's Liberation fonts (plot's init).
		face := font.DefaultCache.Lookup(sans, 10)
		if face.Face == nil {
			return
		}
		var raw bytes.Buffer
		if _, err := face.Face.WriteSourceTo(nil, &raw); err != nil {
			return
		}
		fontRule = template.CSS(`@font-face{font-family:"Liberation Sans";font-style:normal;font-weight:400;src:url(data:font/ttf;base64,` +
			base64.StdEncoding.EncodeToString(raw.Bytes()) + `) format("truetype");}`)
	})
	return fontRule
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="nel report (report format {{.Version}})">
<title>{{.Title}}</title>
<style>
{{.FontCSS}}
:root{--fg:#1d2430;--muted:#5b6472;--line:#dfe3e8;--bg:#f5f7fa;--card:#fff;--accent:#0072b2;--boot:#d55e00;--warn-bg:#fff4e5;--warn:#8a4b00;--bad:#a3195b}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 "Liberation Sans",Arial,Helvetica,sans-serif}
main{max-width:1080px;margin:0 auto;padding:28px 24px 48px}
header h1{font-size:26px;margin:0 0 4px;letter-spacing:-.01em}
header .sub{color:var(--muted);margin:0 0 20px}
code,.mono{font-family:"Liberation Mono",Menlo,Consolas,monospace;font-size:12.5px}
h2{font-size:20px;margin:0 0 10px}
h3{font-size:15px;margin:22px 0 8px;color:#2b3442;border-bottom:1px solid var(--line);padding-bottom:4px}
section.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:20px 24px;margin:0 0 22px;box-shadow:0 1px 2px rgba(16,24,40,.04)}
.banner{border-radius:8px;padding:10px 14px;margin:0 0 16px;font-weight:700}
.banner.sim{background:var(--warn-bg);color:var(--warn);border:1px solid #f0c18a}
.banner.invalid{background:#fde8ef;color:var(--bad);border:1px solid #e7a3bd}
.tag.invalid{background:#fde8ef;color:var(--bad)}
table{border-collapse:collapse;width:100%;margin:4px 0 8px;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);font-weight:700;background:#fafbfc}
td.num,th.num{text-align:right;white-space:nowrap}
td.na{color:var(--muted);font-style:italic}
tr:last-child td{border-bottom:none}
.kv td:first-child{color:var(--muted);width:38%}
.kv td+td{overflow-wrap:anywhere}
.headline{display:flex;flex-wrap:wrap;align-items:baseline;gap:6px 14px;margin:4px 0 12px}
.headline .metric{font-weight:700;color:var(--muted)}
.headline .value{font-size:32px;font-weight:700;letter-spacing:-.02em}
.headline .value.na{color:var(--muted)}
.headline .ci{color:var(--fg)}
.headline .design{color:var(--muted);width:100%}
.tag{display:inline-block;border-radius:4px;padding:0 6px;font-size:11px;font-weight:700;vertical-align:middle}
.tag.sim{background:#fde2c4;color:var(--warn)}
.tag.key{background:#eef1f5;color:var(--muted);font-weight:400}
.notes{background:#f3f6fb;border-left:4px solid var(--accent);padding:8px 14px;margin:8px 0 14px}
.notes ul{margin:4px 0;padding-left:18px}
.mde{font-weight:700}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:0 28px}
@media (max-width:860px){.grid{grid-template-columns:1fr}}
figure{margin:8px 0 4px}
svg.chart{width:100%;height:auto;display:block}
figcaption,.skip{color:var(--muted);font-size:12.5px}
.sw{display:inline-block;width:22px;height:0;border-top:2px solid;vertical-align:middle;margin:0 4px 0 10px}
.sw.clt{border-color:var(--accent)}
.sw.boot{border-color:var(--boot);border-top-style:dashed}
.dot{display:inline-block;width:8px;height:8px;border-radius:50%;background:#1a1a1a;vertical-align:middle;margin-right:4px}
ul.ex{margin:4px 0 12px;padding-left:18px}
ul.ex li{margin:3px 0}
ul.ex code{background:#f6f2f4;border:1px solid #eadde4;border-radius:4px;padding:1px 4px;white-space:pre-wrap;word-break:break-word}
a{color:var(--accent);text-decoration:none}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:24px}
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
<p class="sub">{{if .Source}}Run <code>{{.Source}}</code> · {{end}}{{len .Rows}} benchmark{{if ne (len .Rows) 1}}s{{end}}</p>
</header>
{{if .Simulated}}<div class="banner sim" role="alert">⚠ {{.Warning}}</div>{{end}}
<section class="card" id="summary">
<h2>Summary</h2>
{{if .Rows}}<table>
<thead><tr><th>Benchmark</th><th>Metric</th><th class="num">Value</th><th class="num">{{index .Heads 0}}</th><th class="num">{{index .Heads 1}}</th><th class="num">Items</th><th class="num">Repeats</th><th class="num">Infra failures (not scored)</th><th class="num">Model errors</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td><a href="#{{.Anchor}}">{{.Key}}</a>{{if .Simulated}} <span class="tag sim">SIMULATED</span>{{end}}{{if .Invalid}} <span class="tag invalid">INVALID</span>{{end}}</td><td><code>{{.Metric}}</code></td><td class="num{{if .NA}} na{{end}}"><b>{{.Value}}</b></td><td class="num">{{.CLT}}</td><td class="num">{{.Bootstrap}}</td><td class="num">{{.Items}}</td><td class="num">{{.Repeats}}</td><td class="num">{{.Infra}}</td><td class="num">{{.Failures}}</td></tr>
{{end}}</tbody>
</table>
<p class="skip">{{.Note}}</p>
<figure>
{{with .Chart.SVG}}{{.}}
<figcaption><span class="dot"></span>score <span class="sw clt"></span>nel's interval (above) <span class="sw boot"></span>NeMo's bootstrap, for parity (below) · {{$.Level}}</figcaption>{{else}}<p class="skip">{{.Chart.Skip}}</p>{{end}}
</figure>
{{else}}<p>No benchmarks.</p>{{end}}
</section>
{{range .Benches}}
<section class="card bench" id="{{.Anchor}}">{{$sim := .Simulated}}
<h2>{{.Title}} {{if .Simulated}}<span class="tag sim">SIMULATED</span>{{end}}</h2>
{{if .Simulated}}<div class="banner sim" role="alert">⚠ {{$.Warning}}</div>{{end}}
{{if .Invalid}}<div class="banner invalid" role="alert">⛔ {{.Invalid}}</div>{{end}}
<div class="headline"><span class="metric">{{.Metric}}</span><span class="value{{if .NA}} na{{end}}">{{.Value}}</span><span class="ci">{{.Intervals}}</span><span class="design">{{.Design}}{{if .Binary}} · binary rewards{{end}}</span></div>
{{if .Notes}}<div class="notes"><b>Notes</b><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
<div class="grid">
<div>
<h3>Variance decomposition</h3>
{{if .Invalid}}<p class="skip">Not shown: the benchmark is INVALID.</p>{{else if .Variance}}<table class="kv"><tbody>{{range .Variance}}<tr><td colspan="2">{{.}}</td></tr>{{end}}</tbody></table>
<p class="mde">Minimum detectable effect: {{.MDE}}.</p>{{else}}<p class="skip">Not available (fewer than two items).</p>{{end}}
</div>
<div>
{{if .PassK}}<h3>pass@k</h3>
<table><thead><tr><th>Metric</th><th class="num">Value</th><th class="num">{{index .Heads 0}}</th><th class="num">{{index .Heads 1}}</th><th class="num">n</th></tr></thead><tbody>
{{range .PassK}}<tr><td><code>{{.Name}}</code></td><td class="num{{if .NA}} na{{end}}">{{.Value}}</td><td class="num">{{.CLT}}</td><td class="num">{{.Bootstrap}}</td><td class="num">{{.N}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .Scorers}}<h3>Scorer metrics</h3>
<table><thead><tr><th>Metric</th><th class="num">Value</th><th class="num">{{index .Heads 0}}</th><th class="num">{{index .Heads 1}}</th><th class="num">n</th></tr></thead><tbody>
{{range .Scorers}}<tr><td><code>{{.Name}}</code></td><td class="num{{if .NA}} na{{end}}">{{.Value}}</td><td class="num">{{.CLT}}</td><td class="num">{{.Bootstrap}}</td><td class="num">{{.N}}</td></tr>
{{end}}</tbody></table>{{if .ScorerNotes}}<div class="notes"><ul>{{range .ScorerNotes}}<li>{{.}}</li>{{end}}</ul></div>{{end}}{{end}}
</div>
</div>
<h3>Categories</h3>
{{if .Categories}}<div class="grid"><div>
<table><thead><tr><th>Category</th><th class="num"><code>{{.CategoryHead}}</code></th><th class="num">{{index .Heads 0}}</th><th class="num">{{index .Heads 1}}</th><th class="num">n</th></tr></thead><tbody>
{{range .Categories}}<tr><td>{{.Name}}</td><td class="num{{if .NA}} na{{end}}">{{.Value}}</td><td class="num">{{.CLT}}</td><td class="num">{{.Bootstrap}}</td><td class="num">{{.N}}</td></tr>
{{end}}</tbody></table></div>
<figure>{{with .CategoryChart.SVG}}{{.}}<figcaption><span class="sw clt"></span>nel's interval <span class="sw boot"></span>NeMo's bootstrap, for parity</figcaption>{{else}}<p class="skip">{{.CategoryChart.Skip}}</p>{{end}}</figure>
</div>{{else}}<p class="skip">{{.CategoryChart.Skip}}</p>{{end}}
<div class="grid">
<div>
<h3>Runtime</h3>
<table class="kv"><tbody>{{range .Runtime}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>{{end}}</tbody></table>
</div>
<div>
<h3>Latency distribution</h3>
<figure>{{with .LatencyChart.SVG}}{{.}}{{else}}<p class="skip">{{.LatencyChart.Skip}}</p>{{end}}</figure>
</div>
</div>
<h3>Infrastructure failures</h3>
<p>{{.InfraSummary}}.</p>
{{if .Infra}}<table><thead><tr><th>Category</th><th class="num">Count</th><th class="num">Share of samples</th></tr></thead><tbody>
{{range .Infra}}<tr><td><code>{{.Category}}</code></td><td class="num">{{.Count}}</td><td class="num">{{.Share}}</td></tr>
{{end}}</tbody></table>
{{range .Infra}}{{if .Exemplars}}<p>Examples of <code>{{.Category}}</code>:</p>
<ul class="ex">{{range .Exemplars}}<li>item <code>{{.ItemID}}</code> ({{.Where}}): <code>{{.Error}}</code></li>{{end}}</ul>{{end}}{{end}}{{end}}
<h3>Model errors</h3>
{{if .Failed}}<p>{{.FailSummary}}.</p><div class="grid"><div>
<table><thead><tr><th>Category</th><th class="num">Count</th><th class="num">Share of scored samples</th></tr></thead><tbody>
{{range .Failures}}<tr><td><code>{{.Category}}</code></td><td class="num">{{.Count}}</td><td class="num">{{.Share}}</td></tr>
{{end}}</tbody></table></div>
<figure>{{with .FailureChart.SVG}}{{.}}{{else}}<p class="skip">{{.FailureChart.Skip}}</p>{{end}}</figure>
</div>
{{range .Failures}}{{if .Exemplars}}<p>Examples of <code>{{.Category}}</code>:</p>
<ul class="ex">{{range .Exemplars}}<li>item <code>{{.ItemID}}</code> ({{.Where}}): <code>{{.Error}}</code></li>{{end}}</ul>{{end}}{{end}}
{{else}}<p>{{.FailSummary}}.</p>{{end}}
{{if .AgentSummary}}<h3>{{$.AgentTitle}}</h3>
<p>{{.AgentSummary}}.</p>
{{range .Agent}}<h4>{{.Title}}</h4>
<table><thead><tr>{{range .Head}}<th{{if .Num}} class="num"{{end}}>{{.Text}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr>{{range .}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{end}}{{end}}
<h3>Provenance</h3>
<table class="kv"><tbody>{{range .Provenance}}<tr><td>{{index . 0}}</td><td>{{if eq (index . 0) "Simulated"}}{{if $sim}}<b>{{index . 1}}</b>{{else}}{{index . 1}}{{end}}{{else}}<span class="mono">{{index . 1}}</span>{{end}}</td></tr>{{end}}</tbody></table>
</section>
{{end}}
<footer>Generated by nel report · intervals: nel's analytic interval (Wilson, t, clustered: docs/statistics.md) and NeMo Evaluator's percentile bootstrap, kept for parity</footer>
</main>
</body>
</html>
`))

// benchHeads are b's interval column headers, over all its scores and
// categories (its pass@k, scorer and category tables share them).
func benchHeads(b *metrics.Bundle) [2]string {
	var h [2]string
	h[0], h[1] = view.IntervalHeads(view.CILevel([]*metrics.Bundle{b}), append(slices.Clone(b.Metrics), view.CategoryScores(b)...))
	return h
}
