package compare

import (
	"fmt"
	"math"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/stats"
)

// unpaired compares the two runs' headlines when their items cannot be
// matched (Pair.Unpaired): each side's mean with its own interval, the
// difference with the interval of independent samples built from them
// (unpairedCI). It ignores the correlation between the runs,
// which pairing would use, so its interval is wider than a paired one
// would be: it decides only when the interval clears max_drop, and there
// are no flips, no exact test and no MDE.
func unpaired(r *Report, p Pair, opts Options) (*Report, error) {
	b, c := p.Base.Bundle, p.Candidate.Bundle
	if b == nil || c == nil || b.Headline.Value == nil || c.Headline.Value == nil {
		return nil, refuse("%s: cannot pair the items (%s), and a side has no headline to compare unpaired", p.Name, p.Unpaired)
	}
	if b.Headline.Metric != c.Headline.Metric {
		return nil, refuse("%s: cannot pair the items (%s), and the headlines are different metrics (%s vs %s)", p.Name, p.Unpaired, b.Headline.Metric, c.Headline.Metric)
	}
	r.Pairing.Method = "NOT PAIRED: " + p.Unpaired
	r.Pairing.OnlyInBaseline, r.Pairing.OnlyInCandidate = r.Baseline.Items, r.Candidate.Items
	r.addNotes(p)
	r.Warnings = append(r.Warnings, "UNPAIRED comparison of the two headlines: the items could not be matched, so there are no flips and no exact test, and the interval (independent samples) is wider than a paired one")
	md := MetricDelta{Metric: b.Headline.Metric, N: min(b.Headline.N, c.Headline.N), Baseline: *b.Headline.Value,
		Candidate: *c.Headline.Value, CorrelationNote: "undefined: the runs are not paired"}
	md.Delta = md.Candidate - md.Baseline
	if md.Baseline != 0 {
		rel := md.Delta / md.Baseline
		md.RelativeChange = &rel
	}
	md.CI = unpairedCI(md, b.Headline.CLT, c.Headline.CLT, opts.Level)
	r.Metrics = []MetricDelta{md}
	r.Verdict, r.VerdictReasons = decideUnpaired(md, opts.MaxDrop)
	return r, nil
}

// decideUnpaired: BLOCK when the whole interval lies below −max_drop (the
// candidate is worse by more than max_drop even unpaired), PASS when it
// lies above (a drop beyond max_drop is ruled out), INCONCLUSIVE
// otherwise or without an interval.
func decideUnpaired(md MetricDelta, maxDrop float64) (string, []string) {
	head := fmt.Sprintf("Unpaired: %s %.4f → %.4f (delta %+.4f).", md.Metric, md.Baseline, md.Candidate, md.Delta)
	if md.CI == nil {
		return Inconclusive, []string{head, "No interval: a side has no standard error (fewer than two items); pair the runs to decide."}
	}
	ci := fmt.Sprintf("%.0f%% interval on the delta [%+.4f, %+.4f] (independent samples)", 100*md.CI.Level, md.CI.Lo, md.CI.Hi)
	switch {
	case md.CI.Hi < -maxDrop:
		return Block, []string{head, fmt.Sprintf("The %s lies below −max-drop %g: the candidate is worse by more than max-drop.", ci, maxDrop)}
	case md.CI.Lo >= -maxDrop:
		return Pass, []string{head, fmt.Sprintf("The %s lies above −max-drop %g: a drop beyond max-drop is ruled out.", ci, maxDrop)}
	}
	return Inconclusive, []string{head, fmt.Sprintf("The %s straddles −max-drop %g: an unpaired comparison cannot decide; runs whose items pair would.", ci, maxDrop)}
}

// unpairedCI is the interval on the difference of two independent
// headlines. When both sides' intervals are at the comparison's level it
// is built from them by MOVER (Newcombe 1998, method 10, for Wilson
// intervals; Zou & Donner 2008): the candidate's distance to its own
// bound and the baseline's to the opposite one, combined in quadrature.
// An all-right side (standard error 0, its interval [α^{1/n}, 1] or
// Jeffreys' limits) then still carries its uncertainty, which normal errors combined would
// drop. Otherwise the two standard errors are combined with z. Nil
// without both intervals.
func unpairedCI(md MetricDelta, b, c *metrics.Interval, level float64) *DeltaCI {
	if b == nil || c == nil {
		return nil
	}
	se := math.Hypot(b.SE, c.SE)
	if b.Level == level && c.Level == level {
		bl, bh, bj := moverLimits(md.Baseline, b, level)
		cl, ch, cj := moverLimits(md.Candidate, c, level)
		lo := md.Delta - math.Hypot(md.Candidate-cl, bh-md.Baseline)
		hi := md.Delta + math.Hypot(ch-md.Candidate, md.Baseline-bl)
		method := DeltaUnpairedMOVER
		if bj && cj {
			method = DeltaUnpairedMOVERJeffreys
		}
		return &DeltaCI{Method: method, Level: level, Lo: lo, Hi: hi, SE: se}
	}
	z := stats.NormalQuantile(1 - (1-level)/2)
	return &DeltaCI{Method: DeltaUnpairedNormal, Level: level, Lo: md.Delta - z*se, Hi: md.Delta + z*se, SE: se}
}

// moverLimits are the limits MOVER combines for one side: for a
// proportion over independent items or repeats (a headline whose method's
// MOVER is metrics.MOVERJeffreys, which states its effective sample size)
// Jeffreys' limits on that size, df-adjusted as Korn & Graubard
// (Newcombe 2011's MOVER-J; Zou & Donner 2008); jeffreys reports that.
// MOVER on Brown, Cai & DasGupta's modified Wilson limits (the "wilson"
// of older bundles) covered 99.7% at 30 items and 0.97, where their exact
// Poisson bounds near the end are far out. Any other
// interval (clustered, t) is taken as the bundle states it.
func moverLimits(value float64, iv *metrics.Interval, level float64) (lo, hi float64, jeffreys bool) {
	if iv.Method.MOVER() != metrics.MOVERJeffreys || !(iv.EffectiveN > 0) || value < 0 || value > 1 {
		return iv.Lo, iv.Hi, false
	}
	n := iv.EffectiveN
	if iv.DF > 0 {
		r := stats.NormalQuantile((1+level)/2) / stats.TQuantile((1+level)/2, float64(iv.DF))
		n *= r * r
	}
	lo, hi = stats.Jeffreys(value, n, level)
	return lo, hi, true
}
