package main

import (
	"bytes"
	"os"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/analysis/gate"
	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

var gateHelp = `One GO / NO-GO / INCONCLUSIVE decision across a suite of benchmarks, per a
policy in NeMo Evaluator's version: 1 format (YAML, JSON or CUE), or INVALID
when a gated benchmark did not measure its model:

  version: 1
  defaults: {tier: supporting, max_drop: 0.015, metric: mean_reward}
  benchmarks:
    gsm8k: {tier: critical, max_drop: 0.01}
    mmlu:  {max_relative_drop: 0.1, relative_guard_below: 0.5}

Per benchmark: PASS, BREACH, INSUFFICIENT_EVIDENCE or MISSING, from the
paired per-item values (results.parquet) and an interval on the damage
(baseline − candidate for higher_is_better); samples that failed for
infrastructure reasons are left out, never counted as wrong. Advisory
benchmarks never gate. Each benchmark also shows two one-sided tests against
max_drop, each with its hypotheses: the breach test (H0 damage ≤ max_drop)
and the within test (H0 damage ≥ max_drop); a p-value is not the probability
of damage. --holm adjusts the breach tests' p-values to control the
family-wise false NO-GO rate across the gated benchmarks. Every
INSUFFICIENT_EVIDENCE says how many more items or repeats would decide it.

BASE or CAND may be a NeMo Evaluator result directory (see nel compare):
its benchmarks pair item by item with a nel run's when their dataset
indexes check out, and are otherwise gated on the bundles' scores alone
(INSUFFICIENT_EVIDENCE for a gated benchmark), with a warning that says why.

A benchmark whose baseline or candidate has more infrastructure failures
than its max_error_rate is INVALID: no numbers, no PASS or BREACH. When it
is critical or supporting the verdict is INVALID, whatever the others say
(their breaches are listed); an INVALID advisory benchmark is a warning.` + "\n\n" + exitcode.Help("gate")

type gateOptions struct {
	opts       gate.Options
	policy     string
	format     string
	output     string
	noStrict   bool
	base, cand string
}

func newGateCmd(e *env) *cobra.Command {
	o := &gateOptions{opts: gate.DefaultOptions()}
	c := &cobra.Command{
		Use:   "gate BASE CAND --policy FILE [flags]",
		Short: "quality gate: GO / NO-GO / INCONCLUSIVE per a policy",
		Long:  gateHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 2 || o.policy == "" {
				return usageError(e, c, "gate: expected BASE CAND --policy FILE")
			}
			switch o.format {
			case compare.FormatText, compare.FormatMarkdown, compare.FormatJSON:
			default:
				return exitcode.Usagef("gate: -f %q: expected text, markdown or json", o.format)
			}
			o.base, o.cand = args[0], args[1]
			return o.run(e)
		},
	}
	f := c.Flags()
	f.StringVar(&o.policy, "policy", "", "gate policy `FILE` (.yaml, .yml, .json or .cue)")
	f.StringVarP(&o.format, "format", "f", compare.FormatText, "output `FORMAT`: text, markdown or json")
	f.StringVarP(&o.output, "output", "o", "", "also write the JSON report to `FILE`")
	f.BoolVar(&o.opts.Holm, "holm", false, "Holm-adjust the absolute rule's one-sided p-values across the gated benchmarks")
	f.BoolVar(&o.opts.AllowDifferentMethodology, "allow-different-methodology", false, "gate runs whose benchmark hashes differ")
	f.BoolVar(&o.noStrict, "no-strict", false, "exit 0 on NO-GO and INCONCLUSIVE")
	f.Bool("strict", true, "exit 1 on NO-GO and 2 on INCONCLUSIVE: the default (INVALID exits 3 either way)")
	return c
}

func (o *gateOptions) run(e *env) error {
	policy, err := compiler.LoadPolicyFile(o.policy)
	if err != nil {
		return err // compiler.Errors exit 2, I/O 1
	}
	base, err := compare.Resolve(o.base)
	if err != nil {
		return refusal("gate", err)
	}
	cand, err := compare.Resolve(o.cand)
	if err != nil {
		return refusal("gate", err)
	}
	pairs, baseOnly, candOnly := gate.Pairs(base, cand)
	o.opts.Evidence = o.format == compare.FormatJSON || o.output != ""
	rep, err := gate.Evaluate(policy, pairs, baseOnly, candOnly, o.opts)
	if err != nil {
		return refusal("gate", err)
	}
	rep.Baseline, rep.Candidate = o.base, o.cand
	var buf bytes.Buffer
	if err := gate.Render(&buf, o.format, rep); err != nil {
		return err
	}
	if _, err := e.stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if o.output != "" {
		var j bytes.Buffer
		if err := gate.Render(&j, compare.FormatJSON, rep); err != nil {
			return err
		}
		if err := os.WriteFile(o.output, j.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return exitcode.Verdict("gate", rep.Verdict, o.noStrict)
}
