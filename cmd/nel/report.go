package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	nelreport "github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/report/htmlreport"
	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/metrics"
)

const reportHelp = `Reports every benchmark of a run: DIR is a run's output directory (each
<benchmark>/ holding eval.json, or results.parquet from which it is computed),
one benchmark's directory, or an eval.json.

The report starts with a suite summary (headline metric, value, both
intervals, items, repeats, failures), then per benchmark: the headline with
its CLT and bootstrap intervals, pass@k, the variance decomposition and the
minimum detectable effect, categories, scorer metrics, runtime, failures
with exemplars, provenance and the bundle's notes. A simulated run is
flagged. Undefined values print as n/a.

Formats (-f; default markdown, or inferred from -o's extension):
  markdown  .md    for a terminal, a pull request or a wiki
  html      .html  one self-contained file with charts (no script, no external URL)
  json      .json  {"report_version":1,"benchmarks":[eval.json...]}: nel report DIR -f json | jq
  csv       .csv   one row per (benchmark, metric), then category:<name> rows
  latex     .tex   tabular fragments to \input in a paper
  model-card       a model card's table: benchmark, score ± CLT half-width,
                   95% CI, items × repeats, category; the recipe hash, nel
                   and server versions, dates, the published run's link
                   and the nel reproduce command (HTML with -o *.html)
  model-card-html  the same as one small HTML page (no script, no external URL)

Without -o the report goes to stdout; with -o it is written atomically.

Model cards: the category is the built-in benchmark's (gsm8k: Mathematics,
humaneval: Coding, ...), "—" for others; --category NAME=Category sets it
(NAME is the benchmark's key or name; repeatable). The link to the published
run is STORE/results/<recipe hex>/RUN-ID/: --store and --run-id, defaulting
to what DIR/.nel/published.json (written by nel publish) records; flags win.
A simulated run is flagged above the table.

Exit status: 0 success, 1 failure (DIR missing, no benchmarks under it, an
unreadable bundle), 2 usage error.`

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlags("report", "DIR [-f markdown|html|json|csv|latex] [-o FILE] [--title TEXT]\n       nel report DIR -f model-card|model-card-html [-o FILE] [--store URL] [--run-id ID] [--category NAME=Category]...", reportHelp, stderr)
	formatF := fl.String("f", "", "format: markdown, html, json, csv, latex, model-card or model-card-html (default markdown, or from -o's extension)")
	outF := fl.String("o", "", "write the report to FILE (atomically) instead of stdout")
	titleF := fl.String("title", "", "the report's title (default \"nel evaluation report\")")
	storeF := fl.String("store", "", "model card: the recipe store the run was published to (default: DIR/.nel/published.json's)")
	runIDF := fl.String("run-id", "", "model card: the published run's id (default: DIR/.nel/published.json's)")
	categories := map[string]string{}
	fl.Func("category", "model card: `NAME=Category` sets a benchmark's category (repeatable)", func(v string) error {
		name, cat, ok := strings.Cut(v, "=")
		if name = strings.TrimSpace(name); !ok || name == "" || strings.TrimSpace(cat) == "" {
			return fmt.Errorf("want NAME=Category (e.g. gsm8k=Mathematics), got %q", v)
		}
		categories[name] = strings.TrimSpace(cat)
		return nil
	})
	dirs, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(dirs) != 1 {
		fl.Usage()
		return &exitError{2, errors.New("report: expected exactly one run directory")}
	}
	dir := dirs[0]

	format := nelreport.Markdown
	switch {
	case *formatF != "":
		if format, err = nelreport.ParseFormat(*formatF); err != nil {
			return &exitError{2, fmt.Errorf("report: %w", err)}
		}
	case *outF != "":
		if f, ok := nelreport.FormatForPath(*outF); ok {
			format = f
		}
	}
	// A model card written to an .html file is the HTML card.
	if f, _ := nelreport.FormatForPath(*outF); format == nelreport.ModelCard && f == nelreport.HTML {
		format = nelreport.ModelCardHTML
	}

	info, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("report: %s does not exist", dir)
		}
		return fmt.Errorf("report: %w", err)
	}
	suite, err := metrics.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	card := nelreport.ModelCardOptions{Store: *storeF, RunID: *runIDF, Categories: categories}
	if format == nelreport.ModelCard || format == nelreport.ModelCardHTML {
		if info.IsDir() {
			pub, err := nelreport.ReadPublished(dir)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			// A record left from another recipe's run must not link this
			// card to numbers it did not produce.
			if err := nelreport.CheckPublished(suite, pub); err != nil {
				fmt.Fprintf(stderr, "nel: warning: ignoring %s: %v\n", filepath.Join(dir, nelreport.PublishedFile), err)
				pub = nil
			}
			card = card.WithPublished(pub)
		}
		if card.RunID != "" && card.Store == "" {
			return &exitError{2, errors.New("report: --run-id needs --store (the recipe store the run was published to)")}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// Render fully before writing anything: a failure leaves no partial
	// report on stdout or at -o.
	var buf bytes.Buffer
	opts := nelreport.Options{Title: *titleF, Source: dir, ModelCard: card}
	switch format {
	case nelreport.HTML:
		err = htmlreport.Render(&buf, suite, opts)
	case nelreport.ModelCardHTML:
		err = nelreport.RenderModelCardHTML(&buf, suite, opts)
	default:
		err = nelreport.Render(&buf, suite, format, opts)
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if *outF == "" {
		_, err := buf.WriteTo(stdout)
		return err
	}
	if err := atomicfile.WriteFile(*outF, buf.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	names := make([]string, len(suite))
	for i, b := range suite {
		names[i] = b.Benchmark
	}
	fmt.Fprintf(stderr, "nel: %s report of %s → %s\n", format, strings.Join(names, ", "), *outF)
	return nil
}
