// Package reproduce decides whether a new run of a published recipe
// reproduces the published run: per benchmark, the items are paired by
// content id and the difference new − published gets an adjusted paired
// interval. The decision is equivalence first: REPRODUCED when the two
// one-sided tests (TOST) show the difference inside ±margin, DIFFERENT
// when it is significant (two-sided) and not shown inside the margin,
// INCONCLUSIVE otherwise; across benchmarks both families of tests are
// Holm-adjusted. A reproduction is methodological consistency with clear
// provenance, not bit-identical numbers: provenance is reported apart from
// the statistics; a methodology difference (benchmark hash, dataset
// digest, scoring version, model) makes a benchmark not comparable, hence
// DIFFERENT whatever its numbers, and infrastructure differences (serving
// engine, GPUs, nel version) are listed for the reader and never decide.
// A benchmark whose published or new run has more infrastructure failures
// than its max_error_rate is INVALID: it could not be reproduced, and
// neither could the run. Run is `nel reproduce sha256:…` end to end: it
// fetches the published recipe and run (analysis/publish), runs the recipe
// again (local) or takes a finished run, and decides with Compare.
package reproduce

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/stats"
)

// ReportVersion is the version of the JSON report. Version 2: the verdict
// is equivalence first (TOST, Holm across benchmarks), and provenance is
// reported apart from the statistical reasons. Version 3: infrastructure
// failures are not scored (Score.InfraErrors), failures are the model
// errors, and a benchmark either run of which is INVALID is INVALID.
const ReportVersion = 3

// Verdicts. INVALID means it could not be reproduced: the published or
// the new run of a benchmark has more infrastructure failures than its
// max_error_rate, so it did not measure its model and there is nothing to
// compare (DESIGN §6.7).
const (
	Reproduced   = "REPRODUCED"
	Different    = "DIFFERENT"
	Inconclusive = "INCONCLUSIVE"
	Invalid      = "INVALID"
)

// Test names.
const (
	TestMcNemar  = "mcnemar_exact_two_sided"
	TestSignFlip = "sign_flip_two_sided"
	TestTOST     = "tost_adjusted_paired"
)

// IntervalMethod names the adjusted paired interval.
const IntervalMethod = "adjusted_paired"

// Options configure the decision.
type Options struct {
	// Margin is the largest difference, absolute in reward units, that
	// still counts as the same result (0.03 = 3 points).
	Margin float64
	// Alpha is the level of both decisions: the two one-sided tests of
	// equivalence (each at α, so the 1−2α interval decides) and the
	// two-sided test of a difference, each family Holm-adjusted across the
	// benchmarks. Level is the reported two-sided interval's.
	Alpha float64
	Level float64
	// Resamples and Seed drive the sign-flip test.
	Resamples int
	Seed      uint64
	// FailureShift is the change in failure rate (absolute) that earns a
	// reason of its own.
	FailureShift float64
}

// DefaultOptions are the CLI's defaults.
func DefaultOptions() Options {
	return Options{Margin: 0.03, Alpha: 0.05, Level: 0.95,
		Resamples: stats.DefaultResamples, Seed: stats.DefaultSeed, FailureShift: 0.02}
}

// Report is the decision on a whole run, `nel reproduce -f json`.
type Report struct {
	ReportVersion int    `json:"report_version"`
	Verdict       string `json:"verdict"`
	// RecipeHash is the published run's recipe hash.
	RecipeHash string `json:"recipe_hash"`
	// Published and New are the run directories compared.
	Published string  `json:"published"`
	New       string  `json:"new"`
	Margin    float64 `json:"margin"`
	Alpha     float64 `json:"alpha"`
	Level     float64 `json:"level"`
	// HolmFamily names the benchmarks whose tests were Holm-adjusted
	// together: every benchmark with paired items.
	HolmFamily []string `json:"holm_family"`
	// Benchmarks are the published run's benchmarks, by name.
	Benchmarks []Benchmark `json:"benchmarks"`
	// Provenance lists every provenance field the runs disagree on, apart
	// from the statistics: only the methodology fields decide (they make a
	// benchmark not comparable).
	Provenance []Difference `json:"provenance_differences"`
	// Reasons explain the overall verdict; Notes are what a reader should
	// know that did not decide it.
	Reasons []string `json:"reasons"`
	Notes   []string `json:"notes,omitempty"`
}

// Benchmark is the decision on one benchmark.
type Benchmark struct {
	Benchmark string `json:"benchmark"`
	// Metric is the headline compared: pass@1 for binary rewards, else
	// mean_reward (per item, the mean over its repeats).
	Metric string `json:"metric"`
	// Verdict is Statistics, unless the runs are not comparable: then
	// DIFFERENT whatever the numbers.
	Verdict string `json:"verdict"`
	// Statistics is what the numbers alone decide; empty when there is
	// nothing to pair.
	Statistics string `json:"statistics,omitempty"`
	// NotComparable names the methodology fields recorded differently in
	// the two runs (see Report.Provenance).
	NotComparable []string `json:"not_comparable,omitempty"`
	// Reasons explain Statistics: the numbers, the tests, and what the
	// data say about the pairing (coverage, changed answers, failures).
	Reasons []string `json:"reasons"`

	Published Score `json:"published"`
	New       Score `json:"new"`
	// Paired is the number of items on both sides; Delta the mean over
	// them of new − published per-item values.
	Paired      int         `json:"paired"`
	Delta       float64     `json:"delta"`
	CI          Interval    `json:"ci"`
	Equivalence Equivalence `json:"equivalence"`
	Test        Test        `json:"test"`
	// ItemsNeeded is how many paired items would likely show an
	// INCONCLUSIVE benchmark REPRODUCED (its equivalence test at the level
	// Holm would apply to it); RepeatsNeeded how many repeats per item on
	// the same items would.
	ItemsNeeded   int `json:"items_needed,omitempty"`
	RepeatsNeeded int `json:"repeats_needed,omitempty"`
}

// Score is one run's side of a benchmark.
type Score struct {
	// Value is the headline over the run's scored items (the mean of the
	// item means over their scored samples); nil when the run has none.
	Value   *float64 `json:"value"`
	Items   int      `json:"items"`
	Repeats int      `json:"repeats"`
	// Samples is every sample run; InfraErrors those that failed for
	// infrastructure reasons (never scored), ScoredSamples the others.
	Samples       int `json:"samples"`
	ScoredSamples int `json:"scored_samples"`
	InfraErrors   int `json:"infra_errors"`
	// Invalid is set when InfraErrors are above the run's max_error_rate.
	Invalid bool `json:"invalid,omitempty"`
	// Failures are the model errors among the scored samples (scored as
	// wrong), FailureRate their share of them.
	Failures    int     `json:"failures"`
	FailureRate float64 `json:"failure_rate"`
}

// Interval is the adjusted paired interval on new − published.
type Interval struct {
	Method string  `json:"method"`
	Level  float64 `json:"level"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	// Center is the adjusted mean Σd/(n+2), SE the adjusted standard
	// error.
	Center float64 `json:"center"`
	SE     float64 `json:"se"`
}

// Equivalence is the two one-sided tests (TOST) that the difference lies
// inside ±Margin, on the adjusted paired statistic (Center, SE of the
// Interval): PLower tests δ ≤ −Margin, PUpper δ ≥ +Margin, and P, the
// larger, is below α exactly when the 1−2α interval [Lo, Hi] lies inside
// ±Margin.
type Equivalence struct {
	Name   string  `json:"name"`
	Margin float64 `json:"margin"`
	Level  float64 `json:"level"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	PLower float64 `json:"p_lower"`
	PUpper float64 `json:"p_upper"`
	P      float64 `json:"p"`
	// PHolm is P Holm-adjusted over the report's HolmFamily; it decides.
	PHolm float64 `json:"p_holm"`
}

// Test is the two-sided test that both runs measure the same thing.
type Test struct {
	Name string  `json:"name"`
	P    float64 `json:"p"`
	// PHolm is P Holm-adjusted over the report's HolmFamily; it decides.
	PHolm float64 `json:"p_holm"`
	// McNemar: Discordant pairs, Worse (right in the published run, wrong
	// in the new one) and Better.
	Discordant int `json:"discordant,omitempty"`
	Worse      int `json:"worse,omitempty"`
	Better     int `json:"better,omitempty"`
	// Sign flip: resamples and seed.
	Resamples int    `json:"resamples,omitempty"`
	Seed      uint64 `json:"seed,omitempty"`
}

// Compare decides whether the run in new reproduces the run in published.
// Each is a run directory (<dir>/<benchmark>/eval.json + results.parquet)
// or one benchmark's directory; two single benchmarks are compared
// whatever their names. Unreadable inputs are errors (a
// *compare.UsageError when a path holds no run).
func Compare(published, new string, opts Options) (*Report, error) {
	pub, err := compare.Resolve(published)
	if err != nil {
		return nil, fmt.Errorf("published run: %w", err)
	}
	nw, err := compare.Resolve(new)
	if err != nil {
		return nil, fmt.Errorf("new run: %w", err)
	}
	r := &Report{ReportVersion: ReportVersion, Published: published, New: new,
		Margin: opts.Margin, Alpha: opts.Alpha, Level: opts.Level, HolmFamily: []string{}}
	for _, run := range pub.Runs {
		if h := run.RecipeHash(); h != "" {
			r.RecipeHash = h
			break
		}
	}

	byName := map[string]*compare.Run{}
	for _, run := range nw.Runs {
		byName[run.Name] = run
	}
	single := !pub.Multi && !nw.Multi
	// diffs[i] are benchmark i's paired differences, nil when it has
	// none: the verdicts wait for Holm, which needs every benchmark's
	// p-values.
	var diffs [][]float64
	for _, p := range pub.Runs {
		n := byName[p.Name]
		if single {
			n = nw.Runs[0]
			if n.Name != p.Name {
				r.Notes = append(r.Notes, fmt.Sprintf("comparing benchmark %q (published) with %q (new)", p.Name, n.Name))
			}
		}
		if n == nil {
			r.Benchmarks = append(r.Benchmarks, Benchmark{Benchmark: p.Name, Verdict: Inconclusive,
				Metric: headline(p.Rows, p.Rows), Published: score(p), Reasons: []string{fmt.Sprintf("not reproduced: the new run %s has no benchmark %s", new, p.Name)}})
			diffs = append(diffs, nil)
			continue
		}
		delete(byName, n.Name)
		b, d, pdiffs, notes := measure(p.Name, p, n, opts)
		r.Benchmarks = append(r.Benchmarks, b)
		diffs = append(diffs, d)
		r.Provenance = append(r.Provenance, pdiffs...)
		for _, note := range notes {
			r.Notes = append(r.Notes, p.Name+": "+note)
		}
	}
	if !single {
		for _, n := range nw.Runs {
			if _, ok := byName[n.Name]; ok {
				r.Notes = append(r.Notes, fmt.Sprintf("benchmark %s is in the new run only (%s): ignored", n.Name, n.Path))
			}
		}
	}
	r.HolmFamily = decide(r.Benchmarks, diffs, opts)
	r.Verdict, r.Reasons = overall(r.Benchmarks, opts.Margin)
	return r, nil
}

// overall: INVALID if any benchmark is (the run could not be
// reproduced: no verdict on the others decides for it), else DIFFERENT if
// any is, else INCONCLUSIVE if any is, else REPRODUCED.
func overall(bs []Benchmark, margin float64) (string, []string) {
	var invalid, diff, inc []string
	for _, b := range bs {
		switch b.Verdict {
		case Invalid:
			invalid = append(invalid, b.Benchmark)
		case Different:
			name := b.Benchmark
			if len(b.NotComparable) > 0 {
				name += " (not comparable)"
			}
			diff = append(diff, name)
		case Inconclusive:
			inc = append(inc, b.Benchmark)
		}
	}
	switch {
	case len(invalid) > 0:
		return Invalid, []string{fmt.Sprintf("could not reproduce: %d of %d %s INVALID (too many infrastructure failures): %s", len(invalid), len(bs), plural(len(bs), "benchmark", "benchmarks"), strings.Join(invalid, ", "))}
	case len(diff) > 0:
		return Different, []string{fmt.Sprintf("%d of %d %s different: %s", len(diff), len(bs), plural(len(bs), "benchmark", "benchmarks"), strings.Join(diff, ", "))}
	case len(inc) > 0:
		return Inconclusive, []string{fmt.Sprintf("%d of %d %s inconclusive: %s", len(inc), len(bs), plural(len(bs), "benchmark", "benchmarks"), strings.Join(inc, ", "))}
	}
	return Reproduced, []string{fmt.Sprintf("%d %s within ±%.3f", len(bs), plural(len(bs), "benchmark", "benchmarks"), margin)}
}

// measure pairs one benchmark's runs and computes its numbers: the
// interval, the equivalence and difference tests (unadjusted), and the
// provenance differences with notes on what could not be compared. It
// returns the paired differences, nil when there are none; decide then
// gives the verdict.
func measure(name string, p, n *compare.Run, opts Options) (Benchmark, []float64, []Difference, []string) {
	b := Benchmark{Benchmark: name, Published: score(p), New: score(n), Metric: headline(p.Rows, n.Rows)}
	diffs, notes := diffProvenance(name, p, n)
	for _, d := range diffs {
		if d.Methodology {
			b.NotComparable = append(b.NotComparable, d.Field)
		}
	}
	// A run that did not measure its model cannot reproduce or be
	// reproduced: no numbers are compared.
	for _, reason := range []string{p.InvalidReason("the published run"), n.InvalidReason("the new run")} {
		if reason != "" {
			b.Verdict = Invalid
			b.Reasons = append(b.Reasons, "could not reproduce: "+reason)
		}
	}
	if b.Verdict == Invalid {
		return b, nil, diffs, notes
	}
	// Whatever the numbers, a benchmark that is not comparable is
	// DIFFERENT; without numbers the rest is INCONCLUSIVE.
	noNumbers := func(reason string) (Benchmark, []float64, []Difference, []string) {
		b.Reasons = append(b.Reasons, reason)
		b.Verdict = Inconclusive
		if len(b.NotComparable) > 0 {
			b.Verdict = Different
		}
		return b, nil, diffs, notes
	}
	if len(p.Rows) == 0 || len(n.Rows) == 0 {
		side := p.Path
		if len(p.Rows) > 0 {
			side = n.Path
		}
		return noNumbers(fmt.Sprintf("nothing to pair: %s has no %s rows", side, rundir.ResultsFile))
	}
	pr := compare.PairRows(p.Rows, n.Rows)
	b.Paired = len(pr.Base)
	if pr.OnlyBase > 0 || pr.OnlyCand > 0 {
		b.Reasons = append(b.Reasons, fmt.Sprintf("paired coverage %.1f%%: %d items pair, %d only in the published run, %d only in the new run; computed on the paired items",
			100*pr.Coverage(), b.Paired, pr.OnlyBase, pr.OnlyCand))
	}
	if len(pr.Changed) > 0 {
		b.Reasons = append(b.Reasons, fmt.Sprintf("%d paired items have a different expected answer in the two runs (first: %s): the datasets differ", len(pr.Changed), pr.Changed[0]))
	}
	if fp, fn := b.Published.FailureRate, b.New.FailureRate; math.Abs(fn-fp) >= opts.FailureShift {
		b.Reasons = append(b.Reasons, fmt.Sprintf("model-error rate %.1f%% (%d of %d scored samples) → %.1f%% (%d of %d): model errors count as reward 0",
			100*fp, b.Published.Failures, b.Published.ScoredSamples, 100*fn, b.New.Failures, b.New.ScoredSamples))
	}
	if ip, in := b.Published.InfraErrors, b.New.InfraErrors; ip+in > 0 {
		b.Reasons = append(b.Reasons, fmt.Sprintf("infrastructure failures, not scored: %d of %d samples published, %d of %d new; computed on the scored samples",
			ip, b.Published.Samples, in, b.New.Samples))
	}
	if b.Paired == 0 {
		return noNumbers(fmt.Sprintf("no item pairs: the published run's %d items and the new run's %d share no item_id", pr.NBase, pr.NCand))
	}

	pv, nv, _ := pr.Values(compare.MeanReward)
	d := make([]float64, len(pv))
	for i := range pv {
		d[i] = nv[i] - pv[i]
	}
	b.Delta = stats.Mean(d)
	c, se := adjusted(d)
	z := stats.NormalQuantile(1 - (1-opts.Level)/2)
	b.CI = Interval{Method: IntervalMethod, Level: opts.Level, Lo: c - z*se, Hi: c + z*se, Center: c, SE: se}
	b.Equivalence = tost(c, se, opts.Margin, opts.Alpha)
	b.Test = consistencyTest(pr, pv, nv, d, opts)
	b.Reasons = append(b.Reasons, fmt.Sprintf("%s %s → %s over %d paired items, difference %+.4f, %g%% CI [%+.4f, %+.4f]",
		b.Metric, fmtValue(stats.Mean(pv)), fmtValue(stats.Mean(nv)), b.Paired, b.Delta, 100*opts.Level, b.CI.Lo, b.CI.Hi))
	return b, d, diffs, notes
}

// tost is the two one-sided tests of |δ| < margin on the adjusted paired
// statistic, normal as the interval is: PLower = 1 − Φ((c + margin)/se)
// for H0 δ ≤ −margin, PUpper = Φ((c − margin)/se) for H0 δ ≥ +margin
// (PLower computed as Φ(−x), which keeps its precision far out).
// Both are below α exactly when c ∓ z₁₋α·se lies inside ±margin, the
// 1−2α interval reported with them.
func tost(c, se, margin, alpha float64) Equivalence {
	z := stats.NormalQuantile(1 - alpha)
	e := Equivalence{Name: TestTOST, Margin: margin, Level: 1 - 2*alpha, Lo: c - z*se, Hi: c + z*se}
	if se > 0 {
		e.PLower = stats.NormalCDF(-(c + margin) / se)
		e.PUpper = stats.NormalCDF((c - margin) / se)
	} else {
		// A degenerate statistic: the centre alone says.
		e.PLower, e.PUpper = step(c <= -margin), step(c >= margin)
	}
	e.P = max(e.PLower, e.PUpper)
	return e
}

func step(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// decide Holm-adjusts the equivalence and the difference p-values, each
// family over the benchmarks with paired differences (diffs[i] != nil),
// so that across the run the chance of any false REPRODUCED, and
// separately of any false DIFFERENT, stays at most α; then it gives each
// of them its verdict. It returns the family's names.
func decide(bs []Benchmark, diffs [][]float64, opts Options) []string {
	family := []string{}
	var idx []int
	var peq, pdiff []float64
	for i := range bs {
		if diffs[i] != nil {
			idx = append(idx, i)
			family = append(family, bs[i].Benchmark)
			peq = append(peq, bs[i].Equivalence.P)
			pdiff = append(pdiff, bs[i].Test.P)
		}
	}
	aeq, adiff := stats.Holm(peq), stats.Holm(pdiff)
	for k, i := range idx {
		b := &bs[i]
		b.Equivalence.PHolm, b.Test.PHolm = aeq[k], adiff[k]
		b.decide(diffs[i], len(idx), holmThreshold(peq, k, opts.Alpha), opts)
	}
	return family
}

// decide gives a benchmark with paired differences d its verdict,
// equivalence first: REPRODUCED when the equivalence test rejects at α
// (the interval lies inside ±margin), else DIFFERENT when the two-sided
// test does (significant, and the interval leaves the margin), else
// INCONCLUSIVE with what would decide it. m is the size of the Holm family
// and threshold the largest raw equivalence p-value Holm would accept for
// this benchmark, the others' as they are.
func (b *Benchmark) decide(d []float64, m int, threshold float64, opts Options) {
	e, t := b.Equivalence, b.Test
	holm := func(raw, adj float64) string {
		if m == 1 {
			return fmt.Sprintf("p = %.4g", raw)
		}
		return fmt.Sprintf("p = %.4g, Holm-adjusted over %d benchmarks %.4g", raw, m, adj)
	}
	interval := fmt.Sprintf("the %.4g%% interval [%+.4f, %+.4f]", 100*e.Level, e.Lo, e.Hi)
	equiv := fmt.Sprintf("equivalence (TOST) %s", holm(e.P, e.PHolm))
	diff := fmt.Sprintf("%s, %s", t.describe(), holm(t.P, t.PHolm))
	switch {
	case e.PHolm < opts.Alpha:
		b.Statistics = Reproduced
		b.Reasons = append(b.Reasons, fmt.Sprintf("within ±%g: %s lies inside it; %s < α = %g", opts.Margin, interval, equiv, opts.Alpha))
		if t.PHolm < opts.Alpha {
			b.Reasons = append(b.Reasons, fmt.Sprintf("the difference is significant (%s) but smaller than the margin: reproduced", diff))
		}
	case t.PHolm < opts.Alpha:
		b.Statistics = Different
		b.Reasons = append(b.Reasons, fmt.Sprintf("the runs differ: %s < α = %g, and %s reaches past ±%g (%s)", diff, opts.Alpha, interval, opts.Margin, equiv))
	default:
		b.Statistics = Inconclusive
		b.Reasons = append(b.Reasons, fmt.Sprintf("not shown within ±%g: %s reaches past it (%s ≥ α = %g); no significant difference (%s)",
			opts.Margin, interval, equiv, opts.Alpha, diff))
	}
	b.Verdict = b.Statistics
	if len(b.NotComparable) > 0 {
		// More items cannot make a different methodology comparable.
		b.Verdict = Different
		return
	}
	if b.Statistics == Inconclusive {
		b.Reasons = append(b.Reasons, b.decideHint(d, stats.NormalQuantile(1-threshold), opts.Margin))
	}
}

// holmThreshold is the largest value the j-th of ps could take and still
// be rejected at α by Holm's procedure, the others as they are: α/(m−k+1)
// at the best rank k that works. Holm rejects monotonically in each
// p-value, so the candidates are tried from the largest, α, down to α/m,
// which always works (rank 1).
func holmThreshold(ps []float64, j int, alpha float64) float64 {
	m := len(ps)
	q := slices.Clone(ps)
	for div := 1; div < m; div++ {
		t := alpha / float64(div)
		q[j] = math.Nextafter(t, 0)
		if stats.Holm(q)[j] < alpha {
			return t
		}
	}
	return alpha / float64(m)
}

// decideHint says what would show an INCONCLUSIVE benchmark REPRODUCED,
// its equivalence interval taken at z (the quantile of the level Holm
// would apply to it), and sets ItemsNeeded and RepeatsNeeded.
func (b *Benchmark) decideHint(d []float64, z, margin float64) string {
	m, _ := moments(d)
	if math.Abs(m) >= margin {
		return fmt.Sprintf("the observed difference %+.4f is itself at or past the margin ±%g: more items would more likely show the runs DIFFERENT than REPRODUCED", m, margin)
	}
	b.ItemsNeeded = itemsNeeded(d, z, margin)
	reps := min(b.Published.Repeats, b.New.Repeats)
	b.RepeatsNeeded = repeatsNeeded(d, max(reps, 1), z, margin)
	var s string
	if b.ItemsNeeded > 0 {
		s = fmt.Sprintf("about %d paired items (now %d) would bring the equivalence interval within ±%g if the per-item differences keep their mean and spread", b.ItemsNeeded, b.Paired, margin)
	} else {
		s = fmt.Sprintf("more than %d paired items would be needed to bring the equivalence interval within ±%g", maxItems, margin)
	}
	if b.RepeatsNeeded > 0 {
		s += fmt.Sprintf("; or about %d repeats per item (now %d) on the same items, since the items' differences look like sampling noise that averaging repeats reduces", b.RepeatsNeeded, max(reps, 1))
	}
	return s
}

// consistencyTest is the exact two-sided McNemar test when every paired
// item has one binary reward on each side, else the two-sided sign-flip
// permutation test on the per-item differences.
func consistencyTest(pr *compare.Paired, pv, nv, d []float64, opts Options) Test {
	binary := true
	for i := range pr.Base {
		if len(pr.Base[i].Rewards) != 1 || len(pr.Cand[i].Rewards) != 1 || !isBinary(pv[i]) || !isBinary(nv[i]) {
			binary = false
			break
		}
	}
	if binary {
		t := Test{Name: TestMcNemar}
		for i := range pv {
			switch {
			case pv[i] > nv[i]:
				t.Worse++
			case nv[i] > pv[i]:
				t.Better++
			}
		}
		t.Discordant = t.Worse + t.Better
		t.P = mcnemarTwoSided(t.Worse, t.Better)
		return t
	}
	return Test{Name: TestSignFlip, P: signFlipTwoSided(d, opts.Resamples, opts.Seed), Resamples: opts.Resamples, Seed: opts.Seed}
}

// describe names the test and its counts; decide adds the p-values.
func (t Test) describe() string {
	if t.Name == TestMcNemar {
		return fmt.Sprintf("exact McNemar, two-sided, on %d discordant items (%d worse, %d better)", t.Discordant, t.Worse, t.Better)
	}
	return fmt.Sprintf("sign-flip, two-sided, %d resamples", t.Resamples)
}

func isBinary(x float64) bool { return x == 0 || x == 1 }

// headline is pass@1 when both runs' rewards are all 0 or 1, else
// mean_reward; either way per item the mean reward over its repeats.
func headline(a, b []results.Row) string {
	if len(a) > 0 && len(b) > 0 && binaryRows(a) && binaryRows(b) {
		return compare.Pass1
	}
	return compare.MeanReward
}

func binaryRows(rows []results.Row) bool {
	for _, r := range rows {
		if !isBinary(r.Reward) {
			return false
		}
	}
	return true
}

// score is one run's headline over its scored items, with its counts.
func score(r *compare.Run) Score {
	v := r.Validity()
	s := Score{InfraErrors: v.InfraErrors, Invalid: v.Invalid}
	if len(r.Rows) == 0 {
		if r.Bundle != nil {
			s.Value = r.Bundle.Headline.Value
			s.Items, s.Repeats, s.Samples, s.ScoredSamples = r.Bundle.Items, r.Bundle.Repeats, r.Bundle.Samples, r.Bundle.ScoredSamples
			s.Failures, s.FailureRate = r.Bundle.Failures.Failed, r.Bundle.Failures.Rate
		}
		return s
	}
	items := compare.Items(r.Rows) // the scored rows
	means := make([]float64, len(items))
	for i, it := range items {
		means[i] = stats.Mean(it.Rewards)
		s.Repeats = max(s.Repeats, len(it.Rewards))
	}
	if len(items) > 0 {
		m := stats.Mean(means)
		s.Value = &m
	}
	s.Items, s.Samples = len(items), len(r.Rows)
	for i := range r.Rows {
		if !metrics.Scored(&r.Rows[i]) {
			continue
		}
		s.ScoredSamples++
		if r.Rows[i].ErrorCategory != "" {
			s.Failures++
		}
	}
	if s.ScoredSamples > 0 {
		s.FailureRate = float64(s.Failures) / float64(s.ScoredSamples)
	}
	return s
}

func fmtValue(v float64) string { return fmt.Sprintf("%.4f", v) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
