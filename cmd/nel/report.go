package main

import (
	"fmt"
	"strings"

	reportpkg "github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/report/render"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/spf13/cobra"
)

const reportHelp = `Reports every benchmark of a run: DIR is a run's output directory (each
<benchmark>/ holding eval.json, or results.parquet from which it is computed),
one benchmark's directory, or an eval.json. DIR may also be a NeMo Evaluator
result directory (eval-*.json and results.jsonl per benchmark, or shard_*/):
its statistics are recomputed by nel from results.jsonl, and each benchmark's
notes say it is NeMo's (its recipe hash is NeMo's config_hash, so no model
card is made of it).

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
A simulated run is flagged above the table. --reference adds a column with
the value the model's own card publishes for each benchmark, and its source.

Exit status: 0 success, 1 failure (DIR missing, no benchmarks under it, an
unreadable bundle), 2 usage error.`

func newReportCmd(e *env) *cobra.Command {
	req := render.Request{Categories: map[string]string{}}
	c := &cobra.Command{
		Use: "report DIR [-f markdown|html|json|csv|latex] [-o FILE] [--title TEXT]\n" +
			"       nel report DIR -f model-card|model-card-html [-o FILE] [--store URL] [--run-id ID] [--category NAME=Category]... [--reference NAME|FILE]",
		Short: "a report over every benchmark of a run",
		Long:  reportHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(e, c, "report: expected exactly one run directory")
			}
			req.Dir = args[0]
			return render.Write(c.Context(), req, e.stdout, e.stderr)
		},
	}
	f := c.Flags()
	f.StringVarP(&req.Format, "format", "f", "", "format: markdown, html, json, csv, latex, model-card or model-card-html (default markdown, or from -o's extension)")
	f.StringVarP(&req.Output, "output", "o", "", "write the report to FILE (atomically) instead of stdout")
	f.StringVar(&req.Title, "title", "", "the report's title (default \"nel evaluation report\")")
	f.StringVar(&req.Store, "store", "", "model card: the recipe store the run was published to (default: "+rundir.Dir("DIR").Published()+"'s)")
	f.StringVar(&req.RunID, "run-id", "", "model card: the published run's id (default: "+rundir.Dir("DIR").Published()+"'s)")
	f.Var(categoryFlag(req.Categories), "category", "model card: `NAME=Category` sets a benchmark's category (repeatable)")
	f.StringVar(&req.Reference, "reference", "", "model card: put the values the model's own card publishes beside nel's: a table nel carries ("+strings.Join(reportpkg.References(), ", ")+") or a `FILE` in the same form")
	return c
}

// categoryFlag collects repeated --category NAME=Category flags.
type categoryFlag map[string]string

func (m categoryFlag) String() string { return "" }
func (m categoryFlag) Type() string   { return "NAME=Category" }

func (m categoryFlag) Set(v string) error {
	name, cat, ok := strings.Cut(v, "=")
	if name = strings.TrimSpace(name); !ok || name == "" || strings.TrimSpace(cat) == "" {
		return fmt.Errorf("want NAME=Category (e.g. gsm8k=Mathematics), got %q", v)
	}
	m[name] = strings.TrimSpace(cat)
	return nil
}
