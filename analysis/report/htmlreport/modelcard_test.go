package htmlreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/report/internal/reporttest"
	"github.com/nel-eval/nel/runtime/metrics"
)

func renderCard(t *testing.T, suite []*metrics.Bundle, o report.ModelCardOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := RenderModelCard(&buf, suite, report.Options{ModelCard: o}); err != nil {
		t.Fatalf("RenderModelCard: %v", err)
	}
	return buf.String()
}

const (
	gsmHash = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	gsmHex  = "1111111111111111111111111111111111111111111111111111111111111111"
)

const hostileCategory = reporttest.HostileCategory

func TestModelCardHTML(t *testing.T) {
	suite := testSuite()
	suite[0].Benchmark = `<script>alert("b")</script>`
	suite[0].Provenance.Model = `<b>model</b>`
	for _, b := range suite {
		b.Provenance.Model = `<b>model</b>`
	}
	got := renderCard(t, suite, report.ModelCardOptions{
		Store: "https://store.example/nel", RunID: "r&1", RecipeHash: gsmHash,
		Categories: map[string]string{"humaneval": hostileCategory},
	})
	if len(got) > 8<<10 {
		t.Errorf("model card HTML is %d bytes, want a few KB", len(got))
	}
	mustContain(t, "html", got,
		"<!DOCTYPE html>",
		"<title>Model card: &lt;b&gt;model&lt;/b&gt;</title>",
		"<td>&lt;script&gt;alert(&#34;b&#34;)&lt;/script&gt;</td>",
		"<td>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; | 50% &amp; $a_1$ {~^\\}</td>",
		`<td class="num">81.2 ± 2.1</td><td class="num">79.1–83.3</td><td class="num">500 × 4</td>`,
		`<p class="warn">⚠ SIMULATED endpoint`,
		`<th>Recipe</th>`,
		`<a href="https://store.example/nel/results/`+gsmHex+`/r&amp;1/">`,
		"Reproduce: <code>nel reproduce "+gsmHash+" --store https://store.example/nel</code>",
		// The INVALID benchmark: no score, and why.
		`<td class="num">INVALID</td><td class="num">n/a</td><td class="num">2 × 2</td>`,
		`<p class="warn">INVALID humaneval: 1 of 4 samples (25%) failed for infrastructure reasons (server_error 1), more than max_error_rate 5%; no result is reported.</p>`,
	)
	mustNotContain(t, "html", got, "<script", "<b>", "src=", "@import", "url(", "75.0")
	if i, j := strings.Index(got, `class="warn"`), strings.Index(got, "<table>"); i < 0 || i > j {
		t.Errorf("simulated warning must precede the table")
	}

	// A hostile store address never becomes a live link.
	got = renderCard(t, suite[:1], report.ModelCardOptions{URL: "javascript:alert(1)"})
	mustNotContain(t, "html", got, `href="javascript:`)
	mustContain(t, "html", got, `href="#ZgotmplZ"`)
}
