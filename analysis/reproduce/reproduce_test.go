package reproduce

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/exitcode"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/runtime/metrics"
	prov "github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// z is the 97.5% normal quantile (the 95% two-sided interval), z90 the
// 95% one (the 90% interval of the equivalence test at α = 0.05).
const (
	z   = 1.959963984540054
	z90 = 1.6448536269514722
)

const recipeHash = "sha256:abababababababababababababababababababababababababababababababab"

// bench is one benchmark of a run as a test writes it.
type bench struct {
	name    string
	rewards [][]float64 // per item, per repeat
	// failed marks samples as model errors (format_error: reward 0
	// expected), infra as infrastructure failures (timeout: not scored).
	failed, infra func(item, repeat int) bool
	meta          map[string]string                      // overrides of the results metadata
	edit          func(p *metrics.Provenance)            // edits of the bundle's provenance
	rows          func(rows []results.Row) []results.Row // last-minute edits
}

// writeRun writes <dir>/<bench>/results.parquet and eval.json, as merge
// does: rows sorted by item then repeat, the bundle computed from them by
// metrics.Compute.
func writeRun(t *testing.T, dir string, benches ...bench) string {
	t.Helper()
	for _, b := range benches {
		meta := map[string]string{
			results.MetaRecipeHash:    recipeHash,
			results.MetaPlanHash:      "sha256:plan",
			results.MetaBenchmarkHash: "sha256:bench-" + b.name,
			results.MetaBenchmark:     b.name,
			results.MetaNelVersion:    "0.9.0",
			results.MetaScoring:       "3",
			results.MetaDataset:       "sha256:data-" + b.name,
			results.MetaModel:         "meta/llama-3.1-8b-instruct",
			results.MetaShard:         "merged/4",
			results.MetaRepeats:       fmt.Sprint(len(b.rewards[0])),
		}
		for k, v := range b.meta {
			meta[k] = v
		}
		var rows []results.Row
		for i, rs := range b.rewards {
			for r, x := range rs {
				row := results.Row{RecipeHash: recipeHash, Benchmark: b.name, ItemID: fmt.Sprintf("item%04d", i), ItemIdx: int64(i),
					Repeat: int64(r), Reward: x, Expected: fmt.Sprint(i), Attempts: 1, FinishReason: "stop"}
				if b.failed != nil && b.failed(i, r) {
					row.ErrorCategory = "format_error"
				}
				if b.infra != nil && b.infra(i, r) {
					row.Reward, row.ErrorCategory, row.Outcome = 0, "timeout", "infra_error"
				}
				rows = append(rows, row)
			}
		}
		if b.rows != nil {
			rows = b.rows(rows)
		}
		bd := filepath.Join(dir, b.name)
		if err := os.MkdirAll(bd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := results.WriteRows(filepath.Join(bd, "results.parquet"), rows, meta); err != nil {
			t.Fatal(err)
		}
		bundle := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Resamples: 200})
		if b.edit != nil {
			b.edit(&bundle.Provenance)
		}
		if err := metrics.WriteFile(rundir.Dir("").Benchmark(bd).Bundle(), bundle); err != nil {
			t.Fatal(err)
		}
	}
	return dir
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

func mustCompare(t *testing.T, pub, nw string) *Report {
	t.Helper()
	r, err := Compare(pub, nw, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func reasons(b Benchmark) string { return strings.Join(b.Reasons, "\n") }

// text is the report as nel reproduce prints it.
func text(t *testing.T, r *Report) string {
	t.Helper()
	var out bytes.Buffer
	if err := r.Text(&out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Two identical runs of 300 binary items: no item differs, so the
// adjusted interval is 0 ± z·sqrt(var_pop/(n+2)) with the two pseudo-items
// ±1 alone: var_pop = 2/302, SE = sqrt(2)/302, 95% half-width
// 1.959964·1.414214/302 = 0.009178, and the equivalence (90%) half-width
// 1.644854·1.414214/302 = 0.007703 — inside ±0.03: REPRODUCED.
func TestIdentical300Reproduced(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	r := mustCompare(t, pub, nw)
	if r.Verdict != Reproduced || exitcode.For("reproduce", r.Verdict, false) != 0 {
		t.Fatalf("verdict %s exit %d: %q %q", r.Verdict, exitcode.For("reproduce", r.Verdict, false), r.Reasons, r.Benchmarks[0].Reasons)
	}
	b := r.Benchmarks[0]
	half := 1.959963984540054 * math.Sqrt2 / 302 // 0.009178171
	if !near(half, 0.009178, 1e-6) {
		t.Fatalf("hand arithmetic: %v", half)
	}
	if b.CI.Method != "adjusted_paired" || b.CI.Center != 0 || !near(b.CI.Lo, -half, 1e-12) || !near(b.CI.Hi, half, 1e-12) {
		t.Fatalf("ci = %+v, want ±%v", b.CI, half)
	}
	if b.Test.Name != TestMcNemar || b.Test.P != 1 || b.Test.Discordant != 0 {
		t.Fatalf("test = %+v", b.Test)
	}
	if e := b.Equivalence; e.Level != 0.9 || !near(e.Hi, 0.007703, 1e-6) || !near(e.Lo, -0.007703, 1e-6) || e.P >= 1e-9 || e.PHolm != e.P {
		t.Fatalf("equivalence = %+v", e)
	}
	if b.Statistics != Reproduced || len(b.NotComparable) != 0 {
		t.Fatalf("statistics %s, not comparable %q", b.Statistics, b.NotComparable)
	}
	if b.Metric != "pass@1" || b.Paired != 300 || b.Delta != 0 || *b.Published.Value != 0.7 || *b.New.Value != 0.7 {
		t.Fatalf("benchmark = %+v", b)
	}
	if len(r.Provenance) != 0 {
		t.Fatalf("provenance differences of identical runs: %+v", r.Provenance)
	}
	if r.RecipeHash != recipeHash {
		t.Fatalf("recipe hash %q", r.RecipeHash)
	}
	out := text(t, r)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if want := "REPRODUCED " + recipeHash + " (1 benchmark within ±0.030)"; lines[len(lines)-1] != want {
		t.Fatalf("last line %q, want %q\n%s", lines[len(lines)-1], want, out)
	}
	if !strings.Contains(out, "REPRODUCED   gsm8k        pass@1 0.7000 → 0.7000  Δ +0.0000  90% equivalence interval [-0.0077, +0.0077]  equivalence (TOST, H0 |Δ| ≥ 0.03) p = ") {
		t.Fatalf("benchmark line:\n%s", out)
	}
}

// Eight identical items: 95% half-width z·sqrt(2)/10 = 0.2772, and the
// equivalence (90%) one 1.644854·1.414214/10 = 0.2326, far past ±0.03.
// The equivalence interval needs n+2 > 1.644854·sqrt(2)/0.03 = 77.54, so
// n = 76 (the 95% interval would have needed 91).
func TestIdentical8Inconclusive(t *testing.T) {
	rw := binary(8, func(i int) bool { return i%2 == 0 })
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	r := mustCompare(t, pub, nw)
	b := r.Benchmarks[0]
	if r.Verdict != Inconclusive || b.Verdict != Inconclusive || exitcode.For("reproduce", r.Verdict, false) != 2 {
		t.Fatalf("verdict %s / %s: %q", r.Verdict, b.Verdict, b.Reasons)
	}
	half := z * math.Sqrt2 / 10
	if !near(half, 0.2772, 1e-4) || !near(b.CI.Hi, half, 1e-12) || !near(b.CI.Lo, -half, 1e-12) {
		t.Fatalf("ci = %+v, want ±%v", b.CI, half)
	}
	if !near(b.Equivalence.Hi, 0.2326, 1e-4) {
		t.Fatalf("equivalence = %+v", b.Equivalence)
	}
	if b.ItemsNeeded != 76 {
		t.Fatalf("items needed %d, want 76", b.ItemsNeeded)
	}
	if b.RepeatsNeeded != 0 {
		t.Fatalf("repeats needed %d: no item differs, repeats cannot help", b.RepeatsNeeded)
	}
	if !strings.Contains(reasons(b), "about 76 paired items (now 8)") {
		t.Fatalf("reasons %q", b.Reasons)
	}
}

// 0.8 vs 0.5 on 300 items: 90 items right before and wrong now, none the
// other way; exact two-sided McNemar p = 2·½⁹⁰ = 1.6e-27.
func TestAccuracyDropDifferent(t *testing.T) {
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: binary(300, func(i int) bool { return i%10 < 8 })})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: binary(300, func(i int) bool { return i%10 < 5 })})
	r := mustCompare(t, pub, nw)
	b := r.Benchmarks[0]
	if r.Verdict != Different || exitcode.For("reproduce", r.Verdict, false) != 1 {
		t.Fatalf("verdict %s: %q", r.Verdict, b.Reasons)
	}
	if b.Test.P >= 1e-6 || b.Test.Worse != 90 || b.Test.Better != 0 || b.Test.Discordant != 90 {
		t.Fatalf("test = %+v", b.Test)
	}
	if want := 2 * math.Pow(0.5, 90); math.Abs(b.Test.P-want) > 1e-9*want {
		t.Fatalf("p = %v, want %v", b.Test.P, want)
	}
	if !near(b.Delta, -0.3, 1e-12) {
		t.Fatalf("delta = %v", b.Delta)
	}
}

// Bonett & Price (2012): with n12 = 3 items right only in the published
// run and n21 = 5 right only in the new one, out of n = 20,
// p̃12 = 4/22, p̃21 = 6/22, centre 2/22 = 0.090909,
// SE = sqrt((p̃12 + p̃21 − (p̃12 − p̃21)²)/22) = 0.142427, and the 95%
// interval [−0.188243, +0.370061]. McNemar: P[X ≤ 3 | 8] = 93/256, p =
// 2·93/256.
func TestBonettPriceEquality(t *testing.T) {
	pubOK := func(i int) bool { return i < 3 || i >= 8 && i < 14 } // 3 worse, 6 both right
	newOK := func(i int) bool { return i >= 3 && i < 14 }          // 5 better
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: binary(20, pubOK)})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: binary(20, newOK)})
	r := mustCompare(t, pub, nw)
	b := r.Benchmarks[0]
	if b.Test.Worse != 3 || b.Test.Better != 5 {
		t.Fatalf("test = %+v", b.Test)
	}
	p12, p21 := 4.0/22, 6.0/22
	se := math.Sqrt((p12 + p21 - (p12-p21)*(p12-p21)) / 22)
	if !near(se, 0.142427, 1e-6) || !near(b.CI.SE, se, 1e-12) || !near(b.CI.Center, p21-p12, 1e-12) {
		t.Fatalf("ci = %+v, want centre %v se %v", b.CI, p21-p12, se)
	}
	if !near(b.CI.Lo, -0.188243, 1e-6) || !near(b.CI.Hi, 0.370061, 1e-6) {
		t.Fatalf("ci = [%v, %v], want [−0.188243, 0.370061]", b.CI.Lo, b.CI.Hi)
	}
	if want := 2 * 93.0 / 256; !near(b.Test.P, want, 1e-12) {
		t.Fatalf("p = %v, want %v", b.Test.P, want)
	}
	if !near(b.Delta, 0.1, 1e-12) {
		t.Fatalf("delta = %v, want +0.1 (unadjusted)", b.Delta)
	}
	if b.Verdict != Inconclusive {
		t.Fatalf("verdict %s", b.Verdict)
	}
}

func TestMcNemarTwoSidedSmall(t *testing.T) {
	// b = 1, c = 5: P[X ≤ 1 | 6] = 7/64, p = 14/64; symmetric in b, c.
	for _, bc := range [][2]int{{1, 5}, {5, 1}} {
		if p := mcnemarTwoSided(bc[0], bc[1]); !near(p, 14.0/64, 1e-12) {
			t.Fatalf("mcnemar(%d, %d) = %v", bc[0], bc[1], p)
		}
	}
	// b = c: 2·P[X ≤ 3 | 6] = 2·42/64 > 1, capped.
	if p := mcnemarTwoSided(3, 3); p != 1 {
		t.Fatalf("mcnemar(3, 3) = %v", p)
	}
	if p := mcnemarTwoSided(0, 0); p != 1 {
		t.Fatalf("mcnemar(0, 0) = %v", p)
	}
}

func TestDatasetDigestDifferent(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, meta: map[string]string{results.MetaDataset: "sha256:other-data"}})
	r := mustCompare(t, pub, nw)
	b := r.Benchmarks[0]
	if r.Verdict != Different || b.Verdict != Different || exitcode.For("reproduce", r.Verdict, false) != 1 {
		t.Fatalf("verdict %s: %q", b.Verdict, b.Reasons)
	}
	// Not comparable, apart from the numbers: those alone reproduce.
	if fmt.Sprint(b.NotComparable) != "[dataset digest]" || b.Statistics != Reproduced {
		t.Fatalf("not comparable %q, statistics %s", b.NotComparable, b.Statistics)
	}
	if strings.Contains(reasons(b), "sha256:other-data") {
		t.Fatalf("provenance among the statistical reasons: %q", b.Reasons)
	}
	if len(r.Provenance) != 1 || !r.Provenance[0].Methodology || r.Provenance[0].Field != "dataset digest" {
		t.Fatalf("provenance = %+v", r.Provenance)
	}
	out := text(t, r)
	nc := strings.Index(out, "    not comparable: the dataset digest differs")
	prov := strings.Index(out, "provenance differences")
	digest := strings.Index(out, "    gsm8k: dataset digest: sha256:data-gsm8k → sha256:other-data (methodology: not comparable)")
	if nc < 0 || prov < 0 || digest < prov || !strings.Contains(out, "whose verdict alone would be REPRODUCED") {
		t.Fatalf("text:\n%s", out)
	}
}

func TestModelAndSimulatedDifferent(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, meta: map[string]string{results.MetaModel: "other/model"}})
	r := mustCompare(t, pub, nw)
	if r.Verdict != Different || fmt.Sprint(r.Benchmarks[0].NotComparable) != "[model]" ||
		len(r.Provenance) != 1 || r.Provenance[0].Text() != "model: meta/llama-3.1-8b-instruct → other/model (methodology: not comparable)" {
		t.Fatalf("%s: %q %+v", r.Verdict, r.Benchmarks[0].NotComparable, r.Provenance)
	}
	if r.Reasons[0] != "1 of 1 benchmark different: gsm8k (not comparable)" {
		t.Fatalf("reasons %q", r.Reasons)
	}
	nw = writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, meta: map[string]string{results.MetaSimulated: "true"}})
	r = mustCompare(t, pub, nw)
	if r.Verdict != Different || fmt.Sprint(r.Benchmarks[0].NotComparable) != "[answers from]" ||
		r.Provenance[0].Text() != "answers from: real endpoint → simulated endpoint (methodology: not comparable)" {
		t.Fatalf("%s: %q %+v", r.Verdict, r.Benchmarks[0].NotComparable, r.Provenance)
	}
}

// A methodology value recorded on one side only (an older run) is
// listed, not decided on.
func TestUnrecordedMethodologyNotDecided(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, meta: map[string]string{results.MetaScoring: ""}})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	r := mustCompare(t, pub, nw)
	if r.Verdict != Reproduced || len(r.Notes) != 1 || r.Notes[0] != "gsm8k: scoring version is not recorded in the published run: not checked" {
		t.Fatalf("%s: %q", r.Verdict, r.Notes)
	}
}

func TestMissingBenchmarkInconclusive(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw}, bench{name: "mmlu", rewards: rw})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw}, bench{name: "extra", rewards: rw})
	r := mustCompare(t, pub, nw)
	if r.Verdict != Inconclusive || len(r.Benchmarks) != 2 {
		t.Fatalf("verdict %s, %d benchmarks", r.Verdict, len(r.Benchmarks))
	}
	g, m := r.Benchmarks[0], r.Benchmarks[1]
	if g.Benchmark != "gsm8k" || g.Verdict != Reproduced {
		t.Fatalf("gsm8k: %+v", g)
	}
	if m.Benchmark != "mmlu" || m.Verdict != Inconclusive || m.Metric != "pass@1" || m.Published.Items != 300 || !strings.HasPrefix(m.Reasons[0], "not reproduced: ") || !strings.Contains(m.Reasons[0], "no benchmark mmlu") {
		t.Fatalf("mmlu: %+v", m)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "benchmark extra is in the new run only") {
		t.Fatalf("notes %q", r.Notes)
	}
	if r.Reasons[0] != "1 of 2 benchmarks inconclusive: mmlu" {
		t.Fatalf("reasons %q", r.Reasons)
	}
}

// Four repeats with partial credit: the sign-flip test, two-sided (a run
// better by some amount and one worse by the same get the same p).
func TestRepeatsSignFlip(t *testing.T) {
	base := make([][]float64, 200)
	up := make([][]float64, 200)
	down := make([][]float64, 200)
	for i := range base {
		base[i] = []float64{0.5, 1, float64(i % 2), 0}
		up[i] = append([]float64(nil), base[i]...)
		down[i] = append([]float64(nil), base[i]...)
		if i%4 == 0 { // a quarter of the items gain (lose) one repeat's 0.5
			up[i][0], down[i][0] = 1, 0
		}
	}
	pub := writeRun(t, t.TempDir(), bench{name: "math", rewards: base})
	same := mustCompare(t, pub, writeRun(t, t.TempDir(), bench{name: "math", rewards: base}))
	b := same.Benchmarks[0]
	if b.Test.Name != TestSignFlip || b.Test.P != 1 || b.Test.Resamples != 10000 || b.Test.Seed != 42 || b.Metric != "mean_reward" {
		t.Fatalf("identical: test %+v metric %s", b.Test, b.Metric)
	}
	if b.Published.Repeats != 4 || b.Verdict != Reproduced {
		t.Fatalf("identical: %+v", b)
	}
	ru := mustCompare(t, pub, writeRun(t, t.TempDir(), bench{name: "math", rewards: up})).Benchmarks[0]
	rd := mustCompare(t, pub, writeRun(t, t.TempDir(), bench{name: "math", rewards: down})).Benchmarks[0]
	// 50 items move by 0.125 each: every sign-flip sum is 0.125·(2k−50),
	// k ~ Bin(50, ½); P[k = 50] = 2⁻⁵⁰, so p is the floor 2/10001.
	if ru.Test.P != rd.Test.P || !near(ru.Test.P, 2.0/10001, 1e-12) {
		t.Fatalf("p up %v, down %v, want both 2/10001", ru.Test.P, rd.Test.P)
	}
	if ru.Verdict != Different || rd.Verdict != Different || !near(ru.Delta, 0.03125, 1e-12) || !near(rd.Delta, -0.03125, 1e-12) {
		t.Fatalf("up %+v\ndown %+v", ru, rd)
	}
}

// An INCONCLUSIVE with items that disagree: ItemsNeeded and RepeatsNeeded
// are the smallest sizes whose interval, computed in the test from the
// formula, lies within the margin.
func TestNeededSizesFromFormula(t *testing.T) {
	// 40 items, one repeat, 2 worse and 2 better: d has mean 0,
	// population variance 4/40 = 0.1.
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: binary(40, func(i int) bool { return i < 2 || i >= 4 && i < 20 })})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: binary(40, func(i int) bool { return i >= 2 && i < 20 })})
	b := mustCompare(t, pub, nw).Benchmarks[0]
	if b.Verdict != Inconclusive {
		t.Fatalf("verdict %s: %q", b.Verdict, b.Reasons)
	}
	// With mean 0 the centre is 0; var_pop' = (n·0.1 + 2)/(n+2), so the
	// equivalence (90%) half-width is z90·sqrt(0.1n + 2)/(n+2).
	halfN := func(n float64) float64 { return z90 * math.Sqrt(0.1*n+2) / (n + 2) }
	if n := float64(b.ItemsNeeded); halfN(n) >= 0.03 || halfN(n-1) < 0.03 {
		t.Fatalf("items needed %d: half-width %v there, %v one fewer", b.ItemsNeeded, halfN(n), halfN(n-1))
	}
	// Repeats K on 40 items: the items' variance 0.1/K, half-width
	// z90·sqrt((4/K + 2)/42)/sqrt(42). Its floor, K → ∞, is
	// z90·sqrt(2)/42 = 0.055 > 0.03: repeats alone cannot decide it.
	if b.RepeatsNeeded != 0 {
		t.Fatalf("repeats needed %d, want 0 (the floor z90·√2/42 = %v > 0.03)", b.RepeatsNeeded, z90*math.Sqrt2/42)
	}
}

func TestCoverageAndFailureReasons(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw,
		failed: func(i, _ int) bool { return i%10 == 9 }, // 30 of 300 fail (already wrong)
		rows:   func(rows []results.Row) []results.Row { return rows[:290] }})
	r := mustCompare(t, pub, nw)
	b := r.Benchmarks[0]
	text := reasons(b)
	if !strings.Contains(text, "290 items pair, 10 only in the published run, 0 only in the new run") {
		t.Fatalf("no coverage reason: %q", b.Reasons)
	}
	// 29 of the 290 remaining samples are model errors: 10.0%.
	if !strings.Contains(text, "model-error rate 0.0% (0 of 300 scored samples) → 10.0% (29 of 290): model errors count as reward 0") {
		t.Fatalf("no failure-rate reason: %q", b.Reasons)
	}
	if b.Paired != 290 || b.Verdict != Reproduced {
		t.Fatalf("paired %d verdict %s", b.Paired, b.Verdict)
	}
}

// Infrastructure differences are listed and do not change the verdict.
func TestProvenanceDifferencesListed(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	infra := func(version, rev, gpu, fp string, hosts int) func(*metrics.Provenance) {
		return func(p *metrics.Provenance) {
			p.Build = &prov.Build{NelVersion: "x", Revision: rev}
			for h := range hosts {
				p.Hosts = append(p.Hosts, prov.Host{Hostname: fmt.Sprintf("node%d", h), GPUs: []string{gpu, gpu}})
			}
			p.Serving = []prov.Serving{{Service: "model", Role: "model", Engine: "vllm", ServerVersion: version,
				Image: "nvcr.io/vllm@sha256:1", Fingerprint: fp, Models: []prov.ServedModel{{ID: "m", Root: "/models/llama"}}}}
		}
	}
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, edit: infra("0.6.3", "abc123", "NVIDIA H100 80GB HBM3", "sha256:f1", 1)})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, meta: map[string]string{results.MetaNelVersion: "1.0.0"},
		edit: infra("0.7.1", "def456", "NVIDIA H200", "sha256:f2", 2)})
	r := mustCompare(t, pub, nw)
	if r.Verdict != Reproduced {
		t.Fatalf("verdict %s: %q", r.Verdict, r.Benchmarks[0].Reasons)
	}
	want := map[string][2]string{
		"nel version":         {"0.9.0", "1.0.0"},
		"nel build revision":  {"abc123", "def456"},
		"GPU types":           {"NVIDIA H100 80GB HBM3", "NVIDIA H200"},
		"host count":          {"1", "2"},
		"serving engine":      {"vllm 0.6.3", "vllm 0.7.1"},
		"serving fingerprint": {"sha256:f1", "sha256:f2"},
	}
	got := map[string][2]string{}
	for _, d := range r.Provenance {
		if d.Methodology || d.Benchmark != "gsm8k" {
			t.Errorf("difference %+v marked methodology or misplaced", d)
		}
		got[d.Field] = [2]string{d.Published, d.New}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("differences\n got %v\nwant %v", got, want)
	}
	if strings.Contains(reasons(r.Benchmarks[0]), "serving engine") {
		t.Fatalf("provenance among the statistical reasons: %q", r.Benchmarks[0].Reasons)
	}
	out := text(t, r)
	if !strings.Contains(out, "\n    gsm8k: serving engine: vllm 0.6.3 → vllm 0.7.1\n") {
		t.Fatalf("text:\n%s", out)
	}

	// A published run from before provenance records: one note, no
	// field-by-field differences.
	old := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw})
	r = mustCompare(t, old, nw)
	for _, d := range r.Provenance {
		if d.Field != "nel version" {
			t.Errorf("unexpected difference %+v", d)
		}
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "gsm8k: the published run records no serving provenance") {
		t.Fatalf("notes %q", r.Notes)
	}
}

func TestSingleBenchmarkDirsAndRendering(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw}, bench{name: "mmlu", rewards: rw})
	nw := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, meta: map[string]string{results.MetaDataset: "sha256:x|y"}})
	// One benchmark directory on each side.
	r := mustCompare(t, filepath.Join(pub, "gsm8k"), filepath.Join(nw, "gsm8k"))
	if len(r.Benchmarks) != 1 || r.Verdict != Different {
		t.Fatalf("%s %+v", r.Verdict, r.Benchmarks)
	}
	var md bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Reproduction of `" + recipeHash + "`: DIFFERENT",
		"| gsm8k | **DIFFERENT** (not comparable) | REPRODUCED | pass@1 | 0.7000 | 0.7000 | +0.0000 | [-0.0092, +0.0092] | [-0.0077, +0.0077] |",
		"| gsm8k | dataset digest | `sha256:data-gsm8k` | `sha256:x\\|y` | **methodology** (not comparable) |",
		// Each p-value column says its test and null hypothesis.
		"| 95% CI | 90% equivalence interval | Equivalence p (TOST, H0 \\|Δ\\| ≥ margin) | Difference p (two-sided, H0 Δ = 0) | Paired items |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"report_version", "verdict", "recipe_hash", "published", "new", "margin", "holm_family", "benchmarks", "provenance_differences", "reasons"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, data)
		}
	}
	bm := m["benchmarks"].([]any)[0].(map[string]any)
	if ci := bm["ci"].(map[string]any); ci["method"] != "adjusted_paired" {
		t.Errorf("ci = %v", ci)
	}
	if test := bm["test"].(map[string]any); test["name"] != TestMcNemar || test["p_holm"] != 1.0 {
		t.Errorf("test = %v", test)
	}
	if eq := bm["equivalence"].(map[string]any); eq["name"] != TestTOST || eq["level"] != 0.9 || eq["margin"] != 0.03 {
		t.Errorf("equivalence = %v", eq)
	}
	if bm["statistics"] != Reproduced || fmt.Sprint(bm["not_comparable"]) != "[dataset digest]" {
		t.Errorf("benchmark = %v", bm)
	}
}

func TestUnreadableRunIsUsageError(t *testing.T) {
	_, err := Compare(t.TempDir(), t.TempDir(), DefaultOptions())
	var ue *compare.UsageError
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "published run: ") {
		t.Fatalf("err = %v", err)
	}
}
