package htmlreport

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/report/internal/reporttest"
	"github.com/nel-eval/nel/runtime/metrics"
)

func f(x float64) *float64 { return reporttest.F(x) }

func testSuite() []*metrics.Bundle { return reporttest.Suite() }

// renderString renders suite in format: HTML here, the others through
// package report.
func renderString(t *testing.T, suite []*metrics.Bundle, format report.Format) string {
	t.Helper()
	var buf bytes.Buffer
	opts := report.Options{Source: "out/run-1"}
	var err error
	if format == report.HTML {
		err = Render(&buf, suite, opts)
	} else {
		err = report.Render(&buf, suite, format, opts)
	}
	if err != nil {
		t.Fatalf("Render %s: %v", format, err)
	}
	return buf.String()
}

var (
	mustContain    = reporttest.MustContain
	mustNotContain = reporttest.MustNotContain
)

func TestHTML(t *testing.T) {
	out := renderString(t, testSuite(), report.HTML)
	mustContain(t, "html", out,
		"<!DOCTYPE html>",
		"<title>nel evaluation report</title>",
		`<a href="#bench-gsm8k">gsm8k</a>`,
		`<span class="ci">[95% CI clt 0.7911–0.8329] (NeMo&#39;s bootstrap, parity only: 0.7905–0.8324)</span>`,
		`<span class="value">0.8120</span>`,
		`<span class="value na">n/a</span>`,
		"[95% CI clt clustered (60 clusters) 0.4102–0.5032] (NeMo&#39;s bootstrap, parity only: 0.4111–0.5019)",
		// the category chart's legend names the parity column too
		`<span class="sw clt"></span>nel's interval <span class="sw boot"></span>NeMo's bootstrap, for parity</figcaption>`,
		"this run detects differences ≥ 3.0 pp at 80% power",
		"Within-item variance: not estimable (one repeat)",
		// hostile strings escaped in tables, exemplars and the charts' SVG text
		"<td>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; | 50% &amp; $a_1$ {~^\\}</td>",
		"model said ```rm -rf /``` | &lt;b&gt;bold&lt;/b&gt; &amp; 100% $_#{}~^\\ done",
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;…</text>",
		// the simulated flag, prominently
		`<div class="banner sim" role="alert">⚠ SIMULATED endpoint`,
		`<span class="tag sim">SIMULATED</span>`,
		"<b>YES — simulated endpoint, not a model</b>",
		"no rows: nothing was evaluated, so there is no score",
		"request timed out after 120s",
		// the INVALID benchmark: a banner, a tag, no score
		`<div class="banner invalid" role="alert">⛔ INVALID: 1 of 4 samples (25%) failed for infrastructure reasons (server_error 1), more than max_error_rate 5%. No score is reported`,
		`<span class="tag invalid">INVALID</span>`,
		`<td class="num na"><b>INVALID</b></td>`,
		`<span class="value na">INVALID</span><span class="ci">pass@1 not reported</span>`,
		">humaneval · INVALID</text>",
		// infrastructure failures (not scored) apart from model errors
		"<p>8 of 2,000 samples (0.4%) failed for infrastructure reasons and are not scored (max_error_rate 5%).</p>",
		"<p>4 of 1,992 scored samples (0.2%) are model errors, scored as wrong.</p>",
		"<p>No infrastructure failures (300 samples).</p>",
		"<p>No model errors (300 scored samples).</p>",
		// charts: the suite, gsm8k's and math's categories, four latency
		// charts (one from percentiles), two failure charts
		`aria-label="score by benchmark"`,
		`aria-label="pass@1 by category"`,
		`aria-label="mean_reward by category"`,
		`aria-label="latency histogram"`,
		`aria-label="latency percentiles"`,
		`aria-label="model errors by category"`,
		"This benchmark has no categories.",
		"No latency was recorded.",
		"@font-face{font-family:\"Liberation Sans\"",
		">gsm8k · pass@1</text>",
	)
	if n := strings.Count(out, "<svg"); n != 8 {
		t.Errorf("%d charts, want 8", n)
	}
	// No number of the INVALID benchmark: its pass@1 0.75, interval
	// 0.2599–1 and pass@2.
	hv := out[strings.Index(out, `id="bench-humaneval"`):strings.Index(out, `id="bench-math-cot"`)]
	mustNotContain(t, "html humaneval", hv, "0.75", "0.2599", "pass@2")
	// Self-contained and inert: no script, no external resource, no URL
	// but data: ones.
	mustNotContain(t, "html", out, "<script", "http://", "https://", "<link", "<img", "src=", "NaN", "<?xml")
	for _, m := range regexp.MustCompile(`url\(([^)]{0,16})`).FindAllStringSubmatch(out, -1) {
		if !strings.HasPrefix(m[1], "data:") {
			t.Errorf("external url(%s…)", m[1])
		}
	}
	if dir := os.Getenv("NEL_ARTIFACTS"); dir != "" {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "report.html"), []byte(out), 0o644)
	}
}

// TestHTMLEdgeCases: the charts cope with one benchmark, no categories,
// no failures, undefined values and an empty suite.
func TestHTMLEdgeCases(t *testing.T) {
	s := testSuite()
	for name, c := range map[string]struct {
		suite []*metrics.Bundle
		want  []string
	}{
		"empty suite":    {nil, []string{"No benchmarks.", "0 benchmarks"}},
		"one benchmark":  {s[:1], []string{`aria-label="score by benchmark"`, "1 benchmark<"}},
		"only undefined": {s[3:], []string{"No benchmark has a value, so there is nothing to plot.", "This benchmark has no categories.", "No latency was recorded.", "No infrastructure failures (0 samples).", "No scored samples."}},
		"categories all undefined": {[]*metrics.Bundle{{
			Benchmark: "x", Samples: 1, Items: 1, Repeats: 1,
			Headline:   metrics.Score{Metric: "pass@1", Value: f(1), N: 1},
			Categories: []metrics.Category{{Name: "a", Score: metrics.Score{Metric: "pass@1"}}},
		}}, []string{"No category has a value, so there is nothing to plot.", "No latency was recorded."}},
		"histogram of zeros": {[]*metrics.Bundle{{
			Benchmark: "x", Samples: 3, Items: 3, Repeats: 1,
			Headline: metrics.Score{Metric: "pass@1", Value: f(1), N: 3},
			Runtime:  metrics.Runtime{LatencyMS: metrics.Percentiles{P50: 1, P90: 1, P99: 1, Max: 1, BucketMS: 1, Histogram: []int{0, 0}}},
		}}, []string{`aria-label="latency percentiles"`}},
	} {
		t.Run(name, func(t *testing.T) {
			out := renderString(t, c.suite, report.HTML)
			mustContain(t, "html", out, c.want...)
			mustNotContain(t, "html", out, "NaN", "could not be drawn")
			for _, format := range []report.Format{report.Markdown, report.JSON, report.CSV, report.LaTeX} {
				mustNotContain(t, string(format), renderString(t, c.suite, format), "NaN")
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path, err := WriteFile(dir, testSuite(), report.Options{Source: "out/run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "report.html"); path != want {
		t.Errorf("path %s, want %s", path, want)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := renderString(t, testSuite(), report.HTML); string(got) != want {
		t.Error("report.html differs from Render's output")
	}
	// A suite that cannot render leaves nothing behind.
	if _, err := WriteFile(filepath.Join(dir, "sub"), []*metrics.Bundle{nil}, report.Options{}); err == nil {
		t.Error("WriteFile of a nil bundle succeeded")
	}
	// report.Render refuses HTML and names this package.
	err = report.Render(&bytes.Buffer{}, testSuite(), report.HTML, report.Options{})
	if !errors.Is(err, report.ErrHTML) || !strings.Contains(err.Error(), "htmlreport") {
		t.Errorf("report.Render(HTML) = %v", err)
	}
}

// An agentic benchmark's trajectory audit is in the HTML report as in the
// others (reporttest.AgentRun's numbers), numbers right-aligned; a
// benchmark without turns has none.
func TestHTMLAgent(t *testing.T) {
	out := renderString(t, []*metrics.Bundle{reporttest.AgentRun(t)}, report.HTML)
	mustContain(t, "html", out,
		"<h3>Trajectories</h3>\n<p>4 samples with trajectories · model turns per sample mean 2.25, median 2.5, max 4 · 7 tool calls.</p>",
		"<h4>Tool usage</h4>",
		`<tr><td>bash</td><td class="num">6</td><td class="num">1</td><td class="num">16.7%</td><td class="num">1</td></tr>`,
		`<tr><td>endless</td><td class="num">2</td><td class="num">0</td><td class="num">4</td><td class="num">1.0</td><td class="num">0.00</td><td>turn_budget</td></tr>`,
		`<tr><td>infra_error</td><td class="num">1</td><td class="num">25.0%</td></tr>`,
	)
	mustNotContain(t, "html", renderString(t, testSuite(), report.HTML), "<h3>Trajectories</h3>")
}
