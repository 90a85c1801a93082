// Package render writes a run's report in every format nel knows, HTML
// included: the one place that picks the renderer for a format. Package
// report renders the text formats and cannot reach the HTML one (package
// htmlreport imports report); nel report and the local runner come here,
// nel-run, which must stay small, goes to report directly and leaves HTML
// out.
package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/nel-eval/nel/analysis/nemorun"
	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/report/htmlreport"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/rundir"
)

// Render renders suite's report in format to w.
func Render(w io.Writer, suite []*metrics.Bundle, format report.Format, opts report.Options) error {
	switch format {
	case report.HTML:
		return htmlreport.Render(w, suite, opts)
	case report.ModelCardHTML:
		return htmlreport.RenderModelCard(w, suite, opts)
	}
	return report.Render(w, suite, format, opts)
}

// WriteRun writes a finished run's reports into dir, as
// report.WriteRun does, HTML included.
func WriteRun(dir string, suite []*metrics.Bundle, reports []string, opts report.Options) ([]string, error) {
	paths, _, err := report.WriteRun(dir, suite, reports, opts, htmlreport.WriteFile)
	return paths, err
}

// Request is one report to write (nel report).
type Request struct {
	Dir    string // a run's output directory, one benchmark's, or an eval.json
	Format string // "" for markdown, or what Output's extension says
	Output string // the file to write; "" for stdout
	Title  string

	// Model cards: where the run was published (default: what
	// Dir/.nel/published.json records) and categories by benchmark.
	Store, RunID string
	Categories   map[string]string
	// Reference names the model card values to put beside nel's: a
	// table nel carries, or a file (report.ReadReference).
	Reference string
}

// Format is the format req asks for: Format when set, else the one
// Output's extension names, else markdown. A model card written to an
// .html file is the HTML card.
func (req Request) format() (report.Format, error) {
	format := report.Markdown
	switch {
	case req.Format != "":
		f, err := report.ParseFormat(req.Format)
		if err != nil {
			return "", exitcode.New(exitcode.Usage, fmt.Errorf("report: %w", err))
		}
		format = f
	case req.Output != "":
		if f, ok := report.FormatForPath(req.Output); ok {
			format = f
		}
	}
	if f, _ := report.FormatForPath(req.Output); format == report.ModelCard && f == report.HTML {
		format = report.ModelCardHTML
	}
	return format, nil
}

// Write renders the report req asks for and writes it to req.Output, or to
// stdout. Rendering is finished before anything is written: a failure
// leaves no partial report. Warnings and the line naming the file written
// go to stderr.
func Write(ctx context.Context, req Request, stdout, stderr io.Writer) error {
	format, err := req.format()
	if err != nil {
		return err
	}
	info, err := os.Stat(req.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("report: %s does not exist", req.Dir)
		}
		return fmt.Errorf("report: %w", err)
	}
	suite, err := readSuite(req.Dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	card := report.ModelCardOptions{Store: req.Store, RunID: req.RunID, Categories: req.Categories}
	if req.Reference != "" {
		if card.Reference, err = report.ReadReference(req.Reference); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	if format == report.ModelCard || format == report.ModelCardHTML {
		for _, b := range suite {
			if strings.HasPrefix(b.Provenance.RecipeHash, nemorun.HashPrefix) {
				return fmt.Errorf("report: %s: a model card states a nel recipe hash that reproduces the numbers, and a NeMo Evaluator run has none (its config_hash covers only the model, benchmark and repeats): use -f markdown, html, json, csv or latex", req.Dir)
			}
		}
		if card, err = publishedCard(req.Dir, info.IsDir(), suite, card, stderr); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Render(&buf, suite, format, report.Options{Title: req.Title, Source: req.Dir, ModelCard: card}); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if req.Output == "" {
		_, err := buf.WriteTo(stdout)
		return err
	}
	if err := atomicfile.WriteFile(req.Output, buf.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	names := make([]string, len(suite))
	for i, b := range suite {
		names[i] = b.Benchmark
	}
	fmt.Fprintf(stderr, "nel: %s report of %s → %s\n", format, strings.Join(names, ", "), req.Output)
	return nil
}

// publishedCard fills a model card's link from what the run directory
// records of its publication, where the flags left it open.
func publishedCard(dir string, isDir bool, suite []*metrics.Bundle, card report.ModelCardOptions, stderr io.Writer) (report.ModelCardOptions, error) {
	if isDir {
		pub, err := report.ReadPublished(dir)
		if err != nil {
			return card, fmt.Errorf("report: %w", err)
		}
		// A record left from another recipe's run must not link this
		// card to numbers it did not produce.
		if err := report.CheckPublished(suite, pub); err != nil {
			fmt.Fprintf(stderr, "nel: warning: ignoring %s: %v\n", rundir.Dir(dir).Published(), err)
			pub = nil
		}
		card = card.WithPublished(pub)
	}
	if card.RunID != "" && card.Store == "" {
		return card, exitcode.Usagef("report: --run-id needs --store (the recipe store the run was published to)")
	}
	return card, nil
}

// readSuite reads the bundles of a nel run, or of a NeMo Evaluator run
// (nemorun recognises it by its layout: eval-*.json bundles, which nel
// never writes), whose bundles say in their notes where they came from.
func readSuite(dir string) ([]*metrics.Bundle, error) {
	if !nemorun.Is(dir) {
		return metrics.ReadDir(dir)
	}
	runs, err := nemorun.Read(dir)
	if err != nil {
		return nil, err
	}
	suite := make([]*metrics.Bundle, len(runs))
	for i, r := range runs {
		suite[i] = r.Bundle
	}
	return suite, nil
}
