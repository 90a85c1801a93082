// Package gate is nel gate: one GO / NO-GO / INCONCLUSIVE decision across a
// suite of benchmarks, from a baseline run, a candidate run and a policy in
// NeMo Evaluator's `version: 1` format. Per benchmark it pairs the runs'
// per-item values (compare's pairing), puts an interval on the paired
// damage and applies the policy's thresholds exactly as NeMo does; beyond
// NeMo it can control the family-wise error rate across the gated
// benchmarks (Holm) and says, for every undecided benchmark, how many more
// items or repeats would decide it. It decides nothing on a benchmark that
// did not measure its model (too many infrastructure failures): such a
// benchmark is INVALID, and so is the verdict when it is gated.
package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/stats"
)

// ReportVersion is the version of the JSON report.
const ReportVersion = 1

// Verdicts. INVALID is no decision: a gated benchmark (critical or
// supporting) of the baseline or the candidate has more infrastructure
// failures than its max_error_rate, so it did not measure its model, and
// the gate says neither GO nor NO-GO (DESIGN §6.7).
const (
	Go           = "GO"
	NoGo         = "NO-GO"
	Inconclusive = "INCONCLUSIVE"
	Invalid      = "INVALID"
)

// Statuses of one benchmark. INVALID: either run of it is INVALID; it
// gets no numbers and no status of the policy's.
const (
	StatusPass         = "PASS"
	StatusBreach       = "BREACH"
	StatusInsufficient = "INSUFFICIENT_EVIDENCE"
	StatusMissing      = "MISSING"
	StatusInvalid      = "INVALID"
)

// MinPaired is NeMo's minimum of paired items for a paired decision.
const MinPaired = 10

// Options configure a gate.
type Options struct {
	// Holm controls the family-wise error rate across the gated
	// benchmarks: an absolute BREACH needs its Holm-adjusted one-sided p
	// ("damage > max_drop") below (1 − Level)/2.
	Holm bool
	// Level of the intervals on the damage (0.95).
	Level float64
	// AllowDifferentMethodology gates runs whose benchmark hashes differ.
	AllowDifferentMethodology bool
	// Evidence attaches compare's report to each benchmark (as NeMo's
	// regression_report); it does not decide anything.
	Evidence       bool
	CompareOptions compare.Options
}

// DefaultOptions are the CLI's defaults.
func DefaultOptions() Options {
	return Options{Level: 0.95, CompareOptions: compare.DefaultOptions()}
}

// Report is the gate's result: the JSON `nel gate -f json` prints, close to
// NeMo's (report_version 1).
type Report struct {
	ReportVersion  int       `json:"report_version"`
	Verdict        string    `json:"verdict"`
	VerdictReasons []string  `json:"verdict_reasons"`
	Policy         string    `json:"policy"`
	Baseline       string    `json:"baseline"`
	Candidate      string    `json:"candidate"`
	Benchmarks     []*Result `json:"benchmarks"`
	// Missing are the required benchmarks absent from either run.
	Missing  []string `json:"missing"`
	Warnings []string `json:"warnings"`
	// Holm is set when --holm adjusted the absolute rule's p-values.
	Holm *HolmInfo `json:"holm,omitempty"`
	// Level is the two-sided level of the intervals on the damage; each
	// one-sided test decides at p < (1 − Level)/2, as the interval's end
	// does.
	Level float64 `json:"level,omitempty"`
}

// HolmInfo describes the family the Holm adjustment ran over.
type HolmInfo struct {
	Family []string `json:"family"`
	// Level is the one-sided level an adjusted p must be under: (1 −
	// level)/2, which matches a two-sided interval at level.
	Level float64 `json:"level"`
}

// Result is one benchmark's gate result (NeMo's BenchmarkGateResult, plus
// the interval's method, p-values and what would decide it).
type Result struct {
	Benchmark                string   `json:"benchmark"`
	Tier                     string   `json:"tier"`
	Status                   string   `json:"status"`
	Metric                   string   `json:"metric"`
	BaselineScore            *float64 `json:"baseline_score"`
	CandidateScore           *float64 `json:"candidate_score"`
	Delta                    *float64 `json:"delta"`
	RelativeDropPct          *float64 `json:"relative_drop_pct"`
	DeltaCILower             *float64 `json:"delta_ci_lower"`
	DeltaCIUpper             *float64 `json:"delta_ci_upper"`
	CIMethod                 string   `json:"ci_method,omitempty"`
	NPaired                  int      `json:"n_paired"`
	MaxDropThreshold         float64  `json:"max_drop_threshold"`
	MaxRelativeDropThreshold *float64 `json:"max_relative_drop_threshold"`
	RelativeGuardBelow       *float64 `json:"relative_guard_below,omitempty"`
	Direction                string   `json:"direction"`
	AbsoluteBreached         bool     `json:"absolute_breached"`
	RelativeBreached         bool     `json:"relative_breached"`
	Reasons                  []string `json:"reasons"`
	// PValue is the p-value of the breach test: one-sided, H0 damage ≤
	// max_drop against H1 damage > max_drop, about the interval's centre
	// with its standard error (normal for Bonett–Price's adjusted Wald,
	// else Student t with its df: n−1 items, or G−1 clusters), so it is
	// below (1 − level)/2 exactly when the interval clears max_drop; a
	// small p is evidence of a breach, and p = 1
	// says nothing for a pass. PHolm is its Holm-adjusted value (--holm).
	// PValueTest names the test and its hypotheses in words.
	PValue     *float64 `json:"p_value,omitempty"`
	PHolm      *float64 `json:"p_holm,omitempty"`
	PValueTest string   `json:"p_value_test,omitempty"`
	// PWithin is the p-value of the within test: one-sided, H0 damage ≥
	// max_drop against H1 damage < max_drop; a small p is evidence that
	// the damage is within max_drop (what a PASS rests on).
	PWithin *float64 `json:"p_within,omitempty"`
	// Needed says what would decide an INSUFFICIENT_EVIDENCE.
	Needed           *Needed         `json:"needed,omitempty"`
	RegressionReport *compare.Report `json:"regression_report,omitempty"`

	// paired holds the paired analysis behind the interval, when any;
	// test names the test behind its p-values (testName).
	paired *pairedStats
	test   string
}

// Needed is what would decide an undecided benchmark, at the observed
// spread.
type Needed struct {
	// AdditionalItems more paired items, at the same repeats, would bring
	// the interval clear of max_drop (nil when it cannot be said).
	AdditionalItems *int `json:"additional_items,omitempty"`
	// Repeats per item (in all), at the same items, would; nil when
	// repeats cannot decide it or cannot be estimated.
	Repeats *int   `json:"repeats,omitempty"`
	Note    string `json:"note"`
}

type pairedStats struct {
	n       int
	deltas  []float64
	ci      *compare.DeltaCI
	repeats [][]float64 // per item, per repeat deltas (nil: not available)
	k       int         // repeats per item used
	h       float64     // the adjusted interval's pseudo-difference
}

// Gated counts for the verdict.
func (r *Result) Gated() bool { return r.Tier != Advisory }

// Evaluate gates the matched runs against the policy. baseOnly and
// candOnly are the benchmarks found on one side only. It refuses (a
// *compare.UsageError) when a pair's methodologies differ, unless allowed.
func Evaluate(p *Policy, pairs []compare.Pair, baseOnly, candOnly []string, opts Options) (*Report, error) {
	if opts.Level == 0 {
		opts.Level = 0.95
	}
	rep := &Report{ReportVersion: ReportVersion, Policy: p.Path, Missing: []string{}, Warnings: []string{}, Level: opts.Level}
	// A NeMo Evaluator side pairs by dataset index when that can be
	// checked; when not, its benchmark is gated on the bundles alone.
	pairs = compare.AlignSources(pairs)
	for _, pr := range pairs {
		for _, n := range pr.Notes {
			rep.Warnings = append(rep.Warnings, pr.Name+": "+n)
		}
	}
	for _, pr := range pairs {
		m := compare.CheckMethodology(pr.Base, pr.Candidate)
		if !m.Same && !opts.AllowDifferentMethodology {
			return nil, &compare.UsageError{Msg: "refusing to gate: " + m.Explain(pr.Name) + "\n(pass --allow-different-methodology to gate anyway)"}
		}
		if !m.Same {
			rep.Warnings = append(rep.Warnings, "gated despite different methodologies: "+m.Explain(pr.Name))
		} else if m.Note != "" {
			rep.Warnings = append(rep.Warnings, pr.Name+": "+m.Note)
		}
	}

	have := map[string]bool{}
	for _, pr := range pairs {
		have[pr.Name] = true
		res := evaluate(p.Resolve(pr.Name), pr, opts)
		rep.Benchmarks = append(rep.Benchmarks, res)
	}
	inBase, inCand := setOf(baseOnly), setOf(candOnly)
	for _, name := range p.Required() {
		if have[name] {
			continue
		}
		r := p.Resolve(name)
		reason := "Required benchmark not found in either run"
		switch {
		case inBase[name]:
			reason = "Required benchmark found in the baseline only, not in the candidate"
		case inCand[name]:
			reason = "Required benchmark found in the candidate only, not in the baseline"
		}
		rep.Missing = append(rep.Missing, name)
		rep.Benchmarks = append(rep.Benchmarks, &Result{Benchmark: name, Tier: r.Tier, Status: StatusMissing, Metric: r.Metric,
			MaxDropThreshold: r.MaxDrop, MaxRelativeDropThreshold: r.MaxRelativeDrop, RelativeGuardBelow: r.RelativeGuardBelow,
			Direction: r.Direction, Reasons: []string{reason}})
	}
	for _, name := range baseOnly {
		if !p.Resolve(name).Listed || !p.Resolve(name).Gated() {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("benchmark %s is in the baseline only: not gated", name))
		}
	}
	for _, name := range candOnly {
		if !p.Resolve(name).Listed || !p.Resolve(name).Gated() {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("benchmark %s is in the candidate only: not gated", name))
		}
	}
	slices.SortStableFunc(rep.Benchmarks, func(a, b *Result) int { return strings.Compare(a.Benchmark, b.Benchmark) })

	// The absolute rule's p-values, Holm-adjusted over the gated family.
	if opts.Holm {
		var fam []*Result
		var ps []float64
		for _, r := range rep.Benchmarks {
			if r.Gated() && r.PValue != nil {
				fam = append(fam, r)
				ps = append(ps, *r.PValue)
			}
		}
		adj := stats.Holm(ps)
		rep.Holm = &HolmInfo{Level: math.Round((1-opts.Level)/2*1e12) / 1e12, Family: []string{}}
		for i, r := range fam {
			a := adj[i]
			r.PHolm = &a
			rep.Holm.Family = append(rep.Holm.Family, r.Benchmark)
		}
	}
	for _, r := range rep.Benchmarks {
		if r.Status == StatusMissing || r.Status == StatusInvalid {
			continue
		}
		applyThresholds(r, p.Resolve(r.Benchmark), opts)
		if r.Status == StatusInsufficient && r.paired != nil {
			r.Needed = needed(r, p.Resolve(r.Benchmark), opts)
		}
	}
	rep.Verdict, rep.VerdictReasons = verdict(rep.Benchmarks)
	for _, r := range rep.Benchmarks {
		if r.Status == StatusInvalid && !r.Gated() {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("advisory benchmark %s is INVALID (it does not gate): %s", r.Benchmark, strings.Join(r.Reasons, "; ")))
		}
	}
	return rep, nil
}

func setOf(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// pickMetric is the metric a benchmark is gated on: the policy's, else
// mean_reward when there are rows, else the bundle's mean_reward, pass@1
// or first scorer:* (NeMo's order).
func pickMetric(rule Resolved, pr compare.Pair) string {
	if rule.Metric != "" {
		return rule.Metric
	}
	if len(pr.Base.Rows) > 0 && len(pr.Candidate.Rows) > 0 {
		return compare.MeanReward
	}
	if b := pr.Base.Bundle; b != nil {
		for _, want := range []string{compare.MeanReward, compare.Pass1} {
			for _, s := range b.Metrics {
				if s.Metric == want {
					return want
				}
			}
		}
		for _, s := range b.Metrics {
			if strings.HasPrefix(s.Metric, "scorer:") {
				return s.Metric
			}
		}
	}
	return compare.MeanReward
}

// evaluate computes one benchmark's numbers: paired when it can, from the
// bundles otherwise. Thresholds are applied later (after Holm).
func evaluate(rule Resolved, pr compare.Pair, opts Options) *Result {
	r := &Result{Benchmark: pr.Name, Tier: rule.Tier, Metric: pickMetric(rule, pr), MaxDropThreshold: rule.MaxDrop,
		MaxRelativeDropThreshold: rule.MaxRelativeDrop, RelativeGuardBelow: rule.RelativeGuardBelow, Direction: rule.Direction}
	// A run that did not measure its model gets no numbers: neither a
	// pass nor a breach can be read from it.
	for _, reason := range []string{pr.Base.InvalidReason("the baseline"), pr.Candidate.InvalidReason("the candidate")} {
		if reason != "" {
			r.Status = StatusInvalid
			r.Reasons = append(r.Reasons, reason)
		}
	}
	if r.Status == StatusInvalid {
		return r
	}
	if opts.Evidence {
		if cr, err := compare.Compare(pr, opts.CompareOptions); err == nil {
			r.RegressionReport = cr
		}
	}
	var bv, cv []float64
	ok := false
	var paired *compare.Paired
	if len(pr.Base.Rows) > 0 && len(pr.Candidate.Rows) > 0 && (r.Metric == compare.MeanReward || GatedMetricOK(r.Metric)) {
		paired = compare.PairRows(pr.Base.Rows, pr.Candidate.Rows)
		bv, cv, ok = paired.Values(r.Metric)
	}
	switch {
	case paired == nil:
		r.Reasons = append(r.Reasons, fmt.Sprintf("No per-item results for metric %s (%s on both sides, metric mean_reward, pass@1 or scorer:*)", r.Metric, rundir.ResultsFile))
		fallback(r, pr)
		return r
	case !ok:
		r.NPaired = len(paired.Base)
		r.Reasons = append(r.Reasons, fmt.Sprintf("Metric %s has no per-item values on both sides for the %d paired items", r.Metric, len(paired.Base)))
		fallback(r, pr)
		return r
	case len(bv) < MinPaired:
		r.NPaired = len(bv)
		r.Reasons = append(r.Reasons, fmt.Sprintf("Only %d paired items (need at least %d)", len(bv), MinPaired))
		fallback(r, pr)
		return r
	}
	r.NPaired = len(bv)
	d := make([]float64, len(bv))
	for i := range bv {
		d[i] = cv[i] - bv[i]
	}
	b, c, delta := round6(stats.Mean(bv)), round6(stats.Mean(cv)), stats.Mean(d)
	r.BaselineScore, r.CandidateScore, r.Delta = &b, &c, &delta
	if b != 0 {
		rel := 100 * delta / b
		r.RelativeDropPct = &rel
	}
	cl, nc := paired.Clusters()
	h := paired.Resolution(bv, cv)
	ci := compare.PairedCI(d, cl, nc, opts.Level, h)
	ps := &pairedStats{n: len(d), deltas: d, ci: ci, h: h}
	if reps, ok := paired.RepeatDeltas(r.Metric); ok {
		ps.repeats = reps
		ps.k = len(reps[0])
		for _, x := range reps {
			ps.k = min(ps.k, len(x))
		}
	}
	r.paired = ps
	lo, hi := ci.Lo, ci.Hi
	r.DeltaCILower, r.DeltaCIUpper = &lo, &hi
	r.CIMethod = string(ci.Method)
	if ci.Method == compare.DeltaClustered {
		r.CIMethod = fmt.Sprintf("%s (%d categories)", ci.Method, ci.Clusters)
	}
	// The tests are the interval's: about its centre (the adjusted
	// interval's is shrunk towards 0), so each rejects exactly when the
	// interval's end clears max_drop.
	damage := damageOf((ci.Lo+ci.Hi)/2, rule.Direction)
	pv, pw := pAbove(damage, rule.MaxDrop, ci), pAbove(-damage, -rule.MaxDrop, ci)
	r.PValue, r.PWithin = &pv, &pw
	r.test = testName(ci)
	r.PValueTest = fmt.Sprintf("one-sided %s of H0: damage at most %.4g against H1: damage above %.4g (damage = %s); a small p is evidence of a breach",
		r.test, rule.MaxDrop, rule.MaxDrop, damageDefinition(rule.Direction))
	return r
}

// testName names the test behind a paired interval's p-values.
func testName(ci *compare.DeltaCI) string {
	switch ci.Method {
	case compare.DeltaAdjustedWald:
		return "adjusted Wald test (Bonett–Price)"
	case compare.DeltaAdjustedT:
		return fmt.Sprintf("adjusted paired t test (%d df)", ci.DF)
	case compare.DeltaT:
		return fmt.Sprintf("paired t test (%d df)", ci.DF)
	}
	if ci.DF > 0 {
		return fmt.Sprintf("t test with the standard error clustered by category (%d categories, %d df)", ci.Clusters, ci.DF)
	}
	// A report written before clustered intervals carried their df.
	return fmt.Sprintf("normal test with the standard error clustered by category (%d categories)", ci.Clusters)
}

// damageDefinition says what damage is in terms of the runs' scores.
func damageDefinition(direction string) string {
	if direction == LowerIsBetter {
		return "candidate - baseline, lower is better"
	}
	return "baseline - candidate, higher is better"
}

// pAbove is the one-sided p-value of H0 "damage ≤ maxDrop" against H1
// "damage > maxDrop" under the interval's distribution (t with its df,
// normal when it has none). With both signs flipped it is the within test's.
func pAbove(damage, maxDrop float64, ci *compare.DeltaCI) float64 {
	excess := damage - maxDrop
	if ci.SE == 0 || math.IsNaN(ci.SE) {
		if excess > 0 {
			return 0
		}
		return 1
	}
	z := excess / ci.SE
	if ci.DF > 0 {
		return 1 - stats.TCDF(z, float64(ci.DF))
	}
	return 1 - stats.NormalCDF(z)
}

// quantile is the two-sided critical value of the interval's distribution:
// Student t with df (items − 1), or with the clustered interval's own G−1
// (more items do not add clusters), else normal.
func quantile(ci *compare.DeltaCI, df int, level float64) float64 {
	switch {
	case ci.Method.ItemsT():
		return stats.TQuantile(1-(1-level)/2, float64(max(df, 1)))
	case ci.DF > 0:
		return stats.TQuantile(1-(1-level)/2, float64(ci.DF))
	}
	return stats.NormalQuantile(1 - (1-level)/2)
}

// fallback fills the numbers from the bundles' scores (NeMo: the delta's
// interval approximated as [cand_lo − base_hi, cand_hi − base_lo], no
// pairing) and marks the benchmark INSUFFICIENT_EVIDENCE; thresholds may
// still decide it on that (conservative) interval.
func fallback(r *Result, pr compare.Pair) {
	r.Status = StatusInsufficient
	bs, cs := bundleScore(pr.Base.Bundle, r.Metric), bundleScore(pr.Candidate.Bundle, r.Metric)
	if bs == nil || cs == nil || bs.Value == nil || cs.Value == nil {
		r.Reasons = append(r.Reasons, fmt.Sprintf("No bundle score for %s on both sides to fall back on", r.Metric))
		return
	}
	b, c := *bs.Value, *cs.Value
	delta := c - b
	r.BaselineScore, r.CandidateScore, r.Delta = &b, &c, &delta
	if b != 0 {
		rel := 100 * delta / b
		r.RelativeDropPct = &rel
	}
	// nel's analytic intervals only. The bootstrap beside each is NeMo
	// Evaluator's parity figure, not a confidence claim (near 0 or 1 it
	// covers far less than its level), so a score without the analytic
	// interval has none to gate on.
	bi, ci := bs.CLT, cs.CLT
	if bi != nil && ci != nil {
		lo, hi := ci.Lo-bi.Hi, ci.Hi-bi.Lo
		r.DeltaCILower, r.DeltaCIUpper = &lo, &hi
		r.CIMethod = "unpaired (bundle intervals: [cand_lo − base_hi, cand_hi − base_lo])"
	}
	r.Reasons = append(r.Reasons, "Fell back to the bundles' scores (unpaired)")
}

func bundleScore(b *metrics.Bundle, metric string) *metrics.Score {
	if b == nil {
		return nil
	}
	for i := range b.Metrics {
		if b.Metrics[i].Metric == metric {
			return &b.Metrics[i]
		}
	}
	// A binary run's headline is pass@1; its mean reward is the same
	// number.
	if metric == compare.MeanReward && b.Binary && b.Headline.Metric == compare.Pass1 {
		return &b.Headline
	}
	return nil
}

func damageOf(delta float64, direction string) float64 {
	if direction == LowerIsBetter {
		return delta
	}
	return -delta
}

// applyThresholds is NeMo's _apply_thresholds: the relative rule on the
// point estimate first, then the interval rules, then (no interval) the
// point estimate for advisory benchmarks only. With --holm the absolute
// BREACH of a gated benchmark also needs its Holm-adjusted p below
// (1 − level)/2.
func applyThresholds(r *Result, rule Resolved, opts Options) {
	if r.Delta == nil {
		if r.Status == "" {
			r.Status = StatusInsufficient
		}
		return
	}
	damage := damageOf(*r.Delta, r.Direction)
	level := int(math.Round(opts.Level * 100))
	fallbackStatus := r.Status // INSUFFICIENT_EVIDENCE after a fallback
	status := ""

	// a. Relative rule, on the point estimate.
	if rule.MaxRelativeDrop != nil && r.BaselineScore != nil && *r.BaselineScore != 0 && damage > 0 &&
		(rule.RelativeGuardBelow == nil || *r.BaselineScore < *rule.RelativeGuardBelow) {
		rel := damage / math.Abs(*r.BaselineScore)
		if rel > *rule.MaxRelativeDrop {
			r.RelativeBreached = true
			status = StatusBreach
			guard := ""
			if rule.RelativeGuardBelow != nil {
				guard = fmt.Sprintf(" (baseline %.4f < guard %.4f)", *r.BaselineScore, *rule.RelativeGuardBelow)
			}
			r.Reasons = append(r.Reasons, fmt.Sprintf("Relative drop %.1f%% exceeds threshold %.1f%%%s", 100*rel, 100**rule.MaxRelativeDrop, guard))
		}
	}

	if r.DeltaCILower != nil && r.DeltaCIUpper != nil {
		// b. The interval on the damage.
		dlo, dhi := -*r.DeltaCIUpper, -*r.DeltaCILower
		if r.Direction == LowerIsBetter {
			dlo, dhi = *r.DeltaCILower, *r.DeltaCIUpper
		}
		ciText := fmt.Sprintf("%d%% CI on damage [%.4f, %.4f]", level, noNegZero(dlo), noNegZero(dhi))
		holm := opts.Holm && r.PHolm != nil
		switch {
		case dlo > rule.MaxDrop && holm && *r.PHolm >= (1-opts.Level)/2:
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s exceeds threshold %.4f, but the breach test's Holm-adjusted p = %.4g (raw %.4g) is not below %.4g: not a breach across the gated family",
				ciText, rule.MaxDrop, *r.PHolm, *r.PValue, (1-opts.Level)/2))
			if status == "" {
				status = StatusInsufficient
			}
		case dlo > rule.MaxDrop:
			r.AbsoluteBreached = true
			status = StatusBreach
			msg := fmt.Sprintf("%s exceeds threshold %.4f", ciText, rule.MaxDrop)
			if holm {
				msg += fmt.Sprintf(" (breach test's Holm-adjusted p %s, raw %s)", formatP(*r.PHolm), formatP(*r.PValue))
			}
			r.Reasons = append(r.Reasons, msg)
		case dhi <= rule.MaxDrop:
			if status == "" {
				status = StatusPass
			}
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s is within threshold %.4f", ciText, rule.MaxDrop))
		default:
			if status == "" {
				status = StatusInsufficient
			}
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s straddles threshold %.4f", ciText, rule.MaxDrop))
		}
	} else if r.Tier == Advisory {
		// c. No interval: a point estimate, for advisory benchmarks only.
		if damage > rule.MaxDrop {
			r.AbsoluteBreached = true
			status = StatusBreach
			r.Reasons = append(r.Reasons, fmt.Sprintf("Absolute drop %.4f exceeds threshold %.4f", damage, rule.MaxDrop))
		} else if status == "" {
			status = StatusPass
			r.Reasons = append(r.Reasons, fmt.Sprintf("Absolute drop %.4f is within threshold %.4f (point estimate; advisory)", damage, rule.MaxDrop))
		}
	} else if status == "" {
		status = StatusInsufficient
		r.Reasons = append(r.Reasons, "No interval on the delta: a gated benchmark is not decided on a point estimate")
	}
	if status == "" {
		status = fallbackStatus
	}
	if fallbackStatus == StatusInsufficient && status == StatusPass && r.Gated() {
		// Unpaired numbers (the fallback) may show a breach, never clear
		// a gated benchmark.
		status = StatusInsufficient
		r.Reasons = append(r.Reasons, "Unpaired numbers cannot pass a gated benchmark")
	}
	r.Status = status
}

// needed says what would decide an INSUFFICIENT_EVIDENCE with a paired
// interval. With half-width q·s/√n (s the per-item SD behind the
// interval's SE, q its critical value) and gap = |damage − max_drop|, the
// interval clears max_drop once q·s/√n' < gap: n' = n·(q·SE/gap)².
// Repeats: with the per-item, per-repeat deltas' variance decomposition
// (between-item B, within-item W, K repeats now), SE(K') =
// √((B + W/K')/n) clears the gap when K' ≥ W / (n·(gap/q)² − B).
func needed(r *Result, rule Resolved, opts Options) *Needed {
	ps := r.paired
	damage := damageOf(*r.Delta, r.Direction)
	gap := math.Abs(damage - rule.MaxDrop)
	nd := &Needed{}
	if gap < 1e-12 || ps.ci.SE == 0 {
		nd.Note = "cannot be decided: the estimate sits on the threshold"
		return nd
	}
	n := float64(ps.n)
	nItems := NeededItems(ps.deltas, ps.h, damageOf(1, r.Direction), rule.MaxDrop, ps.ci, opts.Level)
	if math.IsInf(nItems, 1) {
		nd.Note = fmt.Sprintf("more items alone cannot decide it: the damage sits too close to max_drop %.4f", rule.MaxDrop)
		return nd
	}
	add := max(1, int(math.Ceil(nItems-n)))
	nd.AdditionalItems = &add
	var notes []string
	notes = append(notes, fmt.Sprintf("~%d more paired items (%d in all, same repeats) would bring the %d%% interval clear of max_drop %.4f at the observed spread",
		add, ps.n+add, int(math.Round(opts.Level*100)), rule.MaxDrop))

	switch {
	case ps.repeats == nil:
		notes = append(notes, "repeats cannot be estimated with 1 repeat per item (no within-item variance)")
	default:
		between, within, ok := stats.Decompose(ps.repeats)
		q := quantile(ps.ci, ps.n-1, opts.Level)
		room := n*(gap/q)*(gap/q) - between
		switch {
		case !ok:
			notes = append(notes, "repeats cannot be estimated (variance decomposition unavailable)")
		case within <= 0:
			notes = append(notes, "more repeats would not help: the items' repeats agree (no within-item variance)")
		case room <= 0:
			notes = append(notes, fmt.Sprintf("more repeats alone cannot decide it: the between-item variance (%.4g) alone is too large for %d items", between, ps.n))
		default:
			k := int(math.Ceil(within / room))
			if k <= ps.k {
				k = ps.k + 1
			}
			nd.Repeats = &k
			notes = append(notes, fmt.Sprintf("or %d repeats per item (now %d) at the same items, from the variance decomposition (between %.4g, within %.4g)", k, ps.k, between, within))
		}
	}
	nd.Note = strings.Join(notes, "; ")
	return nd
}

// NeededItems is how many paired items n' bring the interval on the
// damage clear of maxDrop (wholly above or at most it) if the per-item
// differences deltas kept their mean and spread; +Inf when no number up to
// maxItems does. sign is damageOf(1, direction): damage = sign·delta.
// The adjusted interval (PairedCI; z or t as ci's) is recomputed at each n' (its centre
// and floor move with n', so no closed form); the clustered one, whose
// G−1 df more items do not raise, takes n' = n·(z·se/gap)² at the normal
// quantile.
func NeededItems(deltas []float64, h, sign, maxDrop float64, ci *compare.DeltaCI, level float64) float64 {
	n := float64(len(deltas))
	m := stats.Mean(deltas)
	z := stats.NormalQuantile(1 - (1-level)/2)
	if !ci.Method.Adjusted() {
		gap := math.Abs(sign*m - maxDrop)
		return math.Ceil(n * (z * ci.SE / gap) * (z * ci.SE / gap))
	}
	v := stats.Variance(deltas) * (n - 1) / n
	clears := func(np float64) bool {
		c, s := stats.AdjustedPaired(np, m, v, h)
		q := z
		if ci.Method.ItemsT() {
			q = stats.TQuantile(1-(1-level)/2, np-1)
		}
		d := sign * c
		return d-q*s > maxDrop || d+q*s <= maxDrop
	}
	const maxItems = 1e7
	if !clears(maxItems) {
		return math.Inf(1)
	}
	lo, hi := n, maxItems // clears(hi); lo is below the answer
	for hi-lo > 1 {
		mid := math.Floor((lo + hi) / 2)
		if clears(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// verdict aggregates: only gated (critical, supporting) benchmarks count.
// An INVALID gated benchmark makes the verdict INVALID, whatever the
// others say (their breaches are listed beside it): supporting benchmarks
// can make the verdict NO-GO, so an unmeasured one must not let it be GO.
// An advisory benchmark never gates, invalid or not.
func verdict(rs []*Result) (string, []string) {
	var invalid, breach, missing, insufficient []string
	gated := 0
	for _, r := range rs {
		if !r.Gated() {
			continue
		}
		gated++
		tag := fmt.Sprintf("%s [%s]", r.Benchmark, r.Tier)
		switch r.Status {
		case StatusInvalid:
			invalid = append(invalid, tag)
		case StatusBreach:
			breach = append(breach, tag)
		case StatusMissing:
			missing = append(missing, tag)
		case StatusInsufficient:
			insufficient = append(insufficient, tag)
		}
	}
	var reasons []string
	if len(breach) > 0 {
		reasons = append(reasons, "BREACH: "+strings.Join(breach, ", "))
	}
	if len(missing) > 0 {
		reasons = append(reasons, "MISSING: "+strings.Join(missing, ", "))
	}
	if len(invalid) > 0 {
		reasons = append([]string{"INVALID: " + strings.Join(invalid, ", ") + " (too many infrastructure failures: no decision on an unmeasured benchmark)"}, reasons...)
		if len(insufficient) > 0 {
			reasons = append(reasons, "INSUFFICIENT_EVIDENCE: "+strings.Join(insufficient, ", "))
		}
		reasons = append(reasons, "Action: fix the infrastructure failures and run the invalid benchmarks again.")
		return Invalid, reasons
	}
	if len(reasons) > 0 {
		if len(insufficient) > 0 {
			reasons = append(reasons, "INSUFFICIENT_EVIDENCE: "+strings.Join(insufficient, ", "))
		}
		return NoGo, reasons
	}
	if len(insufficient) > 0 {
		return Inconclusive, []string{
			"INSUFFICIENT_EVIDENCE: " + strings.Join(insufficient, ", "),
			"Action: re-run with more items, add repeats, or relax thresholds for these benchmarks.",
		}
	}
	if gated == 0 {
		return Go, []string{"No gated benchmarks evaluated"}
	}
	return Go, []string{fmt.Sprintf("All %d gated benchmark(s) passed", gated)}
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// noNegZero prints −0 (and what rounds to it) as 0.
func noNegZero(x float64) float64 {
	if math.Abs(x) < 5e-5 {
		return 0
	}
	return x
}
