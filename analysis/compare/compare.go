package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/stats"
)

// ReportVersion is the version of the JSON report.
const ReportVersion = 1

// Verdicts, from best to worst. INVALID is no verdict on the candidate:
// one of the runs has more infrastructure failures than its
// max_error_rate, so it did not measure its model, and no comparison of
// it is given.
const (
	Pass         = "PASS"
	Inconclusive = "INCONCLUSIVE"
	Warn         = "WARN"
	Block        = "BLOCK"
	Invalid      = "INVALID"
)

// Severity orders verdicts for multi-benchmark runs: the worst wins, and
// INVALID is worse than any verdict (a suite with an unmeasured benchmark
// has no verdict).
func Severity(v string) int {
	switch v {
	case Pass:
		return 0
	case Inconclusive:
		return 1
	case Warn:
		return 2
	case Block:
		return 3
	case Invalid:
		return 4
	}
	return -1
}

// Tests.
const (
	TestAuto        = "auto"
	TestMcNemar     = "mcnemar"
	TestSign        = "sign"
	TestPermutation = "permutation"
)

// Power analysis constants: two-sided α = 0.05, 80% power.
const (
	mdeAlpha = 0.05
	mdePower = 0.8
)

// Options configure a comparison.
type Options struct {
	// MaxDrop is the largest tolerated drop of the headline, absolute, in
	// reward units (0.05 = 5 points).
	MaxDrop float64
	// Alpha is the exact test's significance level (one-sided).
	Alpha float64
	// CorrectAbove is the per-item mean reward above which an item counts
	// as correct for flips.
	CorrectAbove float64
	// Exemplars is how many flips of each kind to show.
	Exemplars int
	// Test is auto, mcnemar, sign or permutation.
	Test string
	// Resamples and Seed drive the permutation test.
	Resamples int
	Seed      uint64
	// MinCoverage: paired items under this share of the larger side's
	// items give a warning.
	MinCoverage float64
	// Level of the intervals (0.95).
	Level float64
}

// DefaultOptions are the CLI's defaults.
func DefaultOptions() Options {
	return Options{MaxDrop: 0.05, Alpha: 0.05, CorrectAbove: 0.5, Exemplars: 3, Test: TestAuto,
		Resamples: stats.DefaultResamples, Seed: stats.DefaultSeed, MinCoverage: 0.9, Level: 0.95}
}

// Report is one benchmark's comparison: the JSON `nel compare -f json`
// prints in single mode (report_version 1).
type Report struct {
	ReportVersion int         `json:"report_version"`
	Benchmark     string      `json:"benchmark"`
	Baseline      RunInfo     `json:"baseline"`
	Candidate     RunInfo     `json:"candidate"`
	Methodology   Methodology `json:"methodology"`
	Pairing       Pairing     `json:"pairing"`
	// Metrics: the headline first (pass@1 for binary rewards, else
	// mean_reward; per item, the mean reward over its repeats), then
	// every scorer:* present on both sides.
	Metrics []MetricDelta `json:"metrics"`
	Flips   *Flips        `json:"flips,omitempty"`
	Test    *Test         `json:"test,omitempty"`
	MDE     *MDE          `json:"mde,omitempty"`

	Verdict        string     `json:"verdict"`
	VerdictReasons []string   `json:"verdict_reasons"`
	Thresholds     Thresholds `json:"thresholds"`
	Warnings       []string   `json:"warnings,omitempty"`
}

// MultiReport is what `nel compare -f json` prints for run directories
// holding several benchmarks: each pair's report, the worst verdict.
type MultiReport struct {
	ReportVersion int       `json:"report_version"`
	Verdict       string    `json:"verdict"`
	Benchmarks    []*Report `json:"benchmarks"`
	Warnings      []string  `json:"warnings,omitempty"`
}

// RunInfo identifies one side.
type RunInfo struct {
	Path           string `json:"path"`
	Model          string `json:"model,omitempty"`
	RecipeHash     string `json:"recipe_hash,omitempty"`
	BenchmarkHash  string `json:"benchmark_hash,omitempty"`
	ScoringVersion string `json:"scoring_version,omitempty"`
	DatasetDigest  string `json:"dataset_digest,omitempty"`
	// Items and Samples are what ran; ScoredSamples the samples compared
	// (infrastructure failures are not scored).
	Items         int  `json:"items"`
	Samples       int  `json:"samples"`
	ScoredSamples int  `json:"scored_samples"`
	Simulated     bool `json:"simulated,omitempty"`
	// Source is "NeMo Evaluator" when the side is a NeMo Evaluator run
	// (its recipe_hash is then NeMo's config_hash, "nemo-config:…");
	// absent for a nel run.
	Source string `json:"source,omitempty"`
	// Validity is the run's infrastructure failures against its
	// max_error_rate.
	Validity metrics.Validity `json:"validity"`
}

// Pairing counts how the items matched.
type Pairing struct {
	Paired          int `json:"paired"`
	OnlyInBaseline  int `json:"only_in_baseline"`
	OnlyInCandidate int `json:"only_in_candidate"`
	// Changed is paired items whose expected answer differs.
	Changed      int      `json:"changed"`
	ChangedItems []string `json:"changed_items,omitempty"` // the first 10
	// Coverage is Paired over the larger side's item count.
	Coverage float64 `json:"coverage"`
	// Method says how items were matched when a side is a NeMo Evaluator
	// run (by dataset index, checked); absent when both sides are nel
	// runs, paired by content id.
	Method string `json:"method,omitempty"`
}

// MetricDelta is one metric over the paired items.
type MetricDelta struct {
	Metric    string  `json:"metric"`
	N         int     `json:"n"`
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	// Delta is mean(candidate − baseline) over the paired items.
	Delta float64  `json:"delta"`
	CI    *DeltaCI `json:"delta_ci,omitempty"`
	// RelativeChange is Delta / Baseline; null when the baseline is 0.
	RelativeChange *float64 `json:"relative_change"`
	// Correlation is Pearson's r between the runs' per-item values; null
	// (with CorrelationNote saying why) when it is undefined.
	Correlation     *float64 `json:"correlation"`
	CorrelationNote string   `json:"correlation_note,omitempty"`
}

// DeltaCI is an interval on a mean paired difference.
type DeltaCI struct {
	// Method (DeltaMethod) is "adjusted_wald" (Bonett & Price's interval for 0/1
	// rewards, one repeat), "adjusted_t" (Student t on the per-item
	// differences with two pseudo-differences ±h, PairedCI; "t" without
	// them in reports written before),
	// "clt_clustered" (clustered standard error by category, Student t
	// with G−1 df; normal in reports written before DF was set) or
	// "unpaired_mover_jeffreys" (runs whose items cannot be paired, both
	// headlines proportions over independent items or repeats: Jeffreys'
	// limits on each side's effective sample size combined by MOVER,
	// Newcombe 2011), "unpaired_mover" (the headlines' own intervals
	// combined by MOVER, Newcombe 1998), or
	// "unpaired_normal" (normal, the two runs' standard errors combined as
	// independent samples: runs whose items cannot be paired).
	Method   DeltaMethod `json:"method"`
	Level    float64     `json:"level"`
	Lo       float64     `json:"lo"`
	Hi       float64     `json:"hi"`
	SE       float64     `json:"se"`
	DF       int         `json:"df,omitempty"`
	Clusters int         `json:"clusters,omitempty"`
}

// Label says which interval it is.
func (c *DeltaCI) Label() string {
	switch c.Method {
	case DeltaClustered:
		return fmt.Sprintf("clustered by category, %d clusters", c.Clusters)
	case DeltaUnpairedNormal:
		return "unpaired, normal"
	case DeltaUnpairedMOVER:
		return "unpaired, from the two intervals"
	case DeltaUnpairedMOVERJeffreys:
		return "unpaired, from the two intervals (Jeffreys)"
	case DeltaAdjustedT:
		return fmt.Sprintf("adjusted t, %d df", c.DF)
	case DeltaAdjustedWald:
		return "adjusted Wald (Bonett–Price)"
	}
	return fmt.Sprintf("t, %d df", c.DF)
}

// Flips is the contingency of per-item correctness.
type Flips struct {
	CorrectAbove float64 `json:"correct_above"`
	BothCorrect  int     `json:"both_correct"`
	// Regressions: correct in the baseline, not in the candidate.
	Regressions          int            `json:"regressions"`
	Improvements         int            `json:"improvements"`
	BothWrong            int            `json:"both_wrong"`
	RegressionExemplars  []FlipExemplar `json:"regression_exemplars,omitempty"`
	ImprovementExemplars []FlipExemplar `json:"improvement_exemplars,omitempty"`
}

// FlipExemplar is one item that flipped.
type FlipExemplar struct {
	ItemID             string  `json:"item_id"`
	ItemIdx            int64   `json:"item_idx"`
	Category           string  `json:"category,omitempty"`
	Expected           string  `json:"expected"`
	BaselineReward     float64 `json:"baseline_reward"`
	CandidateReward    float64 `json:"candidate_reward"`
	BaselineExtracted  string  `json:"baseline_extracted"`
	CandidateExtracted string  `json:"candidate_extracted"`
	// Responses are the first repeat's, truncated to 80 characters + "…";
	// empty when no trajectories were found.
	BaselineResponse  string `json:"baseline_response,omitempty"`
	CandidateResponse string `json:"candidate_response,omitempty"`
}

// Test is the exact test of "the candidate is worse".
type Test struct {
	Name        string  `json:"name"` // mcnemar, sign, permutation
	Reason      string  `json:"reason"`
	Alternative string  `json:"alternative"`
	P           float64 `json:"p"`
	Alpha       float64 `json:"alpha"`
	Significant bool    `json:"significant"`
	// McNemar: B regressions, C improvements. Sign: Positive (baseline
	// better), Negative. Permutation: resamples and seed.
	B         int    `json:"b,omitempty"`
	C         int    `json:"c,omitempty"`
	Positive  int    `json:"positive,omitempty"`
	Negative  int    `json:"negative,omitempty"`
	Resamples int    `json:"resamples,omitempty"`
	Seed      uint64 `json:"seed,omitempty"`
}

// MDE is the minimum detectable effect of this comparison (Miller 2024):
// (z_0.975 + z_0.8)·sd(delta)/√n, in reward units (absolute, the scale of
// max_drop). It replaces NeMo's 2.8/√n_discordant.
type MDE struct {
	Value   *float64 `json:"value"`
	Units   string   `json:"units"`
	SDDelta float64  `json:"sd_delta"`
	N       int      `json:"n"`
	Alpha   float64  `json:"alpha"`
	Power   float64  `json:"power"`
}

// Thresholds are the options the verdict used.
type Thresholds struct {
	MaxDrop      float64 `json:"max_drop"`
	Alpha        float64 `json:"alpha"`
	CorrectAbove float64 `json:"correct_above"`
	MinCoverage  float64 `json:"min_coverage"`
}

// Compare compares one pair of runs. It refuses (a *UsageError) when
// nothing pairs; the methodology check is the caller's (CheckMethodology).
func Compare(p Pair, opts Options) (*Report, error) {
	b, c := p.Base, p.Candidate
	r := &Report{
		ReportVersion: ReportVersion,
		Benchmark:     p.Name,
		Baseline:      runInfo(b),
		Candidate:     runInfo(c),
		Methodology:   CheckMethodology(b, c),
		Thresholds:    Thresholds{MaxDrop: opts.MaxDrop, Alpha: opts.Alpha, CorrectAbove: opts.CorrectAbove, MinCoverage: opts.MinCoverage},
	}
	// An INVALID run did not measure its model: no comparison is given,
	// whatever else could be said.
	for _, reason := range []string{b.InvalidReason("the baseline"), c.InvalidReason("the candidate")} {
		if reason != "" {
			r.Verdict = Invalid
			r.VerdictReasons = append(r.VerdictReasons, reason)
		}
	}
	if r.Verdict == Invalid {
		r.VerdictReasons = append(r.VerdictReasons, "No comparison is given on an INVALID run: fix the infrastructure failures and run it again.")
		return r, nil
	}
	for _, run := range []*Run{b, c} {
		if run.Meta[results.MetaAggregateOnly] == "true" {
			return nil, refuse("%s: %s is aggregate-only (its harness wrote no per-item results): a paired comparison, its interval and its test need items", p.Name, run.Path)
		}
	}
	if p.Unpaired != "" {
		return unpaired(r, p, opts)
	}
	if len(b.Rows) == 0 || len(c.Rows) == 0 {
		return nil, refuse("%s: nothing to pair: %s has no %s rows", p.Name, map[bool]string{true: b.Path, false: c.Path}[len(b.Rows) == 0], rundir.ResultsFile)
	}
	pr := PairRows(b.Rows, c.Rows)
	r.Pairing = Pairing{Paired: len(pr.Base), OnlyInBaseline: pr.OnlyBase, OnlyInCandidate: pr.OnlyCand,
		Changed: len(pr.Changed), Coverage: round(pr.Coverage(), 4)}
	r.Pairing.ChangedItems = pr.Changed[:min(10, len(pr.Changed))]
	r.Pairing.Method = cmp.Or(b.PairedBy, c.PairedBy)
	if len(pr.Base) == 0 {
		return nil, refuse("%s: no item pairs: the baseline's %d items and the candidate's %d share no item_id (different datasets?)", p.Name, pr.NBase, pr.NCand)
	}
	if r.Pairing.Coverage < opts.MinCoverage {
		r.Warnings = append(r.Warnings, fmt.Sprintf("only %d of %d items pair (coverage %.1f%% < %.0f%%): %d only in the baseline, %d only in the candidate; the comparison covers the paired items only",
			len(pr.Base), max(pr.NBase, pr.NCand), 100*r.Pairing.Coverage, 100*opts.MinCoverage, pr.OnlyBase, pr.OnlyCand))
	}
	if len(pr.Changed) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d paired items have a different expected answer in the two runs (same item_id): the datasets differ", len(pr.Changed)))
	}
	r.addNotes(p)

	// Metrics: the headline (per item the mean reward) and scorer:*.
	headline := MeanReward
	if binaryRows(b.Rows) && binaryRows(c.Rows) {
		headline = Pass1
	}
	var deltas []float64
	for i, m := range append([]string{headline}, sharedScorers(pr)...) {
		metric := m
		if i == 0 {
			metric = MeanReward // for binary rewards pass@1 = mean reward
		}
		bv, cv, ok := pr.Values(metric)
		if !ok {
			continue
		}
		md := metricDelta(m, bv, cv, pr, opts.Level)
		r.Metrics = append(r.Metrics, md)
		if i == 0 {
			deltas = make([]float64, len(bv))
			for j := range bv {
				deltas[j] = cv[j] - bv[j]
			}
		}
	}

	bv, cv, _ := pr.Values(MeanReward)
	r.Flips = flips(pr, bv, cv, opts)
	if r.Flips.RegressionExemplars != nil || r.Flips.ImprovementExemplars != nil {
		addResponses(r.Flips, b, c)
	}
	r.Test = exactTest(bv, cv, r.Flips, opts)
	r.MDE = mde(deltas)

	head := r.Metrics[0]
	r.Verdict, r.VerdictReasons = decide(verdictInput{
		n: len(deltas), delta: head.Delta, p: r.Test.P, test: r.Test.Name, mde: r.MDE.Value, sd: r.MDE.SDDelta,
		maxDrop: opts.MaxDrop, alpha: opts.Alpha, regressions: r.Flips.Regressions, improvements: r.Flips.Improvements,
	})
	return r, nil
}

// addNotes adds what the pair's sources and methodology check say.
func (r *Report) addNotes(p Pair) {
	r.Warnings = append(r.Warnings, p.Notes...)
	if r.Methodology.Note != "" && r.Methodology.Same {
		r.Warnings = append(r.Warnings, r.Methodology.Note)
	}
}

func runInfo(r *Run) RunInfo {
	info := RunInfo{Path: r.Path, Model: r.Model(), RecipeHash: r.RecipeHash(), BenchmarkHash: r.BenchmarkHash(),
		ScoringVersion: r.ScoringVersion(), DatasetDigest: r.DatasetDigest(), Samples: len(r.Rows), Simulated: r.Simulated(),
		Validity: r.Validity(), Source: r.Source}
	ids := map[string]bool{}
	for i := range r.Rows {
		ids[r.Rows[i].ItemID] = true
		if metrics.Scored(&r.Rows[i]) {
			info.ScoredSamples++
		}
	}
	info.Items = len(ids)
	if len(r.Rows) == 0 && r.Bundle != nil {
		info.Items, info.Samples, info.ScoredSamples = r.Bundle.Items, r.Bundle.Samples, r.Bundle.ScoredSamples
	}
	return info
}

func binaryRows(rows []results.Row) bool {
	for _, r := range rows {
		if r.Reward != 0 && r.Reward != 1 {
			return false
		}
	}
	return true
}

func sharedScorers(p *Paired) []string {
	seen := map[string]bool{}
	for _, it := range p.Base {
		for k := range it.Scores {
			seen[k] = true
		}
	}
	var out []string
	for k := range seen {
		if !strings.HasPrefix(k, "scorer:") {
			continue
		}
		if _, _, ok := p.Values(k); ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// PairedCI is the interval on mean(deltas), never of zero width: two runs
// that agree on every item are not thereby shown to be equal. Unclustered
// it is the adjusted centre and standard error of stats.AdjustedPaired
// (pseudo-differences ±h): with 0/1 rewards and one repeat (h = 1, every
// difference −1, 0 or 1) exactly Bonett & Price's adjusted Wald interval
// with z ("adjusted_wald", as nel reproduce's), otherwise with Student t
// at n−1 df ("adjusted_t"; z under-covers means of few items). Clustered
// by category when clusters is set: the clustered SE with t at G−1 df as
// the headline's (with z it covered 93.5% at 20 clusters in nel's
// coverage suite), floored at √2·h/(n+2), the adjusted SE of identical
// runs (a floor only: the larger of two noisy SEs would over-cover). h is
// the resolution of the per-item values (Paired.Resolution). Nil with
// fewer than two deltas.
func PairedCI(deltas []float64, clusters []int, nClusters int, level, h float64) *DeltaCI {
	if len(deltas) < 2 {
		return nil
	}
	n := float64(len(deltas))
	m := stats.Mean(deltas)
	if clusters != nil {
		se, g := stats.ClusteredSE(deltas, clusters)
		if g >= 2 {
			se = max(se, math.Sqrt2*h/(n+2))
			q := stats.TQuantile(1-(1-level)/2, float64(g-1))
			return &DeltaCI{Method: DeltaClustered, Level: level, Lo: m - q*se, Hi: m + q*se, SE: se, Clusters: max(g, nClusters), DF: g - 1}
		}
	}
	center, se := stats.AdjustedPaired(n, m, stats.Variance(deltas)*(n-1)/n, h)
	if h == 1 && !slices.ContainsFunc(deltas, func(d float64) bool { return d != 0 && d != 1 && d != -1 }) {
		z := stats.NormalQuantile(1 - (1-level)/2)
		return &DeltaCI{Method: DeltaAdjustedWald, Level: level, Lo: center - z*se, Hi: center + z*se, SE: se}
	}
	q := stats.TQuantile(1-(1-level)/2, n-1)
	return &DeltaCI{Method: DeltaAdjustedT, Level: level, Lo: center - q*se, Hi: center + q*se, SE: se, DF: len(deltas) - 1}
}

func metricDelta(name string, bv, cv []float64, pr *Paired, level float64) MetricDelta {
	d := make([]float64, len(bv))
	for i := range bv {
		d[i] = cv[i] - bv[i]
	}
	md := MetricDelta{Metric: name, N: len(bv), Baseline: stats.Mean(bv), Candidate: stats.Mean(cv), Delta: stats.Mean(d)}
	cl, nc := pr.Clusters()
	md.CI = PairedCI(d, cl, nc, level, pr.Resolution(bv, cv))
	if md.Baseline != 0 {
		rel := md.Delta / md.Baseline
		md.RelativeChange = &rel
	}
	md.Correlation, md.CorrelationNote = pearson(bv, cv)
	return md
}

// pearson is the correlation of the runs' per-item values; undefined
// (nil, with the reason) for fewer than 3 items or a constant side.
func pearson(x, y []float64) (*float64, string) {
	if len(x) < 3 {
		return nil, fmt.Sprintf("undefined: %d paired items (needs 3)", len(x))
	}
	mx, my := stats.Mean(x), stats.Mean(y)
	var sxy, sxx, syy float64
	for i := range x {
		a, b := x[i]-mx, y[i]-my
		sxy += a * b
		sxx += a * a
		syy += b * b
	}
	switch {
	case sxx == 0 && syy == 0:
		return nil, "undefined: both runs score every paired item the same"
	case sxx == 0:
		return nil, "undefined: the baseline scores every paired item the same"
	case syy == 0:
		return nil, "undefined: the candidate scores every paired item the same"
	}
	r := sxy / math.Sqrt(sxx*syy)
	r = max(-1, min(1, r))
	return &r, ""
}

func flips(pr *Paired, bv, cv []float64, opts Options) *Flips {
	f := &Flips{CorrectAbove: opts.CorrectAbove}
	for i := range bv {
		bo, co := bv[i] > opts.CorrectAbove, cv[i] > opts.CorrectAbove
		ex := func() FlipExemplar {
			b, c := pr.Base[i], pr.Cand[i]
			cat := b.Category
			if cat == "" {
				cat = c.Category
			}
			return FlipExemplar{ItemID: b.ID, ItemIdx: b.Idx, Category: cat, Expected: b.Expected,
				BaselineReward: round(bv[i], 4), CandidateReward: round(cv[i], 4),
				BaselineExtracted: b.Extracted, CandidateExtracted: c.Extracted}
		}
		switch {
		case bo && co:
			f.BothCorrect++
		case bo:
			f.Regressions++
			if len(f.RegressionExemplars) < opts.Exemplars {
				f.RegressionExemplars = append(f.RegressionExemplars, ex())
			}
		case co:
			f.Improvements++
			if len(f.ImprovementExemplars) < opts.Exemplars {
				f.ImprovementExemplars = append(f.ImprovementExemplars, ex())
			}
		default:
			f.BothWrong++
		}
	}
	return f
}

// addResponses fills the exemplars' responses from trajectories.parquet
// (the first repeat's), when both runs have one.
func addResponses(f *Flips, b, c *Run) {
	want := map[string]bool{}
	for _, e := range append(slices.Clone(f.RegressionExemplars), f.ImprovementExemplars...) {
		want[e.ItemID] = true
	}
	responses := func(r *Run) map[string]string {
		if r.Trajectories == "" {
			return nil
		}
		ts, _, err := results.ReadTrajectories(r.Trajectories)
		if err != nil {
			return nil
		}
		first := map[string]int64{}
		out := map[string]string{}
		for _, t := range ts {
			if !want[t.ItemID] {
				continue
			}
			if rep, ok := first[t.ItemID]; ok && rep <= t.Repeat {
				continue
			}
			first[t.ItemID] = t.Repeat
			out[t.ItemID] = Truncate(t.Response, 80)
		}
		return out
	}
	br, cr := responses(b), responses(c)
	for _, list := range [][]FlipExemplar{f.RegressionExemplars, f.ImprovementExemplars} {
		for i := range list {
			list[i].BaselineResponse = br[list[i].ItemID]
			list[i].CandidateResponse = cr[list[i].ItemID]
		}
	}
}

// Truncate shortens s to n characters plus "…", on one line.
func Truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n]) + "…"
}

// exactTest runs the one-sided test of "the candidate is worse".
func exactTest(bv, cv []float64, f *Flips, opts Options) *Test {
	t := &Test{Name: opts.Test, Alpha: opts.Alpha, Alternative: "one-sided; H0: the candidate does as well as the baseline, H1: it does worse"}
	if t.Name == "" || t.Name == TestAuto {
		binary := true
		for i := range bv {
			if !isBinary(bv[i]) || !isBinary(cv[i]) {
				binary = false
				break
			}
		}
		if binary {
			t.Name = TestMcNemar
			t.Reason = "auto: every paired per-item value is 0 or 1 (one repeat, or all repeats agree), so McNemar's exact test on the discordant pairs"
		} else {
			t.Name = TestPermutation
			t.Reason = "auto: per-item values are not all 0 or 1 (repeats or partial credit), so a paired sign-flip permutation test on the per-item differences"
		}
	} else {
		t.Reason = "requested with --test " + t.Name
	}
	switch t.Name {
	case TestMcNemar:
		t.B, t.C = f.Regressions, f.Improvements
		t.P = stats.McNemar(t.B, t.C)
		if !strings.HasPrefix(t.Reason, "auto") {
			t.Reason += fmt.Sprintf(" (on the flips at correct-above %g)", opts.CorrectAbove)
		}
	case TestSign:
		for i := range bv {
			switch d := bv[i] - cv[i]; {
			case d > 0:
				t.Positive++
			case d < 0:
				t.Negative++
			}
		}
		t.P = stats.SignTest(t.Positive, t.Negative)
	default: // permutation
		t.Name = TestPermutation
		d := make([]float64, len(bv))
		for i := range bv {
			d[i] = bv[i] - cv[i]
		}
		t.Resamples, t.Seed = opts.Resamples, opts.Seed
		t.P = stats.SignFlip(d, opts.Resamples, opts.Seed)
	}

	t.Significant = t.P < opts.Alpha
	return t
}

func isBinary(x float64) bool { return x == 0 || x == 1 }

// mdeMultiplier is z_{1−α/2} + z_{power}.
func mdeMultiplier() float64 {
	return stats.NormalQuantile(1-mdeAlpha/2) + stats.NormalQuantile(mdePower)
}

func mde(deltas []float64) *MDE {
	m := &MDE{Units: "reward (absolute, the scale of --max-drop)", N: len(deltas), Alpha: mdeAlpha, Power: mdePower}
	if len(deltas) < 2 {
		return m
	}
	m.SDDelta = math.Sqrt(stats.Variance(deltas))
	v := mdeMultiplier() * m.SDDelta / math.Sqrt(float64(len(deltas)))
	m.Value = &v
	return m
}

// NeededItems is how many paired items a design with per-item difference
// SD sd needs for its MDE to reach effect: ((z_0.975+z_0.8)·sd/effect)².
func NeededItems(sd, effect float64) int {
	if effect <= 0 {
		return 0
	}
	x := mdeMultiplier() * sd / effect
	return int(math.Ceil(x * x))
}

type verdictInput struct {
	n            int
	delta        float64 // mean(candidate − baseline), reward units
	p            float64 // one-sided, the candidate is worse
	test         string
	mde          *float64
	sd           float64
	maxDrop      float64
	alpha        float64
	regressions  int
	improvements int
}

// decide is NeMo's _compute_verdict, fixed:
//
//   - the effect compared with max-drop is the mean paired delta, in
//     reward units (NeMo compares Cohen's d for the permutation test);
//   - the power check is the MDE of the paired design, in the same units:
//     underpowered when MDE > max-drop (NeMo: 2.8/√n_discordant > 2·max-drop);
//   - significant = p < alpha, p one-sided in the regression direction.
//
// Then, with drop = −delta:
//
//	significant and drop > max-drop            → BLOCK
//	significant (drop ≤ max-drop)              → WARN: a real but tolerated drop
//	not significant, drop > max-drop:
//	    underpowered                           → INCONCLUSIVE (need ~N items)
//	    powered                                → WARN: the point estimate is
//	                                             past max-drop, so never PASS
//	not significant, underpowered              → INCONCLUSIVE (need ~N items)
//	otherwise                                  → PASS
//
// The verdict never says PASS when the point estimate already drops more
// than max-drop.
func decide(in verdictInput) (string, []string) {
	drop := -in.delta
	sig := in.p < in.alpha
	underpowered := in.mde != nil && *in.mde > in.maxDrop
	if in.mde == nil {
		underpowered = true // fewer than two items: no power at all
	}
	pText := fmt.Sprintf("%s p = %.4g (one-sided test of H0 the candidate does as well against H1 it does worse, α = %g)", in.test, in.p, in.alpha)
	dropText := fmt.Sprintf("mean paired delta %+.4f", in.delta)
	mdeText := "MDE undefined (fewer than 2 paired items)"
	if in.mde != nil {
		mdeText = fmt.Sprintf("MDE %.4f at 80%% power", *in.mde)
	}
	need := func() string {
		if in.mde == nil || in.sd == 0 {
			return "add paired items"
		}
		return fmt.Sprintf("need ~%d paired items (from the observed SD of the per-item deltas, %.4f) to detect a drop of %g", NeededItems(in.sd, in.maxDrop), in.sd, in.maxDrop)
	}
	flipsText := fmt.Sprintf("%d regressions vs %d improvements", in.regressions, in.improvements)
	switch {
	case sig && drop > in.maxDrop:
		return Block, []string{
			fmt.Sprintf("Significant regression: %s (%s).", pText, flipsText),
			fmt.Sprintf("The drop %.4f (%s) exceeds max-drop %g.", drop, dropText, in.maxDrop),
		}
	case sig:
		return Warn, []string{
			fmt.Sprintf("Significant regression: %s (%s).", pText, flipsText),
			fmt.Sprintf("The drop %.4f (%s) is within max-drop %g: real, but tolerated.", drop, dropText, in.maxDrop),
		}
	case underpowered:
		reasons := []string{fmt.Sprintf("Not significant: %s (%s).", pText, flipsText)}
		if drop > in.maxDrop {
			reasons = append(reasons, fmt.Sprintf("The point estimate drops %.4f, more than max-drop %g, but the comparison cannot tell it from noise.", drop, in.maxDrop))
		}
		reasons = append(reasons, fmt.Sprintf("Underpowered: %s exceeds max-drop %g over %d paired items; %s.", mdeText, in.maxDrop, in.n, need()))
		return Inconclusive, reasons
	case drop > in.maxDrop:
		return Warn, []string{
			fmt.Sprintf("Not significant: %s (%s).", pText, flipsText),
			fmt.Sprintf("But the point estimate drops %.4f, more than max-drop %g (%s): not a PASS.", drop, in.maxDrop, mdeText),
		}
	}
	reasons := []string{fmt.Sprintf("No significant regression: %s (%s).", pText, flipsText)}
	if drop > 0 {
		reasons = append(reasons, fmt.Sprintf("The drop %.4f (%s) is within max-drop %g, and the comparison could detect %g (%s).", drop, dropText, in.maxDrop, in.maxDrop, mdeText))
	} else {
		reasons = append(reasons, fmt.Sprintf("The candidate does not drop (%s); %s.", dropText, mdeText))
	}
	return Pass, reasons
}

func round(x float64, dp int) float64 {
	p := math.Pow(10, float64(dp))
	return math.Round(x*p) / p
}
