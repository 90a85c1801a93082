package htmlreport

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"slices"

	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/runtime/metrics"
)

// modelCardTemplate is the HTML model card: one small page, no script and
// no external resource. html/template escapes every value for its context
// (a javascript: link becomes harmless).
const modelCardTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Model card: {{.Model}}</title>
<style>
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;max-width:64em;margin:2em auto;padding:0 1em}
table{border-collapse:collapse;margin:1em 0}
th,td{padding:.35em .8em;border-bottom:1px solid #ddd;text-align:left}
th{border-bottom:2px solid #999}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code{font:.9em ui-monospace,monospace;overflow-wrap:anywhere}
.warn{background:#fff3cd;border:1px solid #d9a400;padding:.6em 1em;font-weight:600}
.note,footer{color:#555;font-size:.9em}
</style>
</head>
<body>
<h2>Model card: {{.Model}}</h2>
{{- if .Simulated}}
<p class="warn">⚠ {{.Warning}} Affected: {{range $i, $s := .Simulated}}{{if $i}}, {{end}}<code>{{$s}}</code>{{end}}.</p>
{{- end}}
{{- if .Rows}}
<table>
<thead><tr><th>Benchmark</th><th>Score</th>{{if .References}}<th>Model card</th>{{end}}<th>{{.Level}}</th><th>n</th><th>Category</th>{{if .PerRow}}<th>Recipe</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr><td>{{.Benchmark}}</td><td class="num">{{.Score}}</td>{{if $.References}}<td class="num">{{.Reference}}</td>{{end}}<td class="num">{{.CI}}</td><td class="num">{{.N}}</td><td>{{.Category}}</td>{{if $.PerRow}}<td><code>{{.Recipe}}</code></td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- range .References}}
<p class="note">Model card value of {{.}}</p>
{{- end}}
{{- range .Validity}}
<p class="warn">{{.}}</p>
{{- end}}
<p class="note">{{.Footnote}}</p>
<footer>
{{- if .Footer}}
<p>{{range $i, $f := .Footer}}{{if $i}} · {{end}}{{if and (not $i) $.Hash}}Recipe <code>{{$.Hash}}</code>{{else}}{{$f}}{{end}}{{end}}</p>
{{- end}}
{{- if .Published}}
<p>Published run: <a href="{{.Published}}">{{.Published}}</a></p>
{{- end}}
{{- range .Reproduce}}
<p>Reproduce: <code>{{.}}</code></p>
{{- end}}
{{- if .NotPublished}}
<p>{{.NotPublished}}</p>
{{- end}}
</footer>
{{- else}}
<p>No benchmarks.</p>
{{- end}}
</body>
</html>
`

// RenderModelCard writes suite's model card (report.ModelCardHTML) as one
// small, self-contained HTML page; the markdown card is report's.
func RenderModelCard(w io.Writer, suite []*metrics.Bundle, opts report.Options) error {
	if slices.Contains(suite, nil) {
		return fmt.Errorf("report: nil bundle in suite")
	}
	t, err := template.New("model-card").Parse(modelCardTemplate)
	if err != nil {
		return fmt.Errorf("model card template: %w", err)
	}
	bw := bufio.NewWriter(w)
	if err := t.Execute(bw, report.BuildModelCard(suite, opts.ModelCard)); err != nil {
		return fmt.Errorf("model card: %w", err)
	}
	return bw.Flush()
}
