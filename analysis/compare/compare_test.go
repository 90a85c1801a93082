package compare

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
)

// rows builds a run: item i has rewards[i] over its repeats.
func rows(rewards [][]float64, category func(i int) string) []results.Row {
	var out []results.Row
	for i, rs := range rewards {
		for r, x := range rs {
			row := results.Row{Benchmark: "gsm8k", ItemID: fmt.Sprintf("item%04d", i), ItemIdx: int64(i), Repeat: int64(r),
				Reward: x, Expected: fmt.Sprint(i), Extracted: fmt.Sprint(i)}
			if category != nil {
				row.Category = category(i)
			}
			if x != 1 {
				row.Extracted = "wrong"
			}
			out = append(out, row)
		}
	}
	return out
}

// binary is n items with one repeat; correct(i) says which are right.
func binary(n int, correct func(i int) bool) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = []float64{0}
		if correct(i) {
			out[i][0] = 1
		}
	}
	return out
}

func run(name string, rs []results.Row) *Run {
	return &Run{Name: name, Path: name, Rows: rs, Meta: map[string]string{results.MetaBenchmarkHash: "sha256:same"}}
}

func mustCompare(t *testing.T, b, c []results.Row, opts Options) *Report {
	t.Helper()
	r, err := Compare(Pair{Name: "gsm8k", Base: run("base", b), Candidate: run("cand", c)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPairRowsCountsAndChanged(t *testing.T) {
	b := rows(binary(10, func(int) bool { return true }), nil)
	c := rows(binary(12, func(int) bool { return true }), nil)
	// The candidate lacks items 0 and 1 and has 10, 11 extra; item 5's
	// expected answer changed.
	c = c[2:]
	c[3].Expected = "changed" // item 5
	p := PairRows(b, c)
	if len(p.Base) != 8 || p.OnlyBase != 2 || p.OnlyCand != 2 || p.NBase != 10 || p.NCand != 10 {
		t.Fatalf("paired %d onlyBase %d onlyCand %d nBase %d nCand %d", len(p.Base), p.OnlyBase, p.OnlyCand, p.NBase, p.NCand)
	}
	if len(p.Changed) != 1 || p.Changed[0] != "item0005" {
		t.Fatalf("changed = %v, want [item0005]", p.Changed)
	}
	if got := p.Coverage(); got != 0.8 {
		t.Fatalf("coverage = %v, want 0.8", got)
	}
	for i := range p.Base {
		if p.Base[i].ID != p.Cand[i].ID {
			t.Fatalf("pair %d: %s vs %s", i, p.Base[i].ID, p.Cand[i].ID)
		}
	}
}

func TestRepeatsCollapseToMeanAndPass1(t *testing.T) {
	p := PairRows(rows([][]float64{{1, 0, 0.5, 0}}, nil), rows([][]float64{{1, 1, 1, 1}}, nil))
	if v, _ := p.Base[0].Value(MeanReward); v != 0.375 {
		t.Fatalf("mean_reward = %v, want 0.375", v)
	}
	if v, _ := p.Base[0].Value(Pass1); v != 0.5 {
		t.Fatalf("pass@1 = %v, want 0.5 (share of repeats with reward > 0)", v)
	}
	d, ok := p.RepeatDeltas(MeanReward)
	if !ok || len(d[0]) != 4 || d[0][1] != 1 {
		t.Fatalf("repeat deltas = %v %v", d, ok)
	}
}

func TestCoverageWarningKeepsVerdict(t *testing.T) {
	all := binary(100, func(i int) bool { return i%2 == 0 })
	b := rows(all, nil)
	c := rows(all[:80], nil) // 80% coverage
	opts := DefaultOptions()
	r := mustCompare(t, b, c, opts)
	if r.Pairing.Coverage != 0.8 || r.Pairing.OnlyInBaseline != 20 {
		t.Fatalf("pairing = %+v", r.Pairing)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "coverage 80.0% < 90%") {
		t.Fatalf("no coverage warning: %q", r.Warnings)
	}
	opts.MinCoverage = 0.8
	r2 := mustCompare(t, b, c, opts)
	if strings.Contains(strings.Join(r2.Warnings, "\n"), "coverage") {
		t.Fatalf("coverage warning at min-coverage 0.8: %q", r2.Warnings)
	}
	if r.Verdict != r2.Verdict {
		t.Fatalf("the coverage warning changed the verdict: %s vs %s", r.Verdict, r2.Verdict)
	}
}

func TestChangedItemsWarn(t *testing.T) {
	b := rows(binary(20, func(int) bool { return true }), nil)
	c := rows(binary(20, func(int) bool { return true }), nil)
	c[4].Expected, c[7].Expected = "x", "y"
	r := mustCompare(t, b, c, DefaultOptions())
	if r.Pairing.Changed != 2 || len(r.Pairing.ChangedItems) != 2 {
		t.Fatalf("changed = %d %v", r.Pairing.Changed, r.Pairing.ChangedItems)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "2 paired items have a different expected answer") {
		t.Fatalf("warnings = %q", r.Warnings)
	}
}

func TestNothingPairsIsRefused(t *testing.T) {
	b := rows(binary(5, func(int) bool { return true }), nil)
	c := rows(binary(5, func(int) bool { return true }), nil)
	for i := range c {
		c[i].ItemID = "other" + c[i].ItemID
	}
	_, err := Compare(Pair{Name: "gsm8k", Base: run("b", b), Candidate: run("c", c)}, DefaultOptions())
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "share no item_id") {
		t.Fatalf("err = %v, want a refusal", err)
	}
}

// Candidate identical to the baseline: PASS, no flips, p = 1.
func TestIdenticalCandidatePasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := binary(1000, func(int) bool { return rng.Float64() < 0.7 })
	r := mustCompare(t, rows(all, nil), rows(all, nil), DefaultOptions())
	if r.Verdict != Pass {
		t.Fatalf("verdict %s: %q", r.Verdict, r.VerdictReasons)
	}
	if r.Flips.Regressions != 0 || r.Flips.Improvements != 0 || r.Flips.BothCorrect+r.Flips.BothWrong != 1000 {
		t.Fatalf("flips = %+v", r.Flips)
	}
	if r.Test.Name != TestMcNemar || r.Test.P != 1 {
		t.Fatalf("test = %+v", r.Test)
	}
	if m := r.Metrics[0]; m.Metric != Pass1 || m.Delta != 0 || m.Correlation == nil || *m.Correlation != 1 {
		t.Fatalf("headline = %+v", m)
	}
}

// A candidate that loses 15 points on 1,000 items: BLOCK.
func TestFifteenPointDropBlocks(t *testing.T) {
	b := binary(1000, func(i int) bool { return i%100 < 80 })
	c := binary(1000, func(i int) bool { return i%100 < 65 })
	r := mustCompare(t, rows(b, nil), rows(c, nil), DefaultOptions())
	if r.Verdict != Block {
		t.Fatalf("verdict %s: %q", r.Verdict, r.VerdictReasons)
	}
	if r.Flips.Regressions != 150 || r.Flips.Improvements != 0 {
		t.Fatalf("flips = %+v", r.Flips)
	}
	if d := r.Metrics[0].Delta; math.Abs(d+0.15) > 1e-12 {
		t.Fatalf("delta = %v", d)
	}
	if len(r.Flips.RegressionExemplars) != 3 || r.Flips.RegressionExemplars[0].ItemIdx != 65 {
		t.Fatalf("exemplars = %+v", r.Flips.RegressionExemplars)
	}
	if r.Test.P >= 1e-6 {
		t.Fatalf("p = %v", r.Test.P)
	}
}

func TestFlipsAndExemplarLimit(t *testing.T) {
	// 4 regressions (0-3), 2 improvements (4-5), 3 both correct, 1 both wrong.
	b := binary(10, func(i int) bool { return i < 4 || i >= 6 && i < 9 })
	c := binary(10, func(i int) bool { return i >= 4 && i < 9 })
	opts := DefaultOptions()
	opts.Exemplars = 2
	r := mustCompare(t, rows(b, nil), rows(c, nil), opts)
	f := r.Flips
	if f.Regressions != 4 || f.Improvements != 2 || f.BothCorrect != 3 || f.BothWrong != 1 {
		t.Fatalf("flips = %+v", f)
	}
	if len(f.RegressionExemplars) != 2 || len(f.ImprovementExemplars) != 2 {
		t.Fatalf("exemplars %d/%d, want 2/2", len(f.RegressionExemplars), len(f.ImprovementExemplars))
	}
	e := f.RegressionExemplars[0]
	if e.ItemID != "item0000" || e.Expected != "0" || e.BaselineExtracted != "0" || e.CandidateExtracted != "wrong" {
		t.Fatalf("exemplar = %+v", e)
	}
	// McNemar on b=4, c=2: P(X ≥ 4 | n=6) = 22/64.
	if r.Test.Name != TestMcNemar || math.Abs(r.Test.P-22.0/64) > 1e-6 {
		t.Fatalf("test = %+v", r.Test)
	}
}

func TestCorrectAboveThreshold(t *testing.T) {
	// Per-item means 0.5 and 0.75: correct only above the threshold.
	b := rows([][]float64{{1, 0}, {1, 1}}, nil)
	c := rows([][]float64{{1, 1}, {1, 0}}, nil)
	opts := DefaultOptions()
	r := mustCompare(t, b, c, opts)
	if r.Flips.Regressions != 1 || r.Flips.Improvements != 1 {
		t.Fatalf("at 0.5: %+v", r.Flips)
	}
	opts.CorrectAbove = 0.4
	r = mustCompare(t, b, c, opts)
	if r.Flips.BothCorrect != 2 {
		t.Fatalf("at 0.4: %+v", r.Flips)
	}
}

func TestTestSelection(t *testing.T) {
	bin := binary(50, func(i int) bool { return i%3 != 0 })
	rep := make([][]float64, 50)
	for i := range rep {
		rep[i] = []float64{1, 0, 1, float64(i % 2)}
	}
	cases := []struct {
		name   string
		b, c   [][]float64
		test   string
		want   string
		reason string
	}{
		{"binary auto", bin, bin, TestAuto, TestMcNemar, "auto: every paired per-item value is 0 or 1"},
		{"repeats auto", rep, rep, TestAuto, TestPermutation, "auto: per-item values are not all 0 or 1"},
		{"sign", rep, bin, TestSign, TestSign, "requested with --test sign"},
		{"mcnemar forced", rep, rep, TestMcNemar, TestMcNemar, "on the flips at correct-above"},
	}
	for _, tc := range cases {
		opts := DefaultOptions()
		opts.Test = tc.test
		opts.Resamples = 2000
		r := mustCompare(t, rows(tc.b, nil), rows(tc.c, nil), opts)
		if r.Test.Name != tc.want || !strings.Contains(r.Test.Reason, tc.reason) {
			t.Errorf("%s: test %s (%s), want %s (%s)", tc.name, r.Test.Name, r.Test.Reason, tc.want, tc.reason)
		}
	}
	// The permutation test is seeded: the same p twice, and it follows
	// --seed.
	opts := DefaultOptions()
	opts.Resamples = 2000
	c := make([][]float64, 50)
	for i := range c {
		c[i] = []float64{1, 0, float64(i % 3 / 2), 0}
	}
	r1 := mustCompare(t, rows(rep, nil), rows(c, nil), opts)
	r2 := mustCompare(t, rows(rep, nil), rows(c, nil), opts)
	if r1.Test.P != r2.Test.P || r1.Test.Resamples != 2000 || r1.Test.Seed != 42 {
		t.Fatalf("permutation not reproducible: %+v vs %+v", r1.Test, r2.Test)
	}
}

func TestSignTestCounts(t *testing.T) {
	b := rows([][]float64{{1, 1}, {1, 0}, {0, 0}, {1, 1}}, nil)
	c := rows([][]float64{{1, 0}, {0, 0}, {0, 0}, {1, 1}}, nil)
	opts := DefaultOptions()
	opts.Test = TestSign
	r := mustCompare(t, b, c, opts)
	if r.Test.Positive != 2 || r.Test.Negative != 0 || math.Abs(r.Test.P-0.25) > 1e-9 {
		t.Fatalf("sign test = %+v", r.Test)
	}
}

func TestClusteredIntervalWhenCategories(t *testing.T) {
	b := binary(200, func(i int) bool { return i%2 == 0 })
	c := binary(200, func(i int) bool { return i%3 == 0 })
	cat := func(i int) string { return fmt.Sprintf("cat%d", i%5) }
	r := mustCompare(t, rows(b, cat), rows(c, cat), DefaultOptions())
	if ci := r.Metrics[0].CI; ci.Method != "clt_clustered" || ci.Clusters != 5 || ci.DF != 4 {
		t.Fatalf("ci = %+v", ci)
	}
	// Student t with G−1 = 4 df: t_{0.975, 4} = 2.7764451051977987.
	if ci := r.Metrics[0].CI; math.Abs((ci.Hi-ci.Lo)/2-2.7764451051977987*ci.SE) > 1e-12 {
		t.Fatalf("half-width %v, want t(4)·SE = %v", (ci.Hi-ci.Lo)/2, 2.7764451051977987*ci.SE)
	}
	// One category, or one item without: 0/1 rewards, one repeat:
	// Bonett & Price's adjusted Wald interval.
	r = mustCompare(t, rows(b, func(int) string { return "one" }), rows(c, nil), DefaultOptions())
	if ci := r.Metrics[0].CI; ci.Method != "adjusted_wald" || ci.DF != 0 {
		t.Fatalf("ci = %+v", ci)
	}
	half := rows(b, func(i int) string { return map[bool]string{true: "a", false: ""}[i > 0] })
	r = mustCompare(t, half, rows(c, nil), DefaultOptions())
	if ci := r.Metrics[0].CI; ci.Method != "adjusted_wald" {
		t.Fatalf("ci with an uncategorised item = %+v", ci)
	}
}

func TestCorrelationUndefined(t *testing.T) {
	b := binary(10, func(int) bool { return true })
	c := binary(10, func(i int) bool { return i%2 == 0 })
	r := mustCompare(t, rows(b, nil), rows(c, nil), DefaultOptions())
	m := r.Metrics[0]
	if m.Correlation != nil || !strings.Contains(m.CorrelationNote, "baseline scores every paired item the same") {
		t.Fatalf("correlation %v note %q", m.Correlation, m.CorrelationNote)
	}
	if m.RelativeChange == nil || math.Abs(*m.RelativeChange+0.5) > 1e-12 {
		t.Fatalf("relative change = %v", m.RelativeChange)
	}
}

func TestScorerMetricsPaired(t *testing.T) {
	b := rows(binary(20, func(int) bool { return true }), nil)
	c := rows(binary(20, func(i int) bool { return i > 1 }), nil)
	for i := range b {
		b[i].Scores = map[string]float64{"scorer:exact_match": 1}
		c[i].Scores = map[string]float64{"scorer:exact_match": c[i].Reward}
	}
	c[0].Scores["scorer:only_cand"] = 1
	r := mustCompare(t, b, c, DefaultOptions())
	if len(r.Metrics) != 2 || r.Metrics[1].Metric != "scorer:exact_match" || math.Abs(r.Metrics[1].Delta+0.1) > 1e-12 {
		t.Fatalf("metrics = %+v", r.Metrics)
	}
}

func TestMDEIsMillers(t *testing.T) {
	b := binary(400, func(i int) bool { return i%2 == 0 })
	c := binary(400, func(i int) bool { return i%4 < 2 })
	r := mustCompare(t, rows(b, nil), rows(c, nil), DefaultOptions())
	d := make([]float64, 400)
	for i := range d {
		d[i] = c[i][0] - b[i][0]
	}
	m, s := 0.0, 0.0
	for _, x := range d {
		m += x / 400
	}
	for _, x := range d {
		s += (x - m) * (x - m) / 399
	}
	want := (1.959963984540054 + 0.8416212335729143) * math.Sqrt(s) / 20
	if r.MDE.Value == nil || math.Abs(*r.MDE.Value-want) > 1e-9 {
		t.Fatalf("MDE = %v, want %v", r.MDE.Value, want)
	}
}

func fp(x float64) *float64 { return &x }

func TestDecideEveryBranch(t *testing.T) {
	cases := []struct {
		name string
		in   verdictInput
		want string
		text string
	}{
		{"significant and past max-drop", verdictInput{n: 1000, delta: -0.15, p: 1e-9, mde: fp(0.03), sd: 0.3, maxDrop: 0.05, alpha: 0.05}, Block, "exceeds max-drop"},
		{"significant within max-drop", verdictInput{n: 5000, delta: -0.02, p: 0.001, mde: fp(0.01), sd: 0.3, maxDrop: 0.05, alpha: 0.05}, Warn, "real, but tolerated"},
		{"not significant, underpowered", verdictInput{n: 50, delta: -0.01, p: 0.3, mde: fp(0.12), sd: 0.3, maxDrop: 0.05, alpha: 0.05}, Inconclusive, "need ~"},
		{"not significant, underpowered, estimate past max-drop", verdictInput{n: 50, delta: -0.08, p: 0.06, mde: fp(0.12), sd: 0.3, maxDrop: 0.05, alpha: 0.05}, Inconclusive, "cannot tell it from noise"},
		{"not significant, powered, estimate past max-drop", verdictInput{n: 3000, delta: -0.06, p: 0.07, mde: fp(0.02), sd: 0.4, maxDrop: 0.05, alpha: 0.05}, Warn, "not a PASS"},
		{"not significant, powered, small drop", verdictInput{n: 3000, delta: -0.005, p: 0.3, mde: fp(0.02), sd: 0.4, maxDrop: 0.05, alpha: 0.05}, Pass, "within max-drop"},
		{"improvement", verdictInput{n: 3000, delta: 0.05, p: 1, mde: fp(0.02), sd: 0.4, maxDrop: 0.05, alpha: 0.05}, Pass, "does not drop"},
		{"one item", verdictInput{n: 1, delta: 0, p: 1, maxDrop: 0.05, alpha: 0.05}, Inconclusive, "MDE undefined"},
	}
	for _, tc := range cases {
		v, reasons := decide(tc.in)
		if v != tc.want || !strings.Contains(strings.Join(reasons, " "), tc.text) {
			t.Errorf("%s: %s %q, want %s containing %q", tc.name, v, reasons, tc.want, tc.text)
		}
	}
	// Property: never PASS when the point estimate drops more than max-drop.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		in := verdictInput{n: 2 + rng.IntN(5000), delta: rng.Float64()*0.4 - 0.2, p: rng.Float64(), mde: fp(rng.Float64() * 0.2),
			sd: rng.Float64(), maxDrop: rng.Float64() * 0.1, alpha: 0.05}
		if v, _ := decide(in); v == Pass && -in.delta > in.maxDrop {
			t.Fatalf("PASS with drop %v > max-drop %v: %+v", -in.delta, in.maxDrop, in)
		}
	}
}

func TestNeededItemsReachesMaxDrop(t *testing.T) {
	sd, effect := 0.4, 0.05
	n := NeededItems(sd, effect)
	z := 1.959963984540054 + 0.8416212335729143
	if got := z * sd / math.Sqrt(float64(n)); got > effect {
		t.Fatalf("MDE at %d items = %v > %v", n, got, effect)
	}
	if got := z * sd / math.Sqrt(float64(n-1)); got <= effect {
		t.Fatalf("%d items would do already (MDE %v)", n-1, got)
	}
}

func TestMethodologyDiff(t *testing.T) {
	b := run("b", nil)
	c := run("c", nil)
	b.Meta[results.MetaBenchmarkHash] = "sha256:aaa"
	c.Meta[results.MetaBenchmarkHash] = "sha256:bbb"
	b.Bundle = &metrics.Bundle{Methodology: map[string]any{"repeats": 1.0, "solver": map[string]any{"max_tokens": 512.0}, "params": map[string]any{"x": "1"}}}
	c.Bundle = &metrics.Bundle{Methodology: map[string]any{"repeats": 4.0, "solver": map[string]any{"max_tokens": 512.0}}}
	m := CheckMethodology(b, c)
	if m.Same || len(m.Differences) != 2 {
		t.Fatalf("m = %+v", m)
	}
	if d := m.Differences[0]; d.Path != "params" || d.Baseline != `{"x":"1"}` || d.Candidate != "(absent)" {
		t.Fatalf("diff[0] = %+v", d)
	}
	if d := m.Differences[1]; d.Path != "repeats" || d.Baseline != "1" || d.Candidate != "4" {
		t.Fatalf("diff[1] = %+v", d)
	}
	// Equal recorded methodology, different hash: say so, with versions.
	c.Bundle.Methodology = b.Bundle.Methodology
	b.Meta[results.MetaScoring], c.Meta[results.MetaScoring] = "3", "4"
	m = CheckMethodology(b, c)
	if m.Same || len(m.Differences) != 0 || !strings.Contains(m.Note, "recorded methodology matches") || !strings.Contains(m.Note, "scoring version 3 vs 4") {
		t.Fatalf("m = %+v", m)
	}
	// Same hash: same, whatever the models.
	c.Meta[results.MetaBenchmarkHash] = "sha256:aaa"
	c.Meta[results.MetaModel] = "other-model"
	if m := CheckMethodology(b, c); !m.Same {
		t.Fatalf("m = %+v", m)
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate(strings.Repeat("é", 100), 80); len([]rune(got)) != 81 || !strings.HasSuffix(got, "…") {
		t.Fatalf("got %q", got)
	}
	if got := Truncate("a\nb", 80); got != "a b" {
		t.Fatalf("got %q", got)
	}
}

// TestAggregateOnlyIsRefused: a run whose harness wrote only aggregate
// scores has no items; compare says so rather than pair nothing.
func TestAggregateOnlyIsRefused(t *testing.T) {
	b := run("base", rows(binary(5, func(int) bool { return true }), nil))
	c := run("cand", nil)
	c.Meta[results.MetaAggregateOnly] = "true"
	_, err := Compare(Pair{Name: "mmlu", Base: b, Candidate: c}, DefaultOptions())
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "cand is aggregate-only (its harness wrote no per-item results)") {
		t.Fatalf("err = %v, want an aggregate-only refusal", err)
	}
}

// Identical runs get no zero-width interval: the adjusted interval adds a
// discordant pair (one repeat of k: ±1/k) each way. 300 items × 1 repeat
// (Bonett–Price, z): ±1.959964·√2/302 = ±1.959964·0.0046828 =
// ±0.0091782; × 4 repeats (t): ±t(299)·√2/4/302 = ±1.96793·0.0011707.
// Clustered by 5 categories (clustered SE 0) the floor √2/302 with t(4) =
// 2.77645.
func TestIdenticalRunsNotZeroWidth(t *testing.T) {
	one := binary(300, func(i int) bool { return i%3 != 0 })
	four := make([][]float64, 300)
	for i := range four {
		four[i] = []float64{1, 0, 1, float64(i % 2)}
	}
	cat := func(i int) string { return fmt.Sprintf("cat%d", i%5) }
	for _, tc := range []struct {
		name   string
		b, c   []results.Row
		method DeltaMethod
		half   float64
	}{
		{"1 repeat", rows(one, nil), rows(one, nil), "adjusted_wald", 1.959963984540054 * math.Sqrt2 / 302},
		{"4 repeats", rows(four, nil), rows(four, nil), "adjusted_t", 1.9679296690656667 * math.Sqrt2 / 4 / 302},
		{"5 categories", rows(one, cat), rows(one, cat), "clt_clustered", 2.7764451051977987 * math.Sqrt2 / 302},
	} {
		ci := mustCompare(t, tc.b, tc.c, DefaultOptions()).Metrics[0].CI
		if ci.Method != tc.method || math.Abs(ci.Hi-tc.half) > 1e-12 || math.Abs(ci.Lo+tc.half) > 1e-12 {
			t.Errorf("%s: %+v, want %s ±%v", tc.name, ci, tc.method, tc.half)
		}
	}
}
