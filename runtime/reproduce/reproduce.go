// Package reproduce decides whether a new run of a published recipe
// reproduces the published run: per benchmark, the items are paired by
// content id, the difference new − published gets an adjusted paired
// interval and a two-sided test of consistency, and the methodology
// (benchmark hash, dataset digest, scoring version, model) must match.
// A reproduction is methodological consistency with clear provenance,
// not bit-identical numbers: infrastructure differences (serving engine,
// GPUs, nel version) are listed for the reader and never decide alone.
// `nel reproduce sha256:…` is the command around it.
package reproduce

import (
	"fmt"
	"math"
	"strings"

	"github.com/nel-eval/nel/runtime/compare"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/stats"
)

// ReportVersion is the version of the JSON report.
const ReportVersion = 1

// Verdicts.
const (
	Reproduced   = "REPRODUCED"
	Different    = "DIFFERENT"
	Inconclusive = "INCONCLUSIVE"
)

// Test names.
const (
	TestMcNemar  = "mcnemar_exact_two_sided"
	TestSignFlip = "sign_flip_two_sided"
)

// IntervalMethod names the adjusted paired interval.
const IntervalMethod = "adjusted_paired"

// Options configure the decision.
type Options struct {
	// Margin is the largest difference, absolute in reward units, that
	// still counts as the same result (0.03 = 3 points).
	Margin float64
	// Alpha is the two-sided test's level; Level the interval's.
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
	// Benchmarks are the published run's benchmarks, by name.
	Benchmarks []Benchmark `json:"benchmarks"`
	// Provenance lists every provenance field the runs disagree on.
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
	Metric  string   `json:"metric"`
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"`

	Published Score `json:"published"`
	New       Score `json:"new"`
	// Paired is the number of items on both sides; Delta the mean over
	// them of new − published per-item values.
	Paired int      `json:"paired"`
	Delta  float64  `json:"delta"`
	CI     Interval `json:"ci"`
	Test   Test     `json:"test"`
	// ItemsNeeded is how many paired items would likely decide an
	// INCONCLUSIVE benchmark; RepeatsNeeded how many repeats per item on
	// the same items would.
	ItemsNeeded   int `json:"items_needed,omitempty"`
	RepeatsNeeded int `json:"repeats_needed,omitempty"`
}

// Score is one run's side of a benchmark.
type Score struct {
	// Value is the headline over the run's items (the mean of the item
	// means); nil when the run has no rows.
	Value       *float64 `json:"value"`
	Items       int      `json:"items"`
	Repeats     int      `json:"repeats"`
	Samples     int      `json:"samples"`
	Failures    int      `json:"failures"`
	FailureRate float64  `json:"failure_rate"`
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

// Test is the two-sided test that both runs measure the same thing.
type Test struct {
	Name string  `json:"name"`
	P    float64 `json:"p"`
	// McNemar: Discordant pairs, Worse (right in the published run, wrong
	// in the new one) and Better.
	Discordant int `json:"discordant,omitempty"`
	Worse      int `json:"worse,omitempty"`
	Better     int `json:"better,omitempty"`
	// Sign flip: resamples and seed.
	Resamples int    `json:"resamples,omitempty"`
	Seed      uint64 `json:"seed,omitempty"`
}

// ExitCode is the CLI's exit status: 0 REPRODUCED, 1 DIFFERENT,
// 2 INCONCLUSIVE.
func (r *Report) ExitCode() int {
	switch r.Verdict {
	case Reproduced:
		return 0
	case Different:
		return 1
	}
	return 2
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
		Margin: opts.Margin, Alpha: opts.Alpha, Level: opts.Level}
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
			continue
		}
		delete(byName, n.Name)
		b, diffs := compareBenchmark(p.Name, p, n, opts)
		r.Benchmarks = append(r.Benchmarks, b)
		r.Provenance = append(r.Provenance, diffs...)
	}
	if !single {
		for _, n := range nw.Runs {
			if _, ok := byName[n.Name]; ok {
				r.Notes = append(r.Notes, fmt.Sprintf("benchmark %s is in the new run only (%s): ignored", n.Name, n.Path))
			}
		}
	}
	r.Verdict, r.Reasons = overall(r.Benchmarks, opts.Margin)
	return r, nil
}

// overall: DIFFERENT if any benchmark is, else INCONCLUSIVE if any is,
// else REPRODUCED.
func overall(bs []Benchmark, margin float64) (string, []string) {
	var diff, inc []string
	for _, b := range bs {
		switch b.Verdict {
		case Different:
			diff = append(diff, b.Benchmark)
		case Inconclusive:
			inc = append(inc, b.Benchmark)
		}
	}
	switch {
	case len(diff) > 0:
		return Different, []string{fmt.Sprintf("%d of %d %s different: %s", len(diff), len(bs), plural(len(bs), "benchmark", "benchmarks"), strings.Join(diff, ", "))}
	case len(inc) > 0:
		return Inconclusive, []string{fmt.Sprintf("%d of %d %s inconclusive: %s", len(inc), len(bs), plural(len(bs), "benchmark", "benchmarks"), strings.Join(inc, ", "))}
	}
	return Reproduced, []string{fmt.Sprintf("%d %s within ±%.3f", len(bs), plural(len(bs), "benchmark", "benchmarks"), margin)}
}

func compareBenchmark(name string, p, n *compare.Run, opts Options) (Benchmark, []Difference) {
	b := Benchmark{Benchmark: name, Published: score(p), New: score(n), Metric: headline(p.Rows, n.Rows)}
	diffs, notes := diffProvenance(name, p, n)
	var methodology, info []string
	for _, d := range diffs {
		if d.Methodology {
			methodology = append(methodology, d.Text())
		} else {
			info = append(info, d.Text())
		}
	}
	// Methodology first: it decides before any number does.
	b.Reasons = append(b.Reasons, methodology...)

	if len(p.Rows) == 0 || len(n.Rows) == 0 {
		side := p.Path
		if len(p.Rows) > 0 {
			side = n.Path
		}
		b.Reasons = append(b.Reasons, fmt.Sprintf("nothing to pair: %s has no results.parquet rows", side))
		b.Verdict = Inconclusive
		if len(methodology) > 0 {
			b.Verdict = Different
		}
		b.Reasons = append(append(b.Reasons, info...), notes...)
		return b, diffs
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
		b.Reasons = append(b.Reasons, fmt.Sprintf("failure rate %.1f%% (%d of %d samples) → %.1f%% (%d of %d): failed samples count as reward 0",
			100*fp, b.Published.Failures, b.Published.Samples, 100*fn, b.New.Failures, b.New.Samples))
	}
	if b.Paired == 0 {
		b.Reasons = append(b.Reasons, fmt.Sprintf("no item pairs: the published run's %d items and the new run's %d share no item_id", pr.NBase, pr.NCand))
		b.Verdict = Inconclusive
		if len(methodology) > 0 {
			b.Verdict = Different
		}
		b.Reasons = append(append(b.Reasons, info...), notes...)
		return b, diffs
	}

	pv, nv, _ := pr.Values(compare.MeanReward)
	d := make([]float64, len(pv))
	for i := range pv {
		d[i] = nv[i] - pv[i]
	}
	b.Delta = stats.Mean(d)
	z := stats.NormalQuantile(1 - (1-opts.Level)/2)
	c, se := adjusted(d, z)
	b.CI = Interval{Method: IntervalMethod, Level: opts.Level, Lo: c - z*se, Hi: c + z*se, Center: c, SE: se}
	b.Test = consistencyTest(pr, pv, nv, d, opts)

	numbers := fmt.Sprintf("%s %s → %s over %d paired items, difference %+.4f, %g%% CI [%+.4f, %+.4f]; %s",
		b.Metric, fmtValue(stats.Mean(pv)), fmtValue(stats.Mean(nv)), b.Paired, b.Delta, 100*opts.Level, b.CI.Lo, b.CI.Hi, b.Test.describe())
	switch {
	case len(methodology) > 0:
		b.Verdict = Different
		b.Reasons = append(b.Reasons, numbers)
	case b.Test.P < opts.Alpha:
		b.Verdict = Different
		b.Reasons = append(b.Reasons, fmt.Sprintf("the runs differ: %s < α = %g", numbers, opts.Alpha))
	case b.CI.Lo >= -opts.Margin && b.CI.Hi <= opts.Margin:
		b.Verdict = Reproduced
		b.Reasons = append(b.Reasons, fmt.Sprintf("%s: the interval lies within ±%g", numbers, opts.Margin))
	default:
		b.Verdict = Inconclusive
		b.Reasons = append(b.Reasons, fmt.Sprintf("%s: not significant, but the interval reaches past ±%g", numbers, opts.Margin))
		b.Reasons = append(b.Reasons, b.decideHint(d, z, opts.Margin))
	}
	b.Reasons = append(append(b.Reasons, info...), notes...)
	return b, diffs
}

// decideHint says what would decide an INCONCLUSIVE benchmark and sets
// ItemsNeeded and RepeatsNeeded.
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
		s = fmt.Sprintf("about %d paired items (now %d) would bring the interval within ±%g if the per-item differences keep their mean and spread", b.ItemsNeeded, b.Paired, margin)
	} else {
		s = fmt.Sprintf("more than %d paired items would be needed to bring the interval within ±%g", maxItems, margin)
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

func (t Test) describe() string {
	if t.Name == TestMcNemar {
		return fmt.Sprintf("exact McNemar p = %.4g (two-sided; %d discordant: %d worse, %d better)", t.P, t.Discordant, t.Worse, t.Better)
	}
	return fmt.Sprintf("sign-flip p = %.4g (two-sided, %d resamples)", t.P, t.Resamples)
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

// score is one run's headline over all its items, with its counts.
func score(r *compare.Run) Score {
	var s Score
	if len(r.Rows) == 0 {
		if r.Bundle != nil {
			s.Value = r.Bundle.Headline.Value
			s.Items, s.Repeats, s.Samples = r.Bundle.Items, r.Bundle.Repeats, r.Bundle.Samples
			s.Failures, s.FailureRate = r.Bundle.Failures.Failed, r.Bundle.Failures.Rate
		}
		return s
	}
	items := compare.Items(r.Rows)
	means := make([]float64, len(items))
	for i, it := range items {
		means[i] = stats.Mean(it.Rewards)
		s.Repeats = max(s.Repeats, len(it.Rewards))
	}
	v := stats.Mean(means)
	s.Value = &v
	s.Items, s.Samples = len(items), len(r.Rows)
	for _, row := range r.Rows {
		if row.ErrorCategory != "" {
			s.Failures++
		}
	}
	s.FailureRate = float64(s.Failures) / float64(s.Samples)
	return s
}

func fmtValue(v float64) string { return fmt.Sprintf("%.4f", v) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
