package reproduce

import (
	"fmt"
	"github.com/nel-eval/nel/internal/exitcode"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// The expected numbers in these tests are derived by hand from the
// Bonett–Price adjusted interval for n binary pairs with n12 items right
// only in the published run (worse) and n21 right only in the new one
// (better): p̃12 = (n12+1)/(n+2), p̃21 = (n21+1)/(n+2), centre
// c = p̃21 − p̃12, SE = sqrt((p̃12 + p̃21 − c²)/(n+2)); the equivalence
// interval is c ± 1.644854·SE (90%: TOST at α = 0.05), PUpper =
// Φ((c − 0.03)/SE), PLower = 1 − Φ((c + 0.03)/SE).

// discordant is n binary items, one repeat: the first worse items are
// right only in the published run, the next better only in the new one,
// and the rest agree (right on even items).
func discordant(n, worse, better int) (pub, nw [][]float64) {
	pub = binary(n, func(i int) bool { return i < worse || i >= worse+better && i%2 == 0 })
	nw = binary(n, func(i int) bool { return i >= worse && i < worse+better || i >= worse+better && i%2 == 0 })
	return pub, nw
}

func compareBinary(t *testing.T, n, worse, better int) *Report {
	t.Helper()
	p, q := discordant(n, worse, better)
	return mustCompare(t, writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: p}), writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: q}))
}

// 10,000 items, 25 worse and 75 better: Δ = +50/10000 = +0.005,
// significant (exact McNemar 2·P[X ≤ 25 | Bin(100, ½)] =
// 2·3.5724e23/2¹⁰⁰ = 5.636e−7), yet well inside ±0.03:
// c = 50/10002 = 0.0049990, p̃12 = 26/10002, p̃21 = 76/10002,
// SE = sqrt((102/10002 − 0.0049990²)/10002) = 0.00100851, the 90%
// interval [+0.003340, +0.006658]; PUpper = Φ(−24.79) ≈ 6e−136, PLower =
// 1 − Φ(34.70) ≈ 0. The question "the same within ±0.03?" is answered
// yes: REPRODUCED, where testing for a difference alone said DIFFERENT.
func TestSignificantWithinMarginReproduced(t *testing.T) {
	r := compareBinary(t, 10000, 25, 75)
	b := r.Benchmarks[0]
	if r.Verdict != Reproduced || b.Verdict != Reproduced || b.Statistics != Reproduced || exitcode.For("reproduce", r.Verdict, false) != 0 {
		t.Fatalf("verdict %s / %s: %q", r.Verdict, b.Verdict, b.Reasons)
	}
	if b.Test.Worse != 25 || b.Test.Better != 75 || !near(b.Test.P, 5.636282e-7, 1e-12) {
		t.Fatalf("test = %+v, want p = 5.636e-7", b.Test)
	}
	if !near(b.Delta, 0.005, 1e-12) || !near(b.CI.Center, 0.0049990, 1e-7) || !near(b.CI.SE, 0.00100851, 1e-8) {
		t.Fatalf("delta %v ci %+v", b.Delta, b.CI)
	}
	e := b.Equivalence
	if !near(e.Lo, 0.003340, 1e-6) || !near(e.Hi, 0.006658, 1e-6) || e.P > 1e-100 || e.PLower > 1e-200 {
		t.Fatalf("equivalence = %+v", e)
	}
	if !strings.Contains(reasons(b), "the difference is significant") {
		t.Fatalf("reasons %q", b.Reasons)
	}
}

// Past the margin and significant: DIFFERENT. 1000 items, 10 worse and 70
// better: c = 60/1002 = 0.059880, SE = sqrt((82/1002 − 0.059880²)/1002) =
// 0.0088371, the 90% interval [+0.045344, +0.074416] lies wholly past
// +0.03; McNemar 2·P[X ≤ 10 | Bin(80, ½)] = 2·1910882868067/2⁸⁰ =
// 3.161e−12. The interval straddling the margin is DIFFERENT too when
// the difference is significant: 1000 items, 10 worse and 40 better,
// c = 30/1002 = 0.029940, SE = sqrt((52/1002 − 0.029940²)/1002) =
// 0.0071343, the 90% interval [+0.018205, +0.041675] leaves +0.03,
// PUpper = Φ((0.029940 − 0.03)/0.0071343) = Φ(−0.0084) = 0.4967 (not
// equivalent), and McNemar 2·P[X ≤ 10 | Bin(50, ½)] =
// 2·13432735556/2⁵⁰ = 2.386e−5 < 0.05.
func TestOutsideMarginDifferent(t *testing.T) {
	for _, tc := range []struct {
		worse, better int
		lo, hi, p     float64
	}{
		{10, 70, 0.045344, 0.074416, 3.161291e-12},
		{10, 40, 0.018205, 0.041675, 2.386133e-5},
	} {
		r := compareBinary(t, 1000, tc.worse, tc.better)
		b := r.Benchmarks[0]
		if r.Verdict != Different || b.Statistics != Different || exitcode.For("reproduce", r.Verdict, false) != 1 {
			t.Fatalf("%d/%d: verdict %s: %q", tc.worse, tc.better, r.Verdict, b.Reasons)
		}
		if !near(b.Equivalence.Lo, tc.lo, 1e-6) || !near(b.Equivalence.Hi, tc.hi, 1e-6) || b.Equivalence.P < 0.05 {
			t.Fatalf("%d/%d: equivalence = %+v", tc.worse, tc.better, b.Equivalence)
		}
		if !near(b.Test.P, tc.p, tc.p*1e-6) {
			t.Fatalf("%d/%d: p = %v, want %v", tc.worse, tc.better, b.Test.P, tc.p)
		}
		if b.ItemsNeeded != 0 || !strings.Contains(reasons(b), "the runs differ: ") {
			t.Fatalf("%d/%d: %+v", tc.worse, tc.better, b)
		}
	}
	if b := compareBinary(t, 1000, 10, 40).Benchmarks[0]; !near(b.Equivalence.PUpper, 0.4967, 1e-4) {
		t.Fatalf("p upper = %v, want 0.4967", b.Equivalence.PUpper)
	}
}

// A wide interval straddling the margin, no significant difference:
// INCONCLUSIVE, with what would decide it. 200 items, 5 worse and 7
// better: c = 2/202 = 0.0099010, SE = sqrt((14/202 − 0.0099010²)/202) =
// 0.0185099, the 90% interval [−0.020545, +0.040347]; McNemar
// 2·P[X ≤ 5 | Bin(12, ½)] = 2·1586/4096 = 0.7744.
//
// Items needed for equivalence: the differences have mean m = 2/200 =
// 0.01 and population variance v = 12/200 − 0.01² = 0.0599; at N items
// c = 0.01N/(N+2), var' = (0.06N + 2)/(N+2) − c², SE = sqrt(var'/(N+2)),
// and |c| + 1.644854·SE < 0.03 first holds at N = 431 (0.029989; at 430
// 0.030014). With the 95% interval's 1.959964 it would have been 602.
// Repeats: on the same 200 items with v/K, K = 3 gives 0.029836 (K = 2:
// 0.032918).
func TestStraddlingInconclusive(t *testing.T) {
	r := compareBinary(t, 200, 5, 7)
	b := r.Benchmarks[0]
	if r.Verdict != Inconclusive || b.Statistics != Inconclusive || exitcode.For("reproduce", r.Verdict, false) != 2 {
		t.Fatalf("verdict %s: %q", r.Verdict, b.Reasons)
	}
	if !near(b.Equivalence.Lo, -0.020545, 1e-6) || !near(b.Equivalence.Hi, 0.040347, 1e-6) || !near(b.Test.P, 1586.0/2048, 1e-12) {
		t.Fatalf("equivalence %+v test %+v", b.Equivalence, b.Test)
	}
	if b.ItemsNeeded != 431 || b.RepeatsNeeded != 3 {
		t.Fatalf("items needed %d, repeats needed %d; want 431 and 3", b.ItemsNeeded, b.RepeatsNeeded)
	}
	if !strings.Contains(reasons(b), "about 431 paired items (now 200) would bring the equivalence interval within ±0.03") ||
		!strings.Contains(reasons(b), "about 3 repeats per item (now 1)") {
		t.Fatalf("reasons %q", b.Reasons)
	}
}

// Holm across three benchmarks changes verdicts. Each pair of runs
// agrees on every item, so c = 0, SE = √2/(n+2) and the TOST p is
// 1 − Φ(0.03(n+2)/√2):
//
//	a, 108 items: 1 − Φ(2.33345) = 0.009812
//	b,  87 items: 1 − Φ(1.88798) = 0.029515
//	c,  81 items: 1 − Φ(1.76070) = 0.039145
//
// Alone, each is below 0.05: REPRODUCED. Holm, sorted: 3·0.009812 =
// 0.029437 (a reproduced); max(0.029437, 2·0.029515) = 0.059029 ≥ 0.05
// (b not); max(0.059029, 0.039145) = 0.059029 (c not, although its own p
// is below α/1: the step-down stopped at b). Neither differs (McNemar
// p = 1), so b and c are INCONCLUSIVE. What would decide b: its p below
// α/2 = 0.025 puts it second, adjusted 2·p < 0.05 (below α/1 but above
// 0.039 it would rank third behind c's 2·0.039 = 0.078); so
// 1.959964·√2/(n+2) < 0.03, n + 2 > 92.39, n = 91. The same holds for c.
func TestHolmAcrossBenchmarks(t *testing.T) {
	same := func(name string, n int) bench {
		return bench{name: name, rewards: binary(n, func(i int) bool { return i%3 != 0 })}
	}
	pubDir := writeRun(t, t.TempDir(), same("a", 108), same("b", 87), same("c", 81))
	newDir := writeRun(t, t.TempDir(), same("a", 108), same("b", 87), same("c", 81))

	want := map[string]struct {
		p, holm float64
		alone   string
		verdict string
		items   int
	}{
		"a": {0.009812, 0.029437, Reproduced, Reproduced, 0},
		"b": {0.029515, 0.059029, Reproduced, Inconclusive, 91},
		"c": {0.039145, 0.059029, Reproduced, Inconclusive, 91},
	}
	for name, w := range want {
		alone := mustCompare(t, filepath.Join(pubDir, name), filepath.Join(newDir, name))
		if b := alone.Benchmarks[0]; b.Verdict != w.alone || !near(b.Equivalence.P, w.p, 1e-6) || b.Equivalence.PHolm != b.Equivalence.P {
			t.Errorf("%s alone: %s, equivalence %+v", name, b.Verdict, b.Equivalence)
		}
	}
	r := mustCompare(t, pubDir, newDir)
	if r.Verdict != Inconclusive || fmt.Sprint(r.HolmFamily) != "[a b c]" {
		t.Fatalf("verdict %s, family %q", r.Verdict, r.HolmFamily)
	}
	for _, b := range r.Benchmarks {
		w := want[b.Benchmark]
		if b.Verdict != w.verdict || !near(b.Equivalence.P, w.p, 1e-6) || !near(b.Equivalence.PHolm, w.holm, 1e-6) || b.Test.PHolm != 1 {
			t.Errorf("%s: %s, equivalence %+v, test %+v", b.Benchmark, b.Verdict, b.Equivalence, b.Test)
		}
		if b.ItemsNeeded != w.items {
			t.Errorf("%s: items needed %d, want %d", b.Benchmark, b.ItemsNeeded, w.items)
		}
	}
	if !strings.Contains(reasons(r.Benchmarks[1]), "equivalence (TOST) p = 0.02951, Holm-adjusted over 3 benchmarks 0.05903 ≥ α = 0.05") {
		t.Errorf("reasons %q", r.Benchmarks[1].Reasons)
	}
	out := text(t, r)
	if !strings.Contains(out, "90% equivalence interval [-0.0261, +0.0261]  equivalence (TOST, H0 |Δ| ≥ 0.03) Holm p = 0.059  difference (two-sided, H0 Δ = 0) Holm p = 1  (87 items)") {
		t.Errorf("text:\n%s", out)
	}
}

// The Holm threshold, by hand, for p = (0.01, 0.03, 0.04) at α = 0.05.
// The first: just below 0.05 it ranks third behind 2·0.03 = 0.06; just
// below 0.025 it ranks first, 3·0.025 = 0.075; only below α/3 is it
// rejected. The third: just below 0.05, behind 0.06; just below 0.025 it
// ranks second, max(3·0.01, 2·0.025) < 0.05: rejected. The second alike.
func TestHolmThreshold(t *testing.T) {
	ps := []float64{0.01, 0.03, 0.04}
	for j, want := range []float64{0.05 / 3, 0.025, 0.025} {
		if got := holmThreshold(ps, j, 0.05); !near(got, want, 1e-15) {
			t.Errorf("threshold %d = %v, want %v", j, got, want)
		}
	}
	if got := holmThreshold([]float64{0.3}, 0, 0.05); got != 0.05 {
		t.Errorf("a family of one: %v, want α", got)
	}
}

// TOST on the adjusted statistic by hand: c = 0.01, SE = 0.01, margin
// 0.03: PLower = 1 − Φ(4) = 3.167e−5, PUpper = Φ(−2) = 0.02275, the 90%
// interval 0.01 ± 0.016449.
func TestTOSTByHand(t *testing.T) {
	e := tost(0.01, 0.01, 0.03, 0.05)
	if !near(e.PLower, 3.167124e-5, 1e-10) || !near(e.PUpper, 0.02275013, 1e-8) || e.P != e.PUpper {
		t.Fatalf("tost = %+v", e)
	}
	if !near(e.Lo, 0.01-0.016448536, 1e-9) || !near(e.Hi, 0.01+0.016448536, 1e-9) || e.Level != 0.9 {
		t.Fatalf("interval = %+v", e)
	}
	if math.IsNaN(tost(0, 0, 0.03, 0.05).P) || tost(0, 0, 0.03, 0.05).P != 0 || tost(0.05, 0, 0.03, 0.05).P != 1 {
		t.Fatal("a zero SE decides by the centre alone")
	}
}
