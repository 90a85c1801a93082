package gate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/stats"
)

var itemIDs = func() []string {
	ids := make([]string, 5000)
	for i := range ids {
		ids[i] = fmt.Sprintf("item%05d", i)
	}
	return ids
}()

// rowsOf builds rows: item i's rewards over its repeats.
func rowsOf(rewards [][]float64, category func(int) string) []results.Row {
	n := 0
	for _, r := range rewards {
		n += len(r)
	}
	out := make([]results.Row, 0, n)
	for i, rs := range rewards {
		for r, x := range rs {
			row := results.Row{ItemID: itemIDs[i], ItemIdx: int64(i), Repeat: int64(r), Reward: x}
			if category != nil {
				row.Category = category(i)
			}
			out = append(out, row)
		}
	}
	return out
}

// accuracy gives n single-repeat items, the first round(acc·n) correct.
func accuracy(n int, acc float64) [][]float64 {
	out := make([][]float64, n)
	k := int(math.Round(acc * float64(n)))
	for i := range out {
		out[i] = []float64{0}
		if i < k {
			out[i][0] = 1
		}
	}
	return out
}

func pair(name string, b, c []results.Row) compare.Pair {
	meta := map[string]string{results.MetaBenchmarkHash: "sha256:" + name}
	return compare.Pair{Name: name,
		Base:      &compare.Run{Name: name, Path: "base/" + name, Rows: b, Meta: meta},
		Candidate: &compare.Run{Name: name, Path: "cand/" + name, Rows: c, Meta: meta}}
}

func ptr[T any](v T) *T { return &v }

func policy(benchmarks map[string]Rule) *Policy {
	return &Policy{Path: "policy.yaml", Version: 1, Defaults: Rule{Metric: ptr("mean_reward")}, Benchmarks: benchmarks}
}

func evaluateT(t *testing.T, p *Policy, pairs []compare.Pair, opts Options) *Report {
	t.Helper()
	r, err := Evaluate(p, pairs, nil, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func result(t *testing.T, r *Report, name string) *Result {
	t.Helper()
	for _, x := range r.Benchmarks {
		if x.Benchmark == name {
			return x
		}
	}
	t.Fatalf("no result for %s", name)
	return nil
}

func hasReason(x *Result, s string) bool { return strings.Contains(strings.Join(x.Reasons, "\n"), s) }

func TestStatuses(t *testing.T) {
	n := 2000
	base := rowsOf(accuracy(n, 0.80), nil)
	cases := []struct {
		name   string
		rule   Rule
		cand   []results.Row
		status string
		reason string
		abs    bool
		rel    bool
	}{
		{"identical → PASS", Rule{Tier: ptr(Critical), MaxDrop: ptr(0.01)}, base, StatusPass, "95% CI on damage [-0.0014, 0.0014] is within threshold 0.0100", false, false},
		{"drop 10 pp → BREACH", Rule{Tier: ptr(Critical), MaxDrop: ptr(0.02)}, rowsOf(accuracy(n, 0.70), nil), StatusBreach, "exceeds threshold 0.0200", true, false},
		{"drop 1 pp vs 1 pp → straddles", Rule{MaxDrop: ptr(0.01)}, rowsOf(accuracy(n, 0.79), nil), StatusInsufficient, "straddles threshold 0.0100", false, false},
		{"relative rule", Rule{MaxDrop: ptr(0.5), MaxRelativeDrop: ptr(0.05)}, rowsOf(accuracy(n, 0.70), nil), StatusBreach, "Relative drop 12.5% exceeds threshold 5.0%", false, true},
		{"relative rule guarded off (baseline ≥ guard)", Rule{MaxDrop: ptr(0.5), MaxRelativeDrop: ptr(0.05), RelativeGuardBelow: ptr(0.5)}, rowsOf(accuracy(n, 0.70), nil), StatusPass, "within threshold 0.5000", false, false},
		{"relative rule under the guard", Rule{MaxDrop: ptr(0.5), MaxRelativeDrop: ptr(0.05), RelativeGuardBelow: ptr(0.9)}, rowsOf(accuracy(n, 0.70), nil), StatusBreach, "(baseline 0.8000 < guard 0.9000)", false, true},
		{"lower is better: a rise is damage", Rule{MaxDrop: ptr(0.02), Direction: ptr(LowerIsBetter)}, rowsOf(accuracy(n, 0.90), nil), StatusBreach, "exceeds threshold 0.0200", true, false},
		{"lower is better: a fall is fine", Rule{MaxDrop: ptr(0.02), Direction: ptr(LowerIsBetter)}, rowsOf(accuracy(n, 0.70), nil), StatusPass, "is within threshold", false, false},
	}
	for _, tc := range cases {
		rep := evaluateT(t, policy(map[string]Rule{"b": tc.rule}), []compare.Pair{pair("b", base, tc.cand)}, DefaultOptions())
		x := result(t, rep, "b")
		if x.Status != tc.status || !hasReason(x, tc.reason) || x.AbsoluteBreached != tc.abs || x.RelativeBreached != tc.rel {
			t.Errorf("%s: status %s abs %v rel %v reasons %q; want %s %v %v %q", tc.name, x.Status, x.AbsoluteBreached, x.RelativeBreached, x.Reasons, tc.status, tc.abs, tc.rel, tc.reason)
		}
		if x.NPaired != n {
			t.Errorf("%s: n_paired %d", tc.name, x.NPaired)
		}
	}
}

func TestFewPairsFallsBack(t *testing.T) {
	b, c := rowsOf(accuracy(9, 0.8), nil), rowsOf(accuracy(9, 0.2), nil)
	// No bundles: INSUFFICIENT_EVIDENCE with the reason.
	rep := evaluateT(t, policy(map[string]Rule{"b": {}}), []compare.Pair{pair("b", b, c)}, DefaultOptions())
	x := result(t, rep, "b")
	if x.Status != StatusInsufficient || !hasReason(x, "Only 9 paired items (need at least 10)") || !hasReason(x, "No bundle score") {
		t.Fatalf("status %s %q", x.Status, x.Reasons)
	}
	if rep.Verdict != Inconclusive || !strings.Contains(strings.Join(rep.VerdictReasons, " "), "Action: re-run with more items") {
		t.Fatalf("verdict %s %q", rep.Verdict, rep.VerdictReasons)
	}

	// With bundles: their (unpaired) intervals; a clear breach is a
	// breach, a clear pass of a gated benchmark stays undecided, and an
	// advisory benchmark without intervals is judged on its point estimate.
	bundle := func(v, lo, hi float64, ci bool) *metrics.Bundle {
		s := metrics.Score{Metric: "mean_reward", Value: &v, N: 9}
		if ci {
			s.CLT = &metrics.Interval{Method: "clt", Level: 0.95, Lo: lo, Hi: hi}
		}
		return &metrics.Bundle{Metrics: []metrics.Score{s}}
	}
	p := pair("b", b, c)
	p.Base.Bundle, p.Candidate.Bundle = bundle(0.8, 0.7, 0.9, true), bundle(0.2, 0.1, 0.3, true)
	rep = evaluateT(t, policy(map[string]Rule{"b": {}}), []compare.Pair{p}, DefaultOptions())
	if x := result(t, rep, "b"); x.Status != StatusBreach || !hasReason(x, "Fell back to the bundles' scores") || !strings.HasPrefix(x.CIMethod, "unpaired") {
		t.Fatalf("fallback breach: %s %q %s", x.Status, x.Reasons, x.CIMethod)
	}
	p.Candidate.Bundle = bundle(0.8, 0.79, 0.81, true)
	p.Base.Bundle = bundle(0.8, 0.795, 0.805, true)
	rep = evaluateT(t, policy(map[string]Rule{"b": {MaxDrop: ptr(0.05)}}), []compare.Pair{p}, DefaultOptions())
	if x := result(t, rep, "b"); x.Status != StatusInsufficient || !hasReason(x, "Unpaired numbers cannot pass a gated benchmark") {
		t.Fatalf("fallback pass: %s %q", x.Status, x.Reasons)
	}
	p.Base.Bundle, p.Candidate.Bundle = bundle(0.8, 0, 0, false), bundle(0.7, 0, 0, false)
	rep = evaluateT(t, policy(map[string]Rule{"b": {Tier: ptr(Advisory), MaxDrop: ptr(0.05)}}), []compare.Pair{p}, DefaultOptions())
	if x := result(t, rep, "b"); x.Status != StatusBreach || !hasReason(x, "Absolute drop 0.1000 exceeds threshold 0.0500") {
		t.Fatalf("advisory point estimate: %s %q", x.Status, x.Reasons)
	}
	if rep.Verdict != Go || rep.VerdictReasons[0] != "No gated benchmarks evaluated" {
		t.Fatalf("advisory breach must not gate: %s %q", rep.Verdict, rep.VerdictReasons)
	}
	// Gated, no interval at all: not decided on a point estimate.
	rep = evaluateT(t, policy(map[string]Rule{"b": {MaxDrop: ptr(0.05)}}), []compare.Pair{p}, DefaultOptions())
	if x := result(t, rep, "b"); x.Status != StatusInsufficient || !hasReason(x, "not decided on a point estimate") {
		t.Fatalf("gated without interval: %s %q", x.Status, x.Reasons)
	}
	// Only NeMo's bootstrap (a parity figure, not a confidence claim): no
	// interval either, though the bootstrap ends would clear the breach.
	boot := func(v, lo, hi float64) *metrics.Bundle {
		b := bundle(v, 0, 0, false)
		b.Metrics[0].Bootstrap = &metrics.Interval{Method: "bootstrap_percentile", Level: 0.95, Lo: lo, Hi: hi}
		return b
	}
	p.Base.Bundle, p.Candidate.Bundle = boot(0.8, 0.79, 0.81), boot(0.2, 0.19, 0.21)
	rep = evaluateT(t, policy(map[string]Rule{"b": {MaxDrop: ptr(0.05)}}), []compare.Pair{p}, DefaultOptions())
	if x := result(t, rep, "b"); x.DeltaCILower != nil || x.Status != StatusInsufficient {
		t.Fatalf("gated on the bootstrap: %s %q %v", x.Status, x.Reasons, x.DeltaCILower)
	}
}

func TestMissingAndVerdicts(t *testing.T) {
	base := rowsOf(accuracy(500, 0.8), nil)
	drop := rowsOf(accuracy(500, 0.6), nil)
	p := policy(map[string]Rule{
		"a":        {Tier: ptr(Critical)},
		"gone":     {Tier: ptr(Supporting)},
		"adv":      {Tier: ptr(Advisory)},
		"adv_gone": {Tier: ptr(Advisory)},
	})
	rep, err := Evaluate(p, []compare.Pair{pair("a", base, base), pair("adv", base, drop)}, []string{"gone"}, nil, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if x := result(t, rep, "gone"); x.Status != StatusMissing || !slices.Equal(x.Reasons, []string{"Required benchmark found in the baseline only, not in the candidate"}) {
		t.Fatalf("gone: %s %q", x.Status, x.Reasons)
	}
	// Where it is missing, in plain words.
	for _, tc := range []struct {
		baseOnly, candOnly []string
		want               string
	}{
		{nil, []string{"gone"}, "Required benchmark found in the candidate only, not in the baseline"},
		{nil, nil, "Required benchmark not found in either run"},
	} {
		rep, err := Evaluate(p, []compare.Pair{pair("a", base, base)}, tc.baseOnly, tc.candOnly, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if x := result(t, rep, "gone"); x.Status != StatusMissing || !slices.Equal(x.Reasons, []string{tc.want}) {
			t.Errorf("gone: %s %q, want %q", x.Status, x.Reasons, tc.want)
		}
	}
	if len(rep.Missing) != 1 || rep.Missing[0] != "gone" {
		t.Fatalf("missing = %v (advisory benchmarks are never missing)", rep.Missing)
	}
	if rep.Verdict != NoGo || rep.VerdictReasons[0] != "MISSING: gone [supporting]" {
		t.Fatalf("verdict %s %q", rep.Verdict, rep.VerdictReasons)
	}
	if x := result(t, rep, "adv"); x.Status != StatusBreach {
		t.Fatalf("adv: %s", x.Status)
	}

	// GO: every gated benchmark passes, an advisory breach does not count.
	delete(p.Benchmarks, "gone")
	rep = evaluateT(t, p, []compare.Pair{pair("a", base, base), pair("adv", base, drop)}, DefaultOptions())
	if rep.Verdict != Go || rep.VerdictReasons[0] != "All 1 gated benchmark(s) passed" {
		t.Fatalf("verdict %s %q", rep.Verdict, rep.VerdictReasons)
	}
	// NO-GO on a breach; names the tier.
	rep = evaluateT(t, p, []compare.Pair{pair("a", base, drop)}, DefaultOptions())
	if rep.Verdict != NoGo || rep.VerdictReasons[0] != "BREACH: a [critical]" {
		t.Fatalf("verdict %s %q", rep.Verdict, rep.VerdictReasons)
	}
	// Unlisted benchmarks on both sides are gated with the defaults.
	rep = evaluateT(t, policy(nil), []compare.Pair{pair("x", base, drop)}, DefaultOptions())
	if x := result(t, rep, "x"); x.Tier != Supporting || x.MaxDropThreshold != DefaultMaxDrop || x.Status != StatusBreach || rep.Verdict != NoGo {
		t.Fatalf("unlisted: %+v verdict %s", x, rep.Verdict)
	}
}

func TestMethodologyRefusal(t *testing.T) {
	base := rowsOf(accuracy(50, 0.8), nil)
	pr := pair("a", base, base)
	pr.Candidate.Meta = map[string]string{results.MetaBenchmarkHash: "sha256:other"}
	_, err := Evaluate(policy(nil), []compare.Pair{pr}, nil, nil, DefaultOptions())
	var ue *compare.UsageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "--allow-different-methodology") {
		t.Fatalf("err = %v", err)
	}
	opts := DefaultOptions()
	opts.AllowDifferentMethodology = true
	rep := evaluateT(t, policy(nil), []compare.Pair{pr}, opts)
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "gated despite different methodologies") {
		t.Fatalf("warnings = %q", rep.Warnings)
	}
}

func TestScorerAndPass1Metrics(t *testing.T) {
	b := rowsOf([][]float64{{0.5, 0.5}, {1, 0}}, nil)
	for len(b) < 40 {
		b = append(b, b...)
	}
	for i := range b {
		b[i].ItemID = itemIDs[i/2]
		b[i].ItemIdx = int64(i / 2)
		b[i].Repeat = int64(i % 2)
		b[i].Scores = map[string]float64{"scorer:em": b[i].Reward}
	}
	p := policy(map[string]Rule{"s": {Metric: ptr("scorer:em"), MaxDrop: ptr(0.05)}, "p": {Metric: ptr("pass@1")}})
	rep := evaluateT(t, p, []compare.Pair{pair("s", b, b), pair("p", b, b)}, DefaultOptions())
	if x := result(t, rep, "s"); x.Metric != "scorer:em" || x.Status != StatusPass || *x.BaselineScore != 0.5 {
		t.Fatalf("scorer: %+v", x)
	}
	// pass@1 = share of repeats with reward > 0: 1 and 0.5 → 0.75.
	// Identical runs of 32 items × 2 repeats: the adjusted t interval's
	// half-width is t(31)·√2·(1/2)/34 = 2.0395·0.020797 = 0.0424, so
	// the scorer passes at max_drop 0.05 (not at the default 0.015).
	if x := result(t, rep, "p"); x.Metric != "pass@1" || *x.BaselineScore != 0.75 {
		t.Fatalf("pass@1: %+v", x)
	}
}

func TestClusteredIntervalInGate(t *testing.T) {
	b := rowsOf(accuracy(300, 0.8), func(i int) string { return fmt.Sprint("c", i%4) })
	c := rowsOf(accuracy(300, 0.75), func(i int) string { return fmt.Sprint("c", i%4) })
	rep := evaluateT(t, policy(map[string]Rule{"a": {}}), []compare.Pair{pair("a", b, c)}, DefaultOptions())
	if x := result(t, rep, "a"); x.CIMethod != "clt_clustered (4 categories)" {
		t.Fatalf("ci method %q", x.CIMethod)
	}
}

// Holm: two gated benchmarks whose raw one-sided p is just under 0.025
// breach without --holm; with it their adjusted p doubles past 0.025.
func TestHolm(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	mk := func() ([]results.Row, []results.Row) {
		n := 400
		b := make([][]float64, n)
		c := make([][]float64, n)
		for i := range b {
			x := float64(rng.IntN(2))
			b[i], c[i] = []float64{x}, []float64{x}
		}
		return rowsOf(b, nil), rowsOf(c, nil)
	}
	// Find a drop giving raw p in (0.012, 0.025) for each benchmark.
	var pairs []compare.Pair
	for _, name := range []string{"a", "b"} {
		b, c := mk()
		k := 0
		for ; k < 400; k++ {
			if b[k].Reward == 1 {
				c[k].Reward = 0
			}
			rep := evaluateT(t, policy(map[string]Rule{name: {MaxDrop: ptr(0.0)}}), []compare.Pair{pair(name, b, c)}, DefaultOptions())
			if p := *result(t, rep, name).PValue; p < 0.025 {
				if p < 0.0125 {
					t.Fatalf("%s: p jumped to %v", name, p)
				}
				break
			}
		}
		pairs = append(pairs, pair(name, b, c))
	}
	p := policy(map[string]Rule{"a": {MaxDrop: ptr(0.0)}, "b": {MaxDrop: ptr(0.0)}})
	plain := evaluateT(t, p, pairs, DefaultOptions())
	if plain.Verdict != NoGo {
		t.Fatalf("without holm: %s", plain.Verdict)
	}
	opts := DefaultOptions()
	opts.Holm = true
	holm := evaluateT(t, p, pairs, opts)
	for _, name := range []string{"a", "b"} {
		x := result(t, holm, name)
		raw := *x.PValue
		want := stats.Holm([]float64{*result(t, holm, "a").PValue, *result(t, holm, "b").PValue})
		if x.PHolm == nil || *x.PHolm < raw || *x.PHolm < 0.025 {
			t.Fatalf("%s: raw %v holm %v (all %v)", name, raw, x.PHolm, want)
		}
		if x.Status != StatusInsufficient || !hasReason(x, "Holm-adjusted p") {
			t.Fatalf("%s: %s %q", name, x.Status, x.Reasons)
		}
	}
	if holm.Verdict != Inconclusive || holm.Holm == nil || len(holm.Holm.Family) != 2 || holm.Holm.Level != 0.025 {
		t.Fatalf("holm verdict %s %+v", holm.Verdict, holm.Holm)
	}
}

// The number of additional items INSUFFICIENT_EVIDENCE reports is the
// smallest that, at the same spread, brings the adjusted interval clear
// of max_drop: at n + additional it is, at one item fewer it is not.
func TestNeededItemsDecides(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	checked := 0
	defer func() {
		if checked < 5 {
			t.Errorf("only %d undecided trials checked", checked)
		}
	}()
	for trial := range 40 {
		n := 30 + rng.IntN(300)
		b := make([][]float64, n)
		c := make([][]float64, n)
		for i := range b {
			b[i] = []float64{float64(rng.IntN(2))}
			c[i] = []float64{b[i][0]}
			if rng.Float64() < 0.3 {
				c[i][0] = float64(rng.IntN(2))
			}
		}
		maxDrop := 0.005 + 0.03*rng.Float64()
		rep := evaluateT(t, policy(map[string]Rule{"a": {MaxDrop: &maxDrop}}), []compare.Pair{pair("a", rowsOf(b, nil), rowsOf(c, nil))}, DefaultOptions())
		x := result(t, rep, "a")
		if x.Status != StatusInsufficient {
			continue
		}
		if x.Needed == nil {
			t.Fatalf("trial %d: no needed", trial)
		}
		if x.Needed.AdditionalItems == nil {
			if !strings.Contains(x.Needed.Note, "sits on the threshold") {
				t.Fatalf("trial %d: %q", trial, x.Needed.Note)
			}
			continue
		}
		checked++
		// The adjusted (Bonett–Price) interval at m items, the deltas'
		// mean and population variance kept: centre m·mean/(m+2),
		// variance of the m+2 (with the pseudo-items ±1) over m+2, z.
		var sum, sq float64
		for i := range b {
			d := c[i][0] - b[i][0]
			sum += d
			sq += d * d
		}
		mean, v := sum/float64(n), sq/float64(n)-(sum/float64(n))*(sum/float64(n))
		clears := func(m float64) bool {
			centre := m * mean / (m + 2)
			se := math.Sqrt(((m*(v+mean*mean)+2)/(m+2) - centre*centre) / (m + 2))
			half := 1.959963984540054 * se
			return -centre-half > maxDrop || -centre+half <= maxDrop
		}
		nn := float64(n + *x.Needed.AdditionalItems)
		if !clears(nn) {
			t.Fatalf("trial %d: at %v items the interval still reaches max_drop %v", trial, nn, maxDrop)
		}
		if *x.Needed.AdditionalItems > 1 && clears(nn-1) {
			t.Fatalf("trial %d: %v items would do already", trial, nn-1)
		}
		if !strings.Contains(x.Needed.Note, "repeats cannot be estimated with 1 repeat") {
			t.Fatalf("trial %d: %q", trial, x.Needed.Note)
		}
	}
}

func TestNeededRepeats(t *testing.T) {
	// Four repeats of noisy items: the decomposition says how many
	// repeats would decide an undecided benchmark, and that many would.
	found := false
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 6))
		n, k := 200, 4
		b := make([][]float64, n)
		c := make([][]float64, n)
		for i := range b {
			p := rng.Float64()
			b[i], c[i] = make([]float64, k), make([]float64, k)
			for r := range k {
				if rng.Float64() < p {
					b[i][r] = 1
				}
				if rng.Float64() < p-0.02 {
					c[i][r] = 1
				}
			}
		}
		rep := evaluateT(t, policy(map[string]Rule{"a": {MaxDrop: ptr(0.0)}}), []compare.Pair{pair("a", rowsOf(b, nil), rowsOf(c, nil))}, DefaultOptions())
		x := result(t, rep, "a")
		if x.Status != StatusInsufficient {
			continue
		}
		if x.Needed == nil || x.Needed.AdditionalItems == nil {
			t.Fatalf("needed = %+v", x.Needed)
		}
		if x.Needed.Repeats == nil {
			if !strings.Contains(x.Needed.Note, "repeats alone cannot decide it") {
				t.Fatalf("note = %q", x.Needed.Note)
			}
			continue
		}
		found = true
		between, within, _ := stats.Decompose(x.paired.repeats)
		gap := math.Abs(-*x.Delta)
		q := stats.TQuantile(0.975, float64(n-1))
		half := func(kk int) float64 { return q * math.Sqrt((between+within/float64(kk))/float64(n)) }
		if kk := *x.Needed.Repeats; half(kk) > gap*(1+1e-9) || kk-1 > k && half(kk-1) <= gap {
			t.Fatalf("seed %d: %d repeats: half-width %v (at one fewer %v), gap %v", seed, kk, half(kk), half(kk-1), gap)
		}
		if !strings.Contains(x.Needed.Note, fmt.Sprintf("or %d repeats per item (now 4)", *x.Needed.Repeats)) {
			t.Fatalf("note = %q", x.Needed.Note)
		}
	}
	if !found {
		t.Fatal("no seed gave an undecided benchmark that repeats could decide")
	}
}

// simulate draws one run: item i succeeds with probability ps[i] on each
// repeat, independently.
func simulate(rng *rand.Rand, ps []float64, repeats int) []results.Row {
	out := make([]results.Row, 0, len(ps)*repeats)
	for i, p := range ps {
		for r := range repeats {
			x := 0.0
			if rng.Float64() < p {
				x = 1
			}
			out = append(out, results.Row{ItemID: itemIDs[i], ItemIdx: int64(i), Repeat: int64(r), Reward: x})
		}
	}
	return out
}

// TestFalseNoGoRate: identical models (the same per-item success
// probabilities, independent sampling) must not be called NO-GO more
// often than the one-sided level the interval rule promises (0.025), for
// max_drop 0 (the worst case: the truth sits on the threshold) and 0.01,
// with 1 and 4 repeats; and with --holm over 5 benchmarks the family-wise
// false NO-GO rate stays under 0.025 too. A Monte-Carlo allowance of 0.01
// (about 3 standard errors at 2,000 simulations).
func TestFalseNoGoRate(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	start := time.Now()
	const sims, items, allowance = 2000, 300, 0.01
	// Heterogeneous items: difficulty spread over (0, 1).
	probs := make([]float64, items)
	rng := rand.New(rand.NewPCG(2024, 1))
	for i := range probs {
		probs[i] = []float64{0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98}[rng.IntN(7)]
	}
	type key struct {
		repeats int
		maxDrop float64
	}
	var mu sync.Mutex
	nogo := map[key]int{}
	fam, famPlain := 0, 0
	var wg sync.WaitGroup
	workers := 8
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			local := map[key]int{}
			lf, lfp := 0, 0
			for s := w; s < sims; s += workers {
				rng := rand.New(rand.NewPCG(uint64(s), 99))
				for _, k := range []int{1, 4} {
					pr := pair("a", simulate(rng, probs, k), simulate(rng, probs, k))
					for _, md := range []float64{0, 0.01} {
						rep, err := Evaluate(policy(map[string]Rule{"a": {MaxDrop: ptr(md)}}), []compare.Pair{pr}, nil, nil, DefaultOptions())
						if err != nil {
							panic(err)
						}
						if rep.Verdict == NoGo {
							local[key{k, md}]++
						}
					}
				}
				// A family of 5 gated benchmarks, max_drop 0, 1 repeat.
				var pairs []compare.Pair
				rules := map[string]Rule{}
				for b := range 5 {
					name := fmt.Sprint("b", b)
					pairs = append(pairs, pair(name, simulate(rng, probs, 1), simulate(rng, probs, 1)))
					rules[name] = Rule{MaxDrop: ptr(0.0)}
				}
				opts := DefaultOptions()
				opts.Holm = true
				rep, err := Evaluate(policy(rules), pairs, nil, nil, opts)
				if err != nil {
					panic(err)
				}
				if rep.Verdict == NoGo {
					lf++
				}
				// Without --holm: any raw one-sided p under 0.025 (the
				// interval rule) would have been a NO-GO.
				for _, x := range rep.Benchmarks {
					if *x.PValue < 0.025 {
						lfp++
						break
					}
				}
			}
			mu.Lock()
			for k, v := range local {
				nogo[k] += v
			}
			fam += lf
			famPlain += lfp
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	for _, k := range []key{{1, 0}, {4, 0}, {1, 0.01}, {4, 0.01}} {
		rate := float64(nogo[k]) / sims
		t.Logf("repeats %d, max_drop %.2f: false NO-GO %d/%d = %.4f (nominal ≤ 0.025)", k.repeats, k.maxDrop, nogo[k], sims, rate)
		if rate > 0.025+allowance {
			t.Errorf("repeats %d, max_drop %g: false NO-GO rate %.4f > %.3f", k.repeats, k.maxDrop, rate, 0.025+allowance)
		}
	}
	famRate := float64(fam) / sims
	t.Logf("5 benchmarks, --holm: family-wise false NO-GO %d/%d = %.4f (without --holm %.4f)", fam, sims, famRate, float64(famPlain)/sims)
	if famRate > 0.025+allowance {
		t.Errorf("family-wise false NO-GO rate with --holm %.4f > %.3f", famRate, 0.025+allowance)
	}
	t.Logf("simulation took %v", time.Since(start))
}

// The two p-values are one-sided tests against max_drop that agree with
// the interval: a threshold at the interval's lower end of the damage
// gives a breach p of exactly (1 − level)/2, and at its upper end a
// within p of the same; the two always sum to 1. Identical runs read as
// no evidence of a breach (p = 1) and clear evidence of a pass, and the
// text says which hypothesis each p tests, never "p(damage > …)".
func TestPValuesMatchTheInterval(t *testing.T) {
	n := 2000
	base := rowsOf(accuracy(n, 0.80), nil)
	cand := rowsOf(accuracy(n, 0.77), nil)
	first := result(t, evaluateT(t, policy(map[string]Rule{"b": {MaxDrop: ptr(0.01)}}), []compare.Pair{pair("b", base, cand)}, DefaultOptions()), "b")
	dlo, dhi := -*first.DeltaCIUpper, -*first.DeltaCILower
	for _, tc := range []struct {
		maxDrop float64
		p       func(*Result) float64
	}{
		{dlo, func(x *Result) float64 { return *x.PValue }},
		{dhi, func(x *Result) float64 { return *x.PWithin }},
	} {
		x := result(t, evaluateT(t, policy(map[string]Rule{"b": {MaxDrop: ptr(tc.maxDrop)}}), []compare.Pair{pair("b", base, cand)}, DefaultOptions()), "b")
		if got := tc.p(x); math.Abs(got-0.025) > 1e-9 {
			t.Errorf("max_drop at the interval's end %.6f: p = %v, want 0.025", tc.maxDrop, got)
		}
		if s := *x.PValue + *x.PWithin; math.Abs(s-1) > 1e-12 {
			t.Errorf("max_drop %.6f: p_value %v + p_within %v = %v, want 1", tc.maxDrop, *x.PValue, *x.PWithin, s)
		}
	}
	if want := "one-sided adjusted Wald test (Bonett–Price) of H0: damage at most 0.01 against H1: damage above 0.01 (damage = baseline - candidate, higher is better)"; !strings.HasPrefix(first.PValueTest, want) {
		t.Errorf("p_value_test = %q, want it to start %q", first.PValueTest, want)
	}

	rep := evaluateT(t, policy(map[string]Rule{"b": {MaxDrop: ptr(0.02)}}), []compare.Pair{pair("b", base, base)}, DefaultOptions())
	if x := result(t, rep, "b"); *x.PValue != 1 || *x.PWithin != 0 {
		t.Errorf("identical runs: p_value %v p_within %v, want 1 and 0", *x.PValue, *x.PWithin)
	}
	var out strings.Builder
	if err := Render(&out, compare.FormatText, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n  damage = baseline - candidate, higher is better; the 95% CI and both tests: adjusted Wald test (Bonett–Price)\n",
		"\n  breach test: H0 damage ≤ 0.0200, H1 damage > 0.0200: one-sided p = 1\n",
		"\n  within test: H0 damage ≥ 0.0200, H1 damage < 0.0200: one-sided p < 0.0001\n",
		"\n  (each decides at p < 0.025, as the 95% interval's ends do; a p-value is not the probability of damage)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "p(damage") {
		t.Errorf("the text still prints p(damage > …):\n%s", out.String())
	}
}

// Two runs that agree on every item are not shown equal by any finite
// sample: Bonett & Price's interval (one discordant pair added each way)
// has half-width z·√2/(n+2), z = 1.959964. 300 items clear max_drop 0.02
// (z·√2/302 = 0.0092: GO); 100 do not (z·√2/102 = 0.0272: INCONCLUSIVE),
// and 137 would: z·√2/139 = 0.019941 ≤ 0.02, while 136 give z·√2/138 =
// 0.020085.
func TestIdenticalRunsNeedEnoughItems(t *testing.T) {
	for _, tc := range []struct {
		n       int
		verdict string
		half    float64
		add     int
	}{
		{300, Go, 1.959963984540054 * math.Sqrt2 / 302, 0},
		{100, Inconclusive, 1.959963984540054 * math.Sqrt2 / 102, 37},
	} {
		rows := rowsOf(accuracy(tc.n, 0.9), nil)
		rep := evaluateT(t, policy(map[string]Rule{"a": {Tier: ptr(Critical), MaxDrop: ptr(0.02)}}), []compare.Pair{pair("a", rows, rows)}, DefaultOptions())
		x := result(t, rep, "a")
		if rep.Verdict != tc.verdict || x.CIMethod != "adjusted_wald" {
			t.Errorf("%d identical items: verdict %s, method %s; want %s, adjusted_wald", tc.n, rep.Verdict, x.CIMethod, tc.verdict)
		}
		if math.Abs(*x.DeltaCIUpper-tc.half) > 1e-9 || math.Abs(*x.DeltaCILower+tc.half) > 1e-9 {
			t.Errorf("%d identical items: interval [%v, %v], want ±%v", tc.n, *x.DeltaCILower, *x.DeltaCIUpper, tc.half)
		}
		if tc.add > 0 && (x.Needed == nil || x.Needed.AdditionalItems == nil || *x.Needed.AdditionalItems != tc.add) {
			t.Errorf("%d identical items: needed %+v, want %d more items", tc.n, x.Needed, tc.add)
		}
	}
}
