package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nel-eval/nel/analysis/compare"
)

const compareHelp = `Pairs two runs of the same benchmark methodology item by item (by item_id)
and says whether the candidate regressed: both scores, the paired delta with
its interval, the correlation between the runs, flips with exemplars, an
exact one-sided test, the minimum detectable effect, and a verdict.

BASE and CAND are each an eval.json, a benchmark directory (holding eval.json
and/or results.parquet) or a run directory (<out>/<benchmark>/…: benchmarks
are then matched by name and the worst verdict wins). Samples that failed
for infrastructure reasons are left out, never counted as wrong.

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
--allow-different-methodology.

Exit status: PASS 0, BLOCK 1, WARN 2, INCONCLUSIVE 2 (--no-strict: 0),
INVALID 3 (also with --no-strict: a failed measurement, not a verdict);
2 also when the comparison is refused (the message starts "compare refused").`

// verdictExit maps a compare verdict to the exit status (strict).
func verdictExit(v string) int {
	switch v {
	case compare.Pass:
		return 0
	case compare.Block:
		return 1
	case compare.Invalid:
		return 3
	}
	return 2
}

func cmdCompare(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", "BASE CAND [flags]", compareHelp, stderr)
	opts := compare.DefaultOptions()
	format := fs.String("f", compare.FormatText, "output `FORMAT`: text, markdown or json")
	out := fs.String("o", "", "also write the JSON report to `FILE`")
	fs.Float64Var(&opts.MaxDrop, "max-drop", opts.MaxDrop, "largest tolerated drop of the headline, absolute, in reward units")
	fs.Float64Var(&opts.Alpha, "alpha", opts.Alpha, "significance level of the one-sided exact test")
	fs.Float64Var(&opts.CorrectAbove, "correct-above", opts.CorrectAbove, "an item counts as correct (for flips) when its mean reward is above this")
	fs.IntVar(&opts.Exemplars, "exemplars", opts.Exemplars, "flips of each kind to show")
	fs.StringVar(&opts.Test, "test", opts.Test, "exact test: auto, mcnemar, sign or permutation")
	fs.IntVar(&opts.Resamples, "resamples", opts.Resamples, "sign flips of the permutation test")
	fs.Uint64Var(&opts.Seed, "seed", opts.Seed, "seed of the permutation test")
	fs.Float64Var(&opts.MinCoverage, "min-coverage", opts.MinCoverage, "warn when paired items are fewer than this share of the larger run's items")
	allow := fs.Bool("allow-different-methodology", false, "compare runs whose benchmark hashes differ")
	noStrict := fs.Bool("no-strict", false, "exit 0 on BLOCK, WARN and INCONCLUSIVE")
	fs.Bool("strict", true, "exit non-zero on BLOCK (1), WARN or INCONCLUSIVE (2): the default (INVALID exits 3 either way)")
	files, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 2 {
		fs.Usage()
		return &exitError{2, fmt.Errorf("compare: expected BASE and CAND, got %d argument(s)", len(files))}
	}
	if err := checkCompareFlags(*format, opts); err != nil {
		return &exitError{2, fmt.Errorf("compare: %w", err)}
	}

	reports, multi, verdict, warnings, err := runCompare(files[0], files[1], opts, *allow)
	if err != nil {
		return refusal("compare", err)
	}
	var buf bytes.Buffer
	if err := compare.Render(&buf, *format, reports, multi, verdict, warnings); err != nil {
		return err
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if *out != "" {
		var j bytes.Buffer
		if err := compare.Render(&j, compare.FormatJSON, reports, multi, verdict, warnings); err != nil {
			return err
		}
		if err := os.WriteFile(*out, j.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if code := verdictExit(verdict); code != 0 && (!*noStrict || verdict == compare.Invalid) {
		if verdict == compare.Invalid {
			return &exitError{code, fmt.Errorf("compare: verdict INVALID (exit %d): too many infrastructure failures to decide", code)}
		}
		return &exitError{code, fmt.Errorf("compare: verdict %s (exit %d; --no-strict exits 0)", verdict, code)}
	}
	return nil
}

func checkCompareFlags(format string, opts compare.Options) error {
	switch format {
	case compare.FormatText, compare.FormatMarkdown, compare.FormatJSON:
	default:
		return fmt.Errorf("-f %q: expected text, markdown or json", format)
	}
	switch opts.Test {
	case compare.TestAuto, compare.TestMcNemar, compare.TestSign, compare.TestPermutation:
	default:
		return fmt.Errorf("--test %q: expected auto, mcnemar, sign or permutation", opts.Test)
	}
	switch {
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

// refusal turns a refused input into exit status 2 with a message that
// cannot be taken for a verdict; other errors (I/O) stay exit 1.
func refusal(cmd string, err error) error {
	var ue *compare.UsageError
	if errors.As(err, &ue) {
		return &exitError{2, fmt.Errorf("%s refused: %s", cmd, ue.Msg)}
	}
	return err
}

// runCompare resolves both sides, checks methodologies and compares every
// matched benchmark.
func runCompare(basePath, candPath string, opts compare.Options, allow bool) (reports []*compare.Report, multi bool, verdict string, warnings []string, err error) {
	base, err := compare.Resolve(basePath)
	if err != nil {
		return nil, false, "", nil, err
	}
	cand, err := compare.Resolve(candPath)
	if err != nil {
		return nil, false, "", nil, err
	}
	pairs, warnings := compare.Match(base, cand)
	if len(pairs) == 0 {
		return nil, false, "", nil, &compare.UsageError{Msg: fmt.Sprintf("no benchmark of %s is in %s\n  %s", basePath, candPath, strings.Join(warnings, "\n  "))}
	}
	var refused []string
	for _, p := range pairs {
		if m := compare.CheckMethodology(p.Base, p.Candidate); !m.Same && !allow {
			refused = append(refused, m.Explain(p.Name))
		}
	}
	if len(refused) > 0 {
		return nil, false, "", nil, &compare.UsageError{Msg: "the runs do not measure the same thing:\n" + strings.Join(refused, "\n") +
			"\n(different models are fine; a different benchmark methodology is not: pass --allow-different-methodology to compare anyway)"}
	}
	verdict = compare.Pass
	for _, p := range pairs {
		r, err := compare.Compare(p, opts)
		if err != nil {
			return nil, false, "", nil, err
		}
		if !r.Methodology.Same {
			r.Methodology.Allowed = true
			r.Warnings = append(r.Warnings, "compared despite different methodologies (--allow-different-methodology)")
		}
		reports = append(reports, r)
		if compare.Severity(r.Verdict) > compare.Severity(verdict) {
			verdict = r.Verdict
		}
	}
	return reports, base.Multi || cand.Multi, verdict, warnings, nil
}
