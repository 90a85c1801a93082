package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/metrics"
	nelreport "github.com/nel-eval/nel/runtime/report"
	"github.com/nel-eval/nel/runtime/report/htmlreport"
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

Without -o the report goes to stdout; with -o it is written atomically.

Exit status: 0 success, 1 failure (DIR missing, no benchmarks under it, an
unreadable bundle), 2 usage error.`

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlags("report", "DIR [-f markdown|html|json|csv|latex] [-o FILE] [--title TEXT]", reportHelp, stderr)
	formatF := fl.String("f", "", "format: markdown, html, json, csv or latex (default markdown, or from -o's extension)")
	outF := fl.String("o", "", "write the report to FILE (atomically) instead of stdout")
	titleF := fl.String("title", "", "the report's title (default \"nel evaluation report\")")
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

	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("report: %s does not exist", dir)
		}
		return fmt.Errorf("report: %w", err)
	}
	suite, err := metrics.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// Render fully before writing anything: a failure leaves no partial
	// report on stdout or at -o.
	var buf bytes.Buffer
	opts := nelreport.Options{Title: *titleF, Source: dir}
	if format == nelreport.HTML {
		err = htmlreport.Render(&buf, suite, opts)
	} else {
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
