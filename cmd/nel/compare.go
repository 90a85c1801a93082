package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

var compareHelp = `Pairs two runs of the same benchmark methodology item by item (by item_id)
and says whether the candidate regressed: both scores, the paired delta with
its interval, the correlation between the runs, flips with exemplars, an
exact one-sided test, the minimum detectable effect, and a verdict.

BASE and CAND are each an eval.json, a benchmark directory (holding eval.json
and/or results.parquet) or a run directory (<out>/<benchmark>/…: benchmarks
are then matched by name and the worst verdict wins). Samples that failed
for infrastructure reasons are left out, never counted as wrong.

Either side may be a NeMo Evaluator result directory (eval-*.json and
results.jsonl per benchmark, a run folder of them, or its shard_*/ folders),
or one of its eval-*.json: it is read as a run, statistics recomputed by nel,
and marked as NeMo's in every output (its recipe hash is NeMo's config_hash,
"nemo-config:sha256:…"). NeMo knows items by dataset index: its problem_idx
is paired with the nel run's item_idx only when every shared item's expected
answer agrees and such agreement would be unlikely by chance. Otherwise
nothing is paired, the output says why, and the two headlines are compared
UNPAIRED: the interval on the delta combines the runs' standard errors as
independent samples; PASS when it lies above −max-drop, BLOCK when below,
else INCONCLUSIVE (no flips, no exact test).

Verdict (drop = −mean paired delta, in reward units):
  BLOCK         significant (p < --alpha) and drop > --max-drop
  WARN          significant but drop ≤ --max-drop; or not significant while
                the point estimate already drops more than --max-drop
  INCONCLUSIVE  not significant and underpowered (MDE > --max-drop)
  PASS          otherwise
  INVALID       the baseline or the candidate has more infrastructure
                failures than its max_error_rate: it did not measure its
                model, and nothing is compared (worse than any verdict)
Runs whose benchmark hashes differ are refused unless
--allow-different-methodology.` + "\n\n" + exitcode.Help("compare")

type compareOptions struct {
	opts       compare.Options
	format     string
	output     string
	allow      bool
	noStrict   bool
	base, cand string
}

func newCompareCmd(e *env) *cobra.Command {
	o := &compareOptions{opts: compare.DefaultOptions()}
	c := &cobra.Command{
		Use:   "compare BASE CAND [flags]",
		Short: "paired comparison of two runs and a PASS / WARN / BLOCK / INCONCLUSIVE verdict",
		Long:  compareHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError(e, c, "compare: expected BASE and CAND, got %d argument(s)", len(args))
			}
			o.base, o.cand = args[0], args[1]
			if err := o.validate(); err != nil {
				return exitcode.New(exitcode.Usage, fmt.Errorf("compare: %w", err))
			}
			return o.run(e)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.format, "format", "f", compare.FormatText, "output `FORMAT`: text, markdown or json")
	f.StringVarP(&o.output, "output", "o", "", "also write the JSON report to `FILE`")
	f.Float64Var(&o.opts.MaxDrop, "max-drop", o.opts.MaxDrop, "largest tolerated drop of the headline, absolute, in reward units")
	f.Float64Var(&o.opts.Alpha, "alpha", o.opts.Alpha, "significance level of the one-sided exact test")
	f.Float64Var(&o.opts.CorrectAbove, "correct-above", o.opts.CorrectAbove, "an item counts as correct (for flips) when its mean reward is above this")
	f.IntVar(&o.opts.Exemplars, "exemplars", o.opts.Exemplars, "flips of each kind to show")
	f.StringVar(&o.opts.Test, "test", o.opts.Test, "exact test: auto, mcnemar, sign or permutation")
	f.IntVar(&o.opts.Resamples, "resamples", o.opts.Resamples, "sign flips of the permutation test")
	f.Uint64Var(&o.opts.Seed, "seed", o.opts.Seed, "seed of the permutation test")
	f.Float64Var(&o.opts.MinCoverage, "min-coverage", o.opts.MinCoverage, "warn when paired items are fewer than this share of the larger run's items")
	f.BoolVar(&o.allow, "allow-different-methodology", false, "compare runs whose benchmark hashes differ")
	f.BoolVar(&o.noStrict, "no-strict", false, "exit 0 on BLOCK, WARN and INCONCLUSIVE")
	f.Bool("strict", true, "exit non-zero on BLOCK (1), WARN or INCONCLUSIVE (2): the default (INVALID exits 3 either way)")
	return c
}

func (o *compareOptions) validate() error {
	switch o.format {
	case compare.FormatText, compare.FormatMarkdown, compare.FormatJSON:
	default:
		return fmt.Errorf("-f %q: expected text, markdown or json", o.format)
	}
	switch o.opts.Test {
	case compare.TestAuto, compare.TestMcNemar, compare.TestSign, compare.TestPermutation:
	default:
		return fmt.Errorf("--test %q: expected auto, mcnemar, sign or permutation", o.opts.Test)
	}
	switch opts := o.opts; {
	case opts.MaxDrop < 0:
		return fmt.Errorf("--max-drop %g: expected ≥ 0", opts.MaxDrop)
	case opts.Alpha <= 0 || opts.Alpha >= 1:
		return fmt.Errorf("--alpha %g: expected between 0 and 1", opts.Alpha)
	case opts.Resamples < 1:
		return fmt.Errorf("--resamples %d: expected ≥ 1", opts.Resamples)
	case opts.Exemplars < 0:
		return fmt.Errorf("--exemplars %d: expected ≥ 0", opts.Exemplars)
	case opts.MinCoverage < 0 || opts.MinCoverage > 1:
		return fmt.Errorf("--min-coverage %g: expected between 0 and 1", opts.MinCoverage)
	}
	return nil
}

func (o *compareOptions) run(e *env) error {
	res, err := compare.Runs(o.base, o.cand, o.opts, o.allow)
	if err != nil {
		return refusal("compare", err)
	}
	var buf bytes.Buffer
	if err := res.Render(&buf, o.format); err != nil {
		return err
	}
	if _, err := e.stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if o.output != "" {
		var j bytes.Buffer
		if err := res.Render(&j, compare.FormatJSON); err != nil {
			return err
		}
		if err := os.WriteFile(o.output, j.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return exitcode.Verdict("compare", res.Verdict, o.noStrict)
}

// refusal turns a refused input into exit status 2 with a message that
// cannot be taken for a verdict; other errors (I/O) stay exit 1.
func refusal(cmd string, err error) error {
	var ue *compare.UsageError
	if errors.As(err, &ue) {
		return exitcode.Usagef("%s refused: %s", cmd, ue.Msg)
	}
	return err
}
