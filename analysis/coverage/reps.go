package coverage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/analysis/gate"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/stats"
)

// level is the intervals' nominal coverage, and alpha the tests' level.
const (
	level = 0.95
	alpha = 0.05
)

// truth is the true value of a bundle metric in case c, and whether the
// harness knows it: pass@1 is Mean; pass@k is a Beta moment (with
// clusters, its mean over the clusters' Beta).
func (c Case) truth(metric string) (float64, bool) {
	if metric == "pass@1" || metric == RatioMetric {
		// The instructions' count is independent of the item, so
		// E[Σnum]/E[Σden] is the mean probability.
		return c.Mean, true
	}
	k, err := strconv.Atoi(strings.TrimPrefix(metric, "pass@"))
	if err != nil || !strings.HasPrefix(metric, "pass@") {
		return 0, false
	}
	switch {
	case c.Shape != "":
		return shapePassAtK(c, k), true
	case c.Clusters > 0:
		return truePassAtKClustered(c.Mean, c.ClusterConc, c.ItemConc, k), true
	}
	return truePassAtK(c.Mean, c.ItemConc, k), true
}

// unpairedRep simulates one run and records every interval eval.json
// gives for a metric whose truth is known, and, as the reference the
// issue measured, the interval nel reported before (mean ± z·SE, or
// t_{G−1} with clusters; the item bootstrap with clusters).
func unpairedRep(c Case, cfg Config, r *rand.Rand, acc *accumulator) error {
	p, cl := probs(c, r)
	rs := rows(c, p, cl, r)
	b := metrics.Compute(metrics.Input{Rows: rs, Meta: meta(c), Resamples: cfg.Resamples, Level: level})
	if b.Headline.Metric != "pass@1" {
		return fmt.Errorf("headline %s, want pass@1", b.Headline.Metric)
	}
	for _, s := range b.Metrics {
		truth, ok := c.truth(s.Metric)
		if !ok || s.CLT == nil || s.Bootstrap == nil {
			continue
		}
		acc.interval(s.Metric+" "+string(s.CLT.Method), s.CLT.Lo, s.CLT.Hi, truth)
		acc.interval(s.Metric+" "+string(s.Bootstrap.Method), s.Bootstrap.Lo, s.Bootstrap.Hi, truth)
		effectiveReference(s, truth, acc)
		uStatisticCap(c, s, truth, acc)
		passKReferences(c, s, rs, truth, acc)
		if s.Metric == RatioMetric {
			// What ratio metrics reported before: r ± t(m−1)·SE, clipped.
			q := stats.TQuantile((1+level)/2, float64(s.CLT.DF))
			v := *s.Value
			acc.interval(RatioMetric+" before: clt_ratio", max(0, v-q*s.CLT.SE), min(1, v+q*s.CLT.SE), truth)
		}
		if s.Metric != "pass@1" {
			continue
		}
		q := stats.NormalQuantile((1 + level) / 2)
		if s.CLT.Clusters > 0 {
			q = stats.TQuantile((1+level)/2, float64(s.CLT.Clusters-1))
		}
		v := *s.Value
		acc.interval("pass@1 before: ±z·SE", max(0, v-q*s.CLT.SE), min(1, v+q*s.CLT.SE), truth)
		if c.Clusters > 0 {
			lo, hi := stats.Bootstrap(itemMeans(rs, c), cfg.Resamples, stats.DefaultSeed, level)
			acc.interval("pass@1 before: item bootstrap", lo, hi, truth)
		}
	}
	return nil
}

// effectiveReference records, beside an interval on Korn & Graubard's
// df-adjusted effective sample size, the same size with the other of the
// two Beta-based intervals nel chose between: Clopper–Pearson's beside
// Jeffreys' (the reference whose width Jeffreys' saves), Jeffreys' beside
// the clustered Clopper–Pearson (the narrower choice it declined).
func effectiveReference(s metrics.Score, truth float64, acc *accumulator) {
	ci := s.CLT
	if ci.EffectiveN <= 0 || ci.DF <= 0 {
		return
	}
	q := stats.TQuantile((1+level)/2, float64(ci.DF))
	v := *s.Value
	switch ci.Method.Family() {
	case metrics.FamilyJeffreys:
		lo, hi := stats.KornGraubard(v, ci.EffectiveN, q, level)
		acc.interval(s.Metric+" reference: Clopper–Pearson on n*", lo, hi, truth)
	case metrics.FamilyClopperPearson:
		lo, hi := stats.KornGraubardJeffreys(v, ci.EffectiveN, q, level)
		acc.interval(s.Metric+" reference: Jeffreys on n*", lo, hi, truth)
	}
}

// uStatisticCap records, for pass@k at k < repeats, Jeffreys' interval
// (Clopper–Pearson's over clusters) on the sample SE's effective size
// capped at what the U-statistic can achieve, N·stats.PassAtKTrials at the
// estimate: the tightest honest bound docs/statistics.md derives, which
// under-covers near 1 (the sample SE is too small in the runs that miss).
func uStatisticCap(c Case, s metrics.Score, truth float64, acc *accumulator) {
	ci := s.CLT
	k, err := strconv.Atoi(strings.TrimPrefix(s.Metric, "pass@"))
	v := *s.Value
	if err != nil || k < 2 || k >= c.Repeats || ci.EffectiveN <= 0 || ci.DF <= 0 {
		return
	}
	n := ci.EffectiveN // at p̂ = 0 or 1: the items, whatever the cap
	if v > 0 && v < 1 {
		n = stats.EffectiveN(v, ci.SE, float64(s.N)*stats.PassAtKTrials(c.Repeats, k, v), s.N)
	}
	q := stats.TQuantile((1+level)/2, float64(ci.DF))
	interval := stats.KornGraubardJeffreys
	if ci.Clusters > 0 {
		interval = stats.KornGraubard
	}
	lo, hi := interval(v, n, q, level)
	acc.interval(s.Metric+" reference: U-statistic cap", lo, hi, truth)
}

// itemMeans is each item's mean reward (rows in item then repeat order).
func itemMeans(rs []results.Row, c Case) []float64 {
	means := make([]float64, c.Items)
	for _, row := range rs {
		means[row.ItemIdx] += row.Reward / float64(c.Repeats)
	}
	return means
}

// pairedRep simulates a baseline and a candidate on the same items and
// records compare's interval on the difference, its exact test, and the
// gate's decision under a policy of max_drop 0 (BREACH when the interval
// on the drop lies above 0: a one-sided test at (1 − level)/2).
func pairedRep(c Case, cfg Config, r *rand.Rand, acc *accumulator) error {
	p, cl := probs(c, r)
	q := make([]float64, len(p))
	for i, pi := range p {
		q[i] = pi * (1 - c.Effect/c.Mean)
	}
	base := &compare.Run{Name: "sim", Path: "baseline", Rows: rows(c, p, cl, r), Meta: meta(c)}
	cand := &compare.Run{Name: "sim", Path: "candidate", Rows: rows(c, q, cl, r), Meta: meta(c)}
	pair := compare.Pair{Name: "sim", Base: base, Candidate: cand}
	rep, opts, err := compareDelta(pair, cfg)
	if err != nil {
		return err
	}
	ci := rep.Metrics[0].CI
	acc.interval("delta "+string(ci.Method), ci.Lo, ci.Hi, -c.Effect)
	if ci.Clusters == 0 {
		deltaReferences(c, pair, acc)
	}
	if ci.Clusters > 0 {
		z := stats.NormalQuantile((1 + level) / 2)
		d := rep.Metrics[0].Delta
		acc.interval("delta before: clustered ±z·SE", d-z*ci.SE, d+z*ci.SE, -c.Effect)
	}
	acc.rejection(fmt.Sprintf("compare %s test, p < %g", rep.Test.Name, alpha), rep.Test.P < alpha)
	zero, critical := 0.0, gate.Critical
	policy := &gate.Policy{Version: 1, Defaults: gate.Rule{Tier: &critical, MaxDrop: &zero}}
	gopts := gate.DefaultOptions()
	gopts.CompareOptions = opts
	g, err := gate.Evaluate(policy, []compare.Pair{pair}, nil, nil, gopts)
	if err != nil {
		return err
	}
	acc.rejection("gate BREACH at max_drop 0", g.Benchmarks[0].Status == gate.StatusBreach)
	return nil
}

// deltaReferences records, beside compare's adjusted t interval, the
// plain t interval it replaced, with one repeat Tango's score interval
// (the literature's reference for paired proportions), and nel
// reproduce's interval (its formula,
// stats.AdjustedPaired with pseudo-differences ±1 and z, on the same
// per-item mean-reward differences; reproduce gates one repeat).
func deltaReferences(c Case, pair compare.Pair, acc *accumulator) {
	bv, cv, _ := compare.PairRows(pair.Base.Rows, pair.Candidate.Rows).Values(compare.MeanReward)
	d := make([]float64, len(bv))
	for i := range d {
		d[i] = cv[i] - bv[i]
	}
	_, _, lo, hi := stats.TInterval(d, level)
	acc.interval("delta before: t", lo, hi, -c.Effect)
	if c.Repeats == 1 {
		u, v := 0, 0
		for _, x := range d {
			if x > 0 {
				u++
			} else if x < 0 {
				v++
			}
		}
		z := stats.NormalQuantile((1 + level) / 2)
		tlo, thi := tango(u, v, len(d), z)
		acc.interval("delta reference: Tango score", tlo, thi, -c.Effect)
		n, m := float64(len(d)), stats.Mean(d)
		centre, se := stats.AdjustedPaired(n, m, stats.Variance(d)*(n-1)/n, 1)
		acc.interval("delta reproduce adjusted_paired (z)", centre-z*se, centre+z*se, -c.Effect)
	}
}

// moverRep simulates a baseline and a candidate on separate draws of
// items, whose items compare cannot pair, and records compare's unpaired
// interval on the difference of the headlines (truth −Effect).
func moverRep(c Case, cfg Config, r *rand.Rand, acc *accumulator) error {
	bundle := func(scale float64) *metrics.Bundle {
		p, cl := probs(c, r)
		for i := range p {
			p[i] *= scale
		}
		return metrics.Compute(metrics.Input{Rows: rows(c, p, cl, r), Meta: meta(c), Resamples: cfg.Resamples, Level: level})
	}
	base := &compare.Run{Name: "sim", Path: "baseline", Bundle: bundle(1), Meta: meta(c)}
	cand := &compare.Run{Name: "sim", Path: "candidate", Bundle: bundle(1 - c.Effect/c.Mean), Meta: meta(c)}
	rep, _, err := compareDelta(compare.Pair{Name: "sim", Base: base, Candidate: cand, Unpaired: "simulated: separate draws of items"}, cfg)
	if err != nil {
		return err
	}
	md := rep.Metrics[0]
	acc.interval("delta "+string(md.CI.Method), md.CI.Lo, md.CI.Hi, -c.Effect)
	// Newcombe's method 10 as before: MOVER on the headlines' own limits
	// (wilson_ends; Brown, Cai & DasGupta's modified Wilson before it).
	b, cd := base.Bundle.Headline.CLT, cand.Bundle.Headline.CLT
	lo := md.Delta - math.Hypot(md.Candidate-cd.Lo, b.Hi-md.Baseline)
	hi := md.Delta + math.Hypot(cd.Hi-md.Candidate, md.Baseline-b.Lo)
	acc.interval("delta reference: MOVER on the headlines' intervals", lo, hi, -c.Effect)
	return nil
}

// compareDelta is compare's report on pair at the suite's resamples, and
// those options; an error when it gives no interval on the difference.
func compareDelta(pair compare.Pair, cfg Config) (*compare.Report, compare.Options, error) {
	opts := compare.DefaultOptions()
	opts.Resamples = cfg.Resamples
	rep, err := compare.Compare(pair, opts)
	if err != nil {
		return nil, opts, err
	}
	if rep.Metrics[0].CI == nil {
		return nil, opts, fmt.Errorf("compare gave no interval on the difference")
	}
	return rep, opts, nil
}

// meta is the results metadata a simulated run carries.
func meta(c Case) map[string]string {
	return map[string]string{results.MetaBenchmark: "sim", results.MetaRepeats: strconv.Itoa(c.Repeats)}
}

// passKReferences records, for pass@k at k < repeats over items without
// clusters (nel's jeffreys_betabinomial), the interval it replaced
// (Jeffreys' on the sample SE's effective size capped at the disjoint
// k-sample blocks) and the Beta-binomial model's size alone, without the
// sample SE beside it.
func passKReferences(c Case, s metrics.Score, rs []results.Row, truth float64, acc *accumulator) {
	ci := s.CLT
	k, err := strconv.Atoi(strings.TrimPrefix(s.Metric, "pass@"))
	if err != nil || k < 2 || k >= c.Repeats || c.Clusters > 0 || ci.DF <= 0 {
		return
	}
	n, cnt := make([]int, c.Items), make([]int, c.Items)
	for _, row := range rs {
		n[row.ItemIdx]++
		if row.Reward > 0 {
			cnt[row.ItemIdx]++
		}
	}
	v := *s.Value
	blocks := float64(c.Items * (c.Repeats / k))
	before, model := stats.EffectiveN(v, ci.SE, blocks, s.N), float64(s.N)
	if v > 0 && v < 1 {
		model = min(stats.FitBetaBinomial(n, cnt).PassAtKModelTrials(n, k), float64(len(rs)))
	}
	q := stats.TQuantile((1+level)/2, float64(ci.DF))
	lo, hi := stats.KornGraubardJeffreys(v, before, q, level)
	acc.interval(s.Metric+" before: blocks cap", lo, hi, truth)
	lo, hi = stats.KornGraubardJeffreys(v, model, q, level)
	acc.interval(s.Metric+" reference: Beta-binomial model alone", lo, hi, truth)
}
