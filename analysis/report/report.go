// Package report renders a run's benchmark bundles (eval.json, see
// runtime/metrics) as a suite report: markdown for a terminal or a pull
// request, JSON for jq, CSV for a spreadsheet and LaTeX tabulars for a
// paper. The fifth format, one self-contained HTML file with charts, is
// rendered by package analysis/report/htmlreport, which carries
// html/template and gonum/plot; this package stays light enough for
// nel-run.
//
// Every format says the same things: a suite summary, then per benchmark
// the headline with both its intervals labelled, pass@k, the variance
// decomposition and the minimum detectable effect, categories, extra
// scorer metrics, runtime, failures with exemplars, an agentic benchmark's
// trajectory audit, provenance and the bundle's notes. An undefined value prints as "n/a" with the note that
// explains it, never as NaN.
package report

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/rundir"
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
	// ModelCard is a model card's table of numbers, each checkable
	// (modelcard.go); ModelCardHTML is the same as one small HTML page.
	ModelCard     Format = "model-card"
	ModelCardHTML Format = "model-card-html"
)

// Formats lists every format, in the order help texts name them.
var Formats = []Format{Markdown, HTML, JSON, CSV, LaTeX, ModelCard, ModelCardHTML}

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
	case Markdown, HTML, JSON, CSV, LaTeX, ModelCard, ModelCardHTML:
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
	// ModelCard holds the model-card formats' links and categories.
	ModelCard ModelCardOptions
}

// ErrHTML is returned for the HTML format, which this package does not
// render.
var ErrHTML = errors.New("report: HTML is rendered by package analysis/report/htmlreport (nel report -f html)")

// Render writes the report of suite in format: markdown, JSON, CSV,
// LaTeX or a markdown model card. HTML returns ErrHTML: htmlreport.Render
// renders it; ModelCardHTML returns ErrModelCardHTML: htmlreport.RenderModelCard
// renders it.
func Render(w io.Writer, suite []*metrics.Bundle, format Format, opts Options) error {
	if slices.Contains(suite, nil) {
		return fmt.Errorf("report: nil bundle in suite")
	}
	switch format {
	case Markdown:
		return renderMarkdown(w, suite, opts)
	case HTML:
		return ErrHTML
	case JSON:
		return renderJSON(w, suite)
	case CSV:
		return renderCSV(w, suite)
	case LaTeX:
		return renderLaTeX(w, suite, opts)
	case ModelCard:
		return renderModelCard(w, suite, opts)
	case ModelCardHTML:
		return ErrModelCardHTML
	}
	_, err := ParseFormat(string(format))
	return err
}

// FileName is the name of format's report in a run's output directory:
// report.md, report.html, report.json, report.csv, report.tex,
// model-card.md or model-card.html; "" for an unknown format.
func FileName(format Format) string {
	switch format {
	case Markdown:
		return rundir.ReportFile("md")
	case HTML:
		return rundir.ReportFile("html")
	case JSON:
		return rundir.ReportFile("json")
	case CSV:
		return rundir.ReportFile("csv")
	case LaTeX:
		return rundir.ReportFile("tex")
	case ModelCard:
		return "model-card.md"
	case ModelCardHTML:
		return "model-card.html"
	}
	return ""
}

// RunFormats are the formats a finished run writes, from a plan's Reports
// (a recipe's output.report): markdown always and first, then the others in
// the order given, each once.
func RunFormats(names []string) ([]Format, error) {
	out := []Format{Markdown}
	for _, n := range names {
		f, err := ParseFormat(n)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// WriteFiles writes suite's report in each of formats into dir, as
// FileName(format), each atomically (a file is complete or absent), and
// returns the paths written in the order of formats. It refuses HTML with
// ErrHTML before writing anything: callers that want report.html write it
// with htmlreport.WriteFile (and ModelCardHTML with ErrModelCardHTML).
func WriteFiles(dir string, suite []*metrics.Bundle, formats []Format, opts Options) (paths []string, err error) {
	for _, f := range formats {
		if f == HTML {
			return nil, ErrHTML
		}
		if f == ModelCardHTML {
			return nil, ErrModelCardHTML
		}
		if FileName(f) == "" {
			_, err := ParseFormat(string(f))
			return nil, err
		}
	}
	for _, f := range formats {
		path := filepath.Join(dir, FileName(f))
		err := atomicfile.Write(path, func(w io.Writer) error { return Render(w, suite, f, opts) })
		if err != nil {
			return paths, fmt.Errorf("report: %w", err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// NA is what an undefined value prints as.
const NA = "n/a"
