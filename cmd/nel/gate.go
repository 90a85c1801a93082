package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/analysis/gate"
	"github.com/nel-eval/nel/compiler"
)

const gateHelp = `One GO / NO-GO / INCONCLUSIVE decision across a suite of benchmarks, per a
policy in NeMo Evaluator's version: 1 format (YAML, JSON or CUE), or INVALID
when a gated benchmark did not measure its model:

  version: 1
  defaults: {tier: supporting, max_drop: 0.015, metric: mean_reward}
  benchmarks:
    gsm8k: {tier: critical, max_drop: 0.01}
    mmlu:  {max_relative_drop: 0.1, relative_guard_below: 0.5}

Per benchmark: PASS, BREACH, INSUFFICIENT_EVIDENCE or MISSING, from the
paired per-item values (results.parquet) and an interval on the damage;
samples that failed for infrastructure reasons are left out, never counted
as wrong. Advisory benchmarks never gate. --holm controls the family-wise
false NO-GO rate across the gated benchmarks. Every INSUFFICIENT_EVIDENCE
says how many more items or repeats would decide it.

A benchmark whose baseline or candidate has more infrastructure failures
than its max_error_rate is INVALID: no numbers, no PASS or BREACH. When it
is critical or supporting the verdict is INVALID, whatever the others say
(their breaches are listed); an INVALID advisory benchmark is a warning.

Exit status: GO 0, NO-GO 1, INCONCLUSIVE 2 (--no-strict: 0), INVALID 3
(also with --no-strict: INVALID is no verdict on the candidate but a failed
measurement); 2 for an invalid policy (file:line:col: field: message) or
refused runs; 1 for I/O.`

func gateExit(v string) int {
	switch v {
	case gate.Go:
		return 0
	case gate.NoGo:
		return 1
	case gate.Invalid:
		return 3
	}
	return 2
}

func cmdGate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gate", "BASE CAND --policy FILE [flags]", gateHelp, stderr)
	opts := gate.DefaultOptions()
	policyPath := fs.String("policy", "", "gate policy `FILE` (.yaml, .yml, .json or .cue)")
	format := fs.String("f", compare.FormatText, "output `FORMAT`: text, markdown or json")
	out := fs.String("o", "", "also write the JSON report to `FILE`")
	fs.BoolVar(&opts.Holm, "holm", false, "Holm-adjust the absolute rule's one-sided p-values across the gated benchmarks")
	fs.BoolVar(&opts.AllowDifferentMethodology, "allow-different-methodology", false, "gate runs whose benchmark hashes differ")
	noStrict := fs.Bool("no-strict", false, "exit 0 on NO-GO and INCONCLUSIVE")
	fs.Bool("strict", true, "exit 1 on NO-GO and 2 on INCONCLUSIVE: the default (INVALID exits 3 either way)")
	files, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 2 || *policyPath == "" {
		fs.Usage()
		return &exitError{2, fmt.Errorf("gate: expected BASE CAND --policy FILE")}
	}
	switch *format {
	case compare.FormatText, compare.FormatMarkdown, compare.FormatJSON:
	default:
		return &exitError{2, fmt.Errorf("gate: -f %q: expected text, markdown or json", *format)}
	}
	policy, err := compiler.LoadPolicyFile(*policyPath)
	if err != nil {
		return err // compiler.Errors exit 2, I/O 1
	}
	base, err := compare.Resolve(files[0])
	if err != nil {
		return refusal("gate", err)
	}
	cand, err := compare.Resolve(files[1])
	if err != nil {
		return refusal("gate", err)
	}
	var baseOnly, candOnly []string
	inCand := map[string]bool{}
	for _, r := range cand.Runs {
		inCand[r.Name] = true
	}
	inBase := map[string]bool{}
	for _, r := range base.Runs {
		inBase[r.Name] = true
		if !inCand[r.Name] {
			baseOnly = append(baseOnly, r.Name)
		}
	}
	for _, r := range cand.Runs {
		if !inBase[r.Name] {
			candOnly = append(candOnly, r.Name)
		}
	}
	var pairs []compare.Pair
	if !base.Multi && !cand.Multi {
		pairs, _ = compare.Match(base, cand)
		baseOnly, candOnly = nil, nil
	} else {
		for _, b := range base.Runs {
			for _, c := range cand.Runs {
				if b.Name == c.Name {
					pairs = append(pairs, compare.Pair{Name: b.Name, Base: b, Candidate: c})
				}
			}
		}
	}
	opts.Evidence = *format == compare.FormatJSON || *out != ""
	rep, err := gate.Evaluate(policy, pairs, baseOnly, candOnly, opts)
	if err != nil {
		return refusal("gate", err)
	}
	rep.Baseline, rep.Candidate = files[0], files[1]
	var buf bytes.Buffer
	if err := gate.Render(&buf, *format, rep); err != nil {
		return err
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if *out != "" {
		var j bytes.Buffer
		if err := gate.Render(&j, compare.FormatJSON, rep); err != nil {
			return err
		}
		if err := os.WriteFile(*out, j.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if code := gateExit(rep.Verdict); code != 0 && (!*noStrict || rep.Verdict == gate.Invalid) {
		if rep.Verdict == gate.Invalid {
			return &exitError{code, fmt.Errorf("gate: verdict INVALID (exit %d): too many infrastructure failures to decide", code)}
		}
		return &exitError{code, fmt.Errorf("gate: verdict %s (exit %d; --no-strict exits 0)", rep.Verdict, code)}
	}
	return nil
}
