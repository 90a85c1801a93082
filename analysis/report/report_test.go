package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/report/internal/reporttest"

	"github.com/nel-eval/nel/internal/testenv"

	"github.com/nel-eval/nel/analysis/report/internal/view"
	"github.com/nel-eval/nel/runtime/metrics"
)

func renderString(t *testing.T, suite []*metrics.Bundle, format Format) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, suite, format, Options{Source: "out/run-1"}); err != nil {
		t.Fatalf("Render %s: %v", format, err)
	}
	return buf.String()
}

var (
	mustContain    = reporttest.MustContain
	mustNotContain = reporttest.MustNotContain
)

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{
		"markdown": Markdown, "md": Markdown, "HTML": HTML, "json": JSON, "csv": CSV, "latex": LaTeX, "tex": LaTeX,
	} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseFormat("pdf")
	if err == nil {
		t.Fatal("ParseFormat(pdf) succeeded")
	}
	mustContain(t, "error", err.Error(), `"pdf"`, "markdown, html, json, csv, latex")

	for path, want := range map[string]Format{"r.md": Markdown, "a/b/R.HTML": HTML, "x.json": JSON, "x.csv": CSV, "paper/t.tex": LaTeX} {
		if got, ok := FormatForPath(path); !ok || got != want {
			t.Errorf("FormatForPath(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
	for _, path := range []string{"report", "x.pdf", "dir.md/file"} {
		if got, ok := FormatForPath(path); ok {
			t.Errorf("FormatForPath(%q) = %q, want none", path, got)
		}
	}
	if err := Render(&bytes.Buffer{}, nil, "pdf", Options{}); err == nil {
		t.Error("Render with an unknown format succeeded")
	}
}

func TestHelpers(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{mdCode("a`b", false), "``a`b``"},
		{mdCode("```x```", false), "```` ```x``` ````"},
		{mdCode("a|b", true), "`a\\|b`"},
		{mdCode("two\nlines", false), "`two lines`"},
		{tex(`50% & $a_1$ {~^\} #`), `50\% \& \$a\_1\$ \{\textasciitilde{}\textasciicircum{}\textbackslash{}\} \#`},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// cells splits a markdown table row on its unescaped pipes.
func cells(line string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cur.WriteByte(line[i])
			cur.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(out, cur.String())
}

func TestMarkdown(t *testing.T) {
	out := renderString(t, testSuite(), Markdown)
	mustContain(t, "markdown", out,
		"# nel evaluation report\n",
		"Run: `out/run-1` · 4 benchmark(s)",
		"## Summary",
		// The interval columns name the methods they hold (the
		// fixture's are bundles of before Wilson: clt, and math#cot's
		// clustered one).
		"| Benchmark | Metric | Value | 95% CI (clt, clt_clustered) | NeMo's bootstrap, parity only (bootstrap_percentile) | Items | Repeats | Infra failures (not scored) | Model errors |",
		"The first interval column is the one nel reports as the score's interval",
		// 8 of 2,000 = 0.4% infrastructure failures; 4 of 1,992 = 0.2% model errors.
		"| [gsm8k](#bench-gsm8k) | `pass@1` | **0.8120** | 0.7911–0.8329 | 0.7905–0.8324 | 500 | 4 | 8 (0.4%) | 4 (0.2%) |",
		"| [mmlu\\_pro](#bench-mmlu-pro) | `mean_reward` | **n/a** | n/a | n/a | 0 | 1 | 0 | 0 |",
		// the headline, both intervals labelled; what ran and what was scored
		"**pass@1 0.8120 [95% CI clt 0.7911–0.8329] (NeMo's bootstrap, parity only: 0.7905–0.8324)** · 500 items × 4 repeats (2,000 samples, 1,992 scored) · binary rewards",
		"**mean\\_reward 0.4567 [95% CI clt clustered (60 clusters) 0.4102–0.5032] (NeMo's bootstrap, parity only: 0.4111–0.5019)**",
		"**mean\\_reward n/a** · 0 items × 1 repeats (0 samples)",
		"- no rows: nothing was evaluated, so there is no score",
		// pass@k
		"| `pass@2` | 0.8731 | 0.8552–0.8910 | 0.8547–0.8905 | 500 |",
		"| `pass@4` | 0.9102 |",
		// variance and MDE
		"between-item variance 0.1203 · within-item variance 0.0315",
		"optimal repeats: 2 repeats per item minimise the standard error per unit of compute (adding an item costs 1 sample more than a repeat); this run used 4",
		"this run detects differences ≥ 3.0 pp at 80% power",
		"within-item variance not estimable (one repeat)",
		// categories, with the hostile name escaped for a table cell
		"| arithmetic | 0.8610 | 0.8321–0.8899 | 0.8315–0.8893 | 220 |",
		`| \<script\>alert("x")\</script\> \| 50% \& $a\_1$ {\~^\\} | 0.7800 |`,
		"| one\\_item | 1.0000 | n/a | n/a | 1 |",
		// scorer metrics
		"| `scorer:format_ok` | 0.9935 |",
		// runtime
		"| Latency p50 / p90 / p99 | 1.83 s / 3.95 s / 7.60 s |",
		"| Finish reasons | stop 1,978 · length 14 · (none) 8 |",
		"| Interrupted samples | 10 (attempts 1: 1,990 · 2: 9 · 10: 1) |",
		"| Completion tokens/s (throughput) | 157.4 |",
		"| Cache hits | 120 |",
		// infrastructure failures, model errors and their exemplars:
		// backticks inside a longer fence
		"### Infrastructure failures\n\n8 of 2,000 samples (0.4%) failed for infrastructure reasons and are not scored (max\\_error\\_rate 5%).",
		"| Category | Count | Share of samples |",
		"| `timeout` | 8 | 0.4% |",
		"### Model errors\n\n4 of 1,992 scored samples (0.2%) are model errors, scored as wrong.",
		"| Category | Count | Share of scored samples |",
		"| `format_error` | 4 | 0.2% |",
		"- item `gsm8k-0017` (index 17, repeat 2): `request timed out after 120s`",
		"- item `gsm8k-0101` (index 101, repeat 0): ````model said ```rm -rf /``` | <b>bold</b> & 100% $_#{}~^\\ done````",
		"- item `gsm8k-0230` (index 230, repeat 3): `request timed out after 120s`",
		"- item `gsm8k-0005` (index 5, repeat 1): ```extracted: `` (empty)```",
		"- item `HumanEval/1` (index 1, repeat 1): `(no error text)`",
		"No infrastructure failures (300 samples).",
		"No model errors (300 scored samples).",
		// provenance and the simulated flag
		"| Recipe hash | `sha256:1111111111111111111111111111111111111111111111111111111111111111` |",
		"| Model | `meta/llama-3.1-8b-instruct` |",
		"| Time span | 2025-05-01T10:00:00Z → 2025-05-01T10:42:13Z |",
		"| Simulated | **YES — simulated endpoint, not a model** |",
		"> **⚠ SIMULATED endpoint: these answers came from nel's simulator, not a model.",
		"Affected: `humaneval`.",
		// INVALID: 1 of 4 samples (25%), no score and no interval.
		"| [humaneval](#bench-humaneval) | `pass@1` | **INVALID (simulated)** | n/a | n/a | 2 | 2 | 1 (25.0%) INVALID | 1 (33.3%) |",
		"> **⛔ INVALID: 1 of 4 samples (25%) failed for infrastructure reasons (server\\_error 1), more than max\\_error\\_rate 5%. No score is reported: the numbers would not measure the model. Fix the cause and run it again.**",
		"**INVALID** · pass@1 not reported · 2 items × 2 repeats (4 samples, 3 scored) · binary rewards",
		"1 of 4 samples (25%) failed for infrastructure reasons and are not scored (max\\_error\\_rate 5%): INVALID.",
		"## math (math\\#cot)",
	)
	// Raw HTML only inside code spans, where it is literal text.
	mustNotContain(t, "markdown", out, "NaN", "<script>")
	// No number of the INVALID benchmark: its pass@1 0.75, interval
	// 0.2599–1 and pass@2 sections are not shown.
	hv := out[strings.Index(out, "## humaneval"):strings.Index(out, "## math")]
	mustNotContain(t, "markdown humaneval", hv, "0.75", "0.2599", "pass@2", "### pass@k", "### Variance")
	// Sections in suite order, summary first.
	last := 0
	for _, h := range []string{"## Summary", "## gsm8k", "## humaneval", "## math", "## mmlu"} {
		i := strings.Index(out, h)
		if i < last {
			t.Errorf("%q out of order", h)
		}
		last = i
	}
	// Every table row has as many cells as its header.
	var want int
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			want = 0
			continue
		}
		n := len(cells(line))
		if want == 0 {
			want = n
		} else if n != want {
			t.Errorf("table row has %d cells, header %d: %s", n-2, want-2, line)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	suite := testSuite()
	out := renderString(t, suite, JSON)
	var doc struct {
		ReportVersion int              `json:"report_version"`
		Benchmarks    []metrics.Bundle `json:"benchmarks"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.ReportVersion != 1 {
		t.Errorf("report_version %d", doc.ReportVersion)
	}
	if len(doc.Benchmarks) != len(suite) {
		t.Fatalf("%d benchmarks, want %d", len(doc.Benchmarks), len(suite))
	}
	for i, b := range suite {
		if !reflect.DeepEqual(&doc.Benchmarks[i], b) {
			t.Errorf("benchmark %d does not round-trip:\n got %+v\nwant %+v", i, doc.Benchmarks[i], *b)
		}
	}
	mustContain(t, "json", out, `"report_version": 1`, `"value": null`, `"metric": "pass@1"`)
	mustContain(t, "json of nothing", renderString(t, nil, JSON), `"benchmarks": []`)
}

func TestCSV(t *testing.T) {
	suite := testSuite()
	out := renderString(t, suite, CSV)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs[0], CSVHeader) {
		t.Errorf("header %q", recs[0])
	}
	want := 0
	for _, b := range suite {
		want += len(b.Metrics) + len(b.Categories)
	}
	if len(recs)-1 != want {
		t.Errorf("%d rows, want %d", len(recs)-1, want)
	}
	byKey := map[string][]string{}
	for _, r := range recs[1:] {
		if len(r) != len(CSVHeader) {
			t.Fatalf("row has %d fields: %q", len(r), r)
		}
		k := r[0] + " " + r[2]
		if _, dup := byKey[k]; dup {
			t.Errorf("two rows for %s", k)
		}
		byKey[k] = r
	}
	for k, w := range map[string][]string{
		"gsm8k pass@1":               {"gsm8k", "gsm8k", "pass@1", "0.812", "500", "0.95", "clt", "0.7911", "0.8329", "bootstrap_percentile", "0.7905", "0.8324", "500", "4", "false", "2000", "1992", "8", "0.05", "true"},
		"gsm8k pass@4":               {"gsm8k", "gsm8k", "pass@4", "0.9102", "500", "0.95", "clt", "0.8951", "0.9253", "bootstrap_percentile", "0.8944", "0.9248", "500", "4", "false", "2000", "1992", "8", "0.05", "true"},
		"gsm8k scorer:format_ok":     {"gsm8k", "gsm8k", "scorer:format_ok", "0.9935", "500", "0.95", "clt", "0.9891", "0.9979", "bootstrap_percentile", "0.989", "0.9975", "500", "4", "false", "2000", "1992", "8", "0.05", "true"},
		"gsm8k category:algebra":     {"gsm8k", "gsm8k", "category:algebra", "0.7722", "180", "0.95", "clt", "0.7391", "0.8053", "bootstrap_percentile", "0.7385", "0.805", "500", "4", "false", "2000", "1992", "8", "0.05", "true"},
		"math#cot mean_reward":       {"math#cot", "math", "mean_reward", "0.4567", "300", "0.95", "clt_clustered", "0.4102", "0.5032", "bootstrap_percentile", "0.4111", "0.5019", "300", "1", "false", "300", "300", "0", "0.05", "true"},
		"math#cot category:one_item": {"math#cot", "math", "category:one_item", "1", "1", "", "", "", "", "", "", "", "300", "1", "false", "300", "300", "0", "0.05", "true"},
		// INVALID: no value, n or interval (pass@1 0.75 is not a result).
		"humaneval pass@1":                  {"humaneval", "humaneval", "pass@1", "", "", "", "", "", "", "", "", "", "2", "2", "true", "4", "3", "1", "0.05", "false"},
		"mmlu_pro mean_reward":              {"mmlu_pro", "mmlu_pro", "mean_reward", "", "0", "", "", "", "", "", "", "", "0", "1", "false", "0", "0", "0", "0.05", "true"},
		"gsm8k category:" + hostileCategory: {"gsm8k", "gsm8k", "category:" + hostileCategory, "0.78", "100", "0.95", "clt", "0.7381", "0.8219", "bootstrap_percentile", "0.737", "0.821", "500", "4", "false", "2000", "1992", "8", "0.05", "true"},
	} {
		if got := byKey[k]; !reflect.DeepEqual(got, w) {
			t.Errorf("row %s:\n got %q\nwant %q", k, got, w)
		}
	}
	mustNotContain(t, "csv", out, "NaN", "n/a")
	// RFC 4180: the hostile name's quotes are doubled inside a quoted field.
	mustContain(t, "csv", out, `"category:<script>alert(""x"")</script> | 50% & $a_1$ {~^\}"`)
	if got := renderString(t, nil, CSV); got != strings.Join(CSVHeader, ",")+"\n" {
		t.Errorf("csv of nothing = %q", got)
	}
}

func TestLaTeX(t *testing.T) {
	out := renderString(t, testSuite(), LaTeX)
	mustContain(t, "latex", out,
		"Benchmark & Metric & Value & 95\\% CI (clt, clt\\_clustered) & NeMo's bootstrap, parity only (bootstrap\\_percentile) & Items & Repeats & Infra failures & Model errors \\\\",
		"gsm8k & pass@1 & 0.8120 & 0.7911--0.8329 & 0.7905--0.8324 & 500 & 4 & 8 (0.4\\%) & 4 (0.2\\%) \\\\",
		"mmlu\\_pro & mean\\_reward & n/a & n/a & n/a & 0 & 1 & 0 & 0 \\\\",
		"humaneval & pass@1 & INVALID & n/a & n/a & 2 & 2 & 1 (25.0\\%) INVALID & 1 (33.3\\%) \\\\",
		"\\textbf{humaneval}: INVALID (pass@1 not reported) \\textperiodcentered{} 2 items $\\times$ 2 repeats (4 samples, 3 scored) \\\\",
		"\\textbf{INVALID: 1 of 4 samples (25\\%) failed for infrastructure reasons",
		"\\textbf{gsm8k}: pass@1 0.8120 [95\\% CI clt 0.7911--0.8329] (NeMo's bootstrap, parity only: 0.7905--0.8324) \\textperiodcentered{} 500 items $\\times$ 4 repeats (2,000 samples, 1,992 scored)",
		"Infrastructure failure & Count & Share \\\\",
		"Model error & Count & Share \\\\",
		"format\\_error & 4 & 0.2\\% \\\\",
		"category: \\textless{}script\\textgreater{}alert(\\texttt{\\char34}x\\texttt{\\char34})\\textless{}/script\\textgreater{} \\textbar{} 50\\% \\& \\$a\\_1\\$ \\{\\textasciitilde{}\\textasciicircum{}\\textbackslash{}\\} & 0.7800",
		"this run detects differences $\\geq$ 3.0 pp at 80\\% power",
		"\\textbf{SIMULATED endpoint, not a model.}",
		"Note: no rows: nothing was evaluated, so there is no score",
		"scorer:format\\_ok & 0.9935",
		"timeout & 8 & 0.4\\% \\\\",
		"Recipe hash & sha256:1111",
	)
	mustNotContain(t, "latex", out, "NaN", "<script>", "–")
	// The INVALID benchmark's pass@1 0.75 and its metric table are not
	// shown.
	hv := out[strings.Index(out, "% Benchmark humaneval"):strings.Index(out, "% Benchmark math")]
	mustNotContain(t, "latex humaneval", hv, "0.75", "Metric & Value")
	if b, e := strings.Count(out, `\begin{tabular}`), strings.Count(out, `\end{tabular}`); b != e || b == 0 {
		t.Errorf("%d \\begin{tabular}, %d \\end{tabular}", b, e)
	}
	// Every row of a tabular has as many unescaped & as its column spec
	// says, and no unescaped special character is left anywhere.
	textbf := regexp.MustCompile(`\\textbf\{((?:[^{}\\]|\\[a-z]+\{\}|\\.)*)\}`)
	special := regexp.MustCompile(`(^|[^\\])[%$#_^~&{}]`)
	cols := 0
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, `\begin{tabular}{`):
			cols = len(strings.TrimSuffix(strings.TrimPrefix(line, `\begin{tabular}{`), "}"))
			continue
		case strings.HasPrefix(line, `\end{tabular}`):
			cols = 0
			continue
		case strings.HasPrefix(line, "%") || line == `\hline` || line == "":
			continue
		}
		body := textbf.ReplaceAllString(strings.ReplaceAll(line, `\texttt{\char34}`, ""), "$1")
		body = regexp.MustCompile(`\\[a-zA-Z]+\{\}|\\[a-zA-Z]+\{|\\[\\&%$#_{}]|\$\\[a-z]+\$|\s*\\\\$`).ReplaceAllString(body, "")
		if cols > 0 {
			if n := strings.Count(body, "&"); n != cols-1 {
				t.Errorf("row with %d & in a %d-column tabular: %s", n, cols, line)
			}
			body = strings.ReplaceAll(body, "&", "")
		}
		if m := special.FindString(body); m != "" {
			t.Errorf("unescaped %q in %s", m, line)
		}
	}
}

// TestLaTeXCompiles typesets the fragments with pdflatex when it is
// installed (Debian: texlive-latex-base); the structural checks in
// TestLaTeX run everywhere.
func TestLaTeXCompiles(t *testing.T) {
	bin := testenv.LookPath(t, testenv.Pdflatex)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "report.tex"), []byte(renderString(t, testSuite(), LaTeX)), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "\\documentclass{article}\n\\begin{document}\n\\scriptsize\n\\input{report.tex}\n\\end{document}\n"
	if err := os.WriteFile(filepath.Join(dir, "doc.tex"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-interaction=nonstopmode", "-halt-on-error", "doc.tex")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pdflatex: %v\n%s", err, out)
	}
	if st, err := os.Stat(filepath.Join(dir, "doc.pdf")); err != nil || st.Size() < 1000 {
		t.Fatalf("no PDF: %v", err)
	}
	// Overfull boxes are fine (long hashes); missing characters are not.
	log, _ := os.ReadFile(filepath.Join(dir, "doc.log"))
	if bytes.Contains(log, []byte("Missing character")) {
		t.Errorf("pdflatex dropped characters:\n%s", log)
	}
}

func TestNA(t *testing.T) {
	if NA != view.NA {
		t.Errorf("NA %q, but the formats print %q", NA, view.NA)
	}
}

func TestHTMLElsewhere(t *testing.T) {
	err := Render(&bytes.Buffer{}, testSuite(), HTML, Options{})
	if !errors.Is(err, ErrHTML) {
		t.Fatalf("Render(HTML) = %v, want ErrHTML", err)
	}
	mustContain(t, "error", err.Error(), "analysis/report/htmlreport", "nel report -f html")
}

func TestRunFormats(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []Format
	}{
		{nil, []Format{Markdown}},
		{[]string{"markdown"}, []Format{Markdown}},
		{[]string{"csv"}, []Format{Markdown, CSV}},
		{[]string{"markdown", "html", "csv"}, []Format{Markdown, HTML, CSV}},
		{[]string{"latex", "json", "md", "tex", "html"}, []Format{Markdown, LaTeX, JSON, HTML}},
	} {
		got, err := RunFormats(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("RunFormats(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := RunFormats([]string{"markdown", "pdf"}); err == nil || !strings.Contains(err.Error(), `"pdf"`) {
		t.Errorf("RunFormats(pdf) = %v", err)
	}
	for f, want := range map[Format]string{Markdown: "report.md", HTML: "report.html", JSON: "report.json", CSV: "report.csv", LaTeX: "report.tex", "pdf": ""} {
		if got := FileName(f); got != want {
			t.Errorf("FileName(%s) = %q, want %q", f, got, want)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	suite := testSuite()
	formats := []Format{Markdown, CSV, LaTeX, JSON}
	paths, err := WriteFiles(dir, suite, formats, Options{Source: "out/run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(formats) {
		t.Fatalf("paths %q", paths)
	}
	for i, f := range formats {
		if want := filepath.Join(dir, FileName(f)); paths[i] != want {
			t.Errorf("path %d = %s, want %s", i, paths[i], want)
		}
		got, err := os.ReadFile(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := renderString(t, suite, f); string(got) != want {
			t.Errorf("%s differs from Render's %s", paths[i], f)
		}
	}
	// No temporaries left behind.
	if entries, _ := os.ReadDir(dir); len(entries) != len(formats) {
		t.Errorf("%d files in %s, want %d", len(entries), dir, len(formats))
	}

	// HTML is refused before anything is written.
	empty := t.TempDir()
	if _, err := WriteFiles(empty, suite, []Format{Markdown, HTML}, Options{}); !errors.Is(err, ErrHTML) {
		t.Errorf("WriteFiles with HTML = %v, want ErrHTML", err)
	}
	if _, err := WriteFiles(empty, suite, []Format{Markdown, "pdf"}, Options{}); err == nil {
		t.Error("WriteFiles with pdf succeeded")
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("a refused WriteFiles left %d files", len(entries))
	}
	// A directory that does not exist: an error naming the file.
	if _, err := WriteFiles(filepath.Join(empty, "nope"), suite, []Format{Markdown}, Options{}); err == nil || !strings.Contains(err.Error(), "report.md") {
		t.Errorf("WriteFiles into a missing directory = %v", err)
	}
}
