package compare

import (
	"fmt"
	"io"
	"strings"
)

// Result is the comparison of two runs, benchmark by benchmark (nel
// compare).
type Result struct {
	Reports  []*Report
	Multi    bool   // either side is a run directory of several benchmarks
	Verdict  string // the worst of the reports' verdicts
	Warnings []string
}

// Runs resolves both sides (each an eval.json, a benchmark directory or a
// run directory), pairs their benchmarks, refuses pairs whose
// methodologies differ unless allowDifferent, and compares each pair. A
// refusal is a *UsageError.
func Runs(basePath, candPath string, opts Options, allowDifferent bool) (*Result, error) {
	base, err := Resolve(basePath)
	if err != nil {
		return nil, err
	}
	cand, err := Resolve(candPath)
	if err != nil {
		return nil, err
	}
	pairs, warnings := Match(base, cand)
	if len(pairs) == 0 {
		return nil, &UsageError{Msg: fmt.Sprintf("no benchmark of %s is in %s\n  %s", basePath, candPath, strings.Join(warnings, "\n  "))}
	}
	pairs = AlignSources(pairs)
	var refused []string
	for _, p := range pairs {
		if m := CheckMethodology(p.Base, p.Candidate); !m.Same && !allowDifferent {
			refused = append(refused, m.Explain(p.Name))
		}
	}
	if len(refused) > 0 {
		return nil, &UsageError{Msg: "the runs do not measure the same thing:\n" + strings.Join(refused, "\n") +
			"\n(different models are fine; a different benchmark methodology is not: pass --allow-different-methodology to compare anyway)"}
	}
	res := &Result{Multi: base.Multi || cand.Multi, Verdict: Pass, Warnings: warnings}
	for _, p := range pairs {
		r, err := Compare(p, opts)
		if err != nil {
			return nil, err
		}
		if !r.Methodology.Same {
			r.Methodology.Allowed = true
			r.Warnings = append(r.Warnings, "compared despite different methodologies (--allow-different-methodology)")
		}
		res.Reports = append(res.Reports, r)
		if Severity(r.Verdict) > Severity(res.Verdict) {
			res.Verdict = r.Verdict
		}
	}
	return res, nil
}

// Render writes the result in format (text, markdown or json).
func (r *Result) Render(w io.Writer, format string) error {
	return Render(w, format, r.Reports, r.Multi, r.Verdict, r.Warnings)
}
