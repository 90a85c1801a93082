package metrics_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

func row(item string, idx, repeat int64, reward float64, cat string) results.Row {
	c := reward == 1
	return results.Row{
		RecipeHash: "sha256:r", Benchmark: "gsm8k", ItemID: item, ItemIdx: idx, Repeat: repeat,
		Category: cat, Reward: reward, Correct: &c, LatencyMS: float64(100 * (idx + 1)),
		CompletionTokens: 10, PromptTokens: 20, Attempts: 1, FinishReason: "stop",
	}
}

var meta = map[string]string{
	results.MetaBenchmark: "gsm8k", results.MetaRecipeHash: "sha256:r", results.MetaPlanHash: "sha256:p",
	results.MetaBenchmarkHash: "sha256:b", results.MetaModel: "m", results.MetaShard: "merged/4",
	results.MetaStartedAt: "2026-11-21T10:00:00Z", results.MetaEndedAt: "2026-11-21T10:00:10Z",
	results.MetaRepeats: "2",
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

// Three items × 2 repeats, rewards [1 1] [1 0] [0 0], worked by hand.
func TestComputeByHand(t *testing.T) {
	rows := []results.Row{
		row("a", 0, 0, 1, ""), row("a", 0, 1, 1, ""),
		row("b", 1, 0, 1, ""), row("b", 1, 1, 0, ""),
		row("c", 2, 0, 0, ""), row("c", 2, 1, 0, ""),
	}
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Resamples: 2000})
	if !b.Binary || b.Items != 3 || b.Samples != 6 || b.Repeats != 2 {
		t.Fatalf("binary %v items %d samples %d repeats %d", b.Binary, b.Items, b.Samples, b.Repeats)
	}
	if b.Headline.Metric != "pass@1" || b.Headline.Value == nil {
		t.Fatalf("headline %+v", b.Headline)
	}
	near(t, "pass@1", *b.Headline.Value, 0.5)
	// Item means 1, .5, 0: s = 0.5, SE = 0.5/√3.
	se := 0.5 / math.Sqrt(3)
	near(t, "SE", b.Headline.CLT.SE, se)
	// Binary rewards: Korn & Graubard's effective sample size
	// p̂(1−p̂)/SE² = 0.25/(1/12) = 3 (below the 6 samples): with
	// t_{0.975, 2} = 4.302652729749464, n* = 3·(1.959964/4.302653)² =
	// 0.6225079 trials and x = n*/2 = 0.3112539. Both counts are within 2
	// of their end, so each bound is Clopper–Pearson's where it reaches
	// further than Jeffreys' (0.01326164, the 2.5% quantile of
	// Beta(x+½, n*−x+½)): the 2.5% quantile of Beta(x, n*−x+1) =
	// Beta(0.3112539, 1.3112539), 4.9973178e-06 (bisection on a continued
	// fraction of the regularized incomplete beta, in Python outside the
	// code), and 1 − that. Three items on two df say next to nothing.
	ci := b.Headline.CLT
	near(t, "effective n", ci.EffectiveN, 3)
	near(t, "CLT lo", ci.Lo, 4.997317819323642e-06)
	near(t, "CLT hi", ci.Hi, 1-4.997317819323642e-06)
	if ci.Method != "jeffreys_effective" || ci.DF != 2 {
		t.Errorf("method %s, df %d", ci.Method, ci.DF)
	}
	// The bootstrap of three values stays within their range.
	if bs := b.Headline.Bootstrap; bs == nil || bs.Lo < 0 || bs.Hi > 1 || bs.Lo > 0.5 || bs.Hi < 0.5 || bs.Resamples != 2000 || !bs.Parity {
		t.Errorf("bootstrap %+v", bs)
	}
	if len(b.Metrics) != 2 || b.Metrics[1].Metric != "pass@2" {
		t.Fatalf("metrics %+v", b.Metrics)
	}
	// pass@2: item a 1, item b 1 − C(1,2)/C(2,2) = 1, item c 0.
	near(t, "pass@2", *b.Metrics[1].Value, 2.0/3)
	// Each item holds one 2-sample block, so pass@2 is 2 successes in 3
	// trials: Wilson's interval, its lower end
	// (p̂ + z²/6 − z·√(p̂(1−p̂)/3 + z²/36))/(1 + z²/3) at p̂ = 2/3, and one
	// failure from the end Jeffreys' upper bound, 1 − q with
	// I_q(1.5, 2.5) = 0.025 (both from testdata/stats/wilson_ends.py, a
	// power series of the incomplete beta and bisection).
	if ci := b.Metrics[1].CLT; ci.Method != "wilson_ends" || ci.EffectiveN != 3 {
		t.Errorf("pass@2 interval %+v", ci)
	}
	near(t, "pass@2 lo", b.Metrics[1].CLT.Lo, 0.20765960080204765)
	near(t, "pass@2 hi", b.Metrics[1].CLT.Hi, 1-0.038747617785165181)
	// Within: item variances 0, 0.5, 0 → 1/6; between: Var(means) 0.25 − (1/6)/2.
	v := b.Variance
	near(t, "within", v.Within, 1.0/6)
	near(t, "between", v.Between, 0.25-1.0/12)
	near(t, "MDE", v.MDE, (1.959963984540054+0.8416212335729143)*math.Sqrt2*se)
	if v.OptimalRepeats != 1 { // sqrt((1/6)/(1/6)) = 1
		t.Errorf("optimal repeats %d", v.OptimalRepeats)
	}
	if b.Provenance.Shards != 4 || b.Provenance.BenchmarkHash != "sha256:b" {
		t.Errorf("provenance %+v", b.Provenance)
	}
	near(t, "wall", b.Runtime.WallSeconds, 10)
	near(t, "tokens/s", b.Runtime.TokensPerSecond, 6)
	if b.Runtime.FinishReasons["stop"] != 6 || b.Runtime.Attempts["1"] != 6 {
		t.Errorf("runtime %+v", b.Runtime)
	}
}

// Latency percentiles use numpy's linear interpolation: for 1..100,
// p50 = 50.5, p90 = 90.1, p99 = 99.01.
func TestLatencyPercentiles(t *testing.T) {
	var rows []results.Row
	for i := range 100 {
		r := row(string(rune('A'+i%26))+strings.Repeat("x", i/26), int64(i), 0, 1, "")
		r.LatencyMS = float64(100 - i)
		rows = append(rows, r)
	}
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Resamples: 100})
	p := b.Runtime.LatencyMS
	near(t, "p50", p.P50, 50.5)
	near(t, "p90", p.P90, 90.1)
	near(t, "p99", p.P99, 99.01)
	near(t, "max", p.Max, 100)
	total := 0
	for _, n := range p.Histogram {
		total += n
	}
	if total != 100 || p.BucketMS <= 0 {
		t.Errorf("histogram of %d samples, bucket %v", total, p.BucketMS)
	}
}

// Categories: per-category scores and a clustered interval for the
// headline.
func TestCategoriesAndClusters(t *testing.T) {
	var rows []results.Row
	for i := range 40 {
		cat := "algebra"
		if i%2 == 1 {
			cat = "geometry"
		}
		reward := 0.0
		if i%4 < 3 {
			reward = 1
		}
		rows = append(rows, row(string(rune('a'+i%26))+strings.Repeat("z", i/26), int64(i), 0, reward, cat))
	}
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Resamples: 500})
	if b.Headline.CLT.Method != "korn_graubard_clustered" || b.Headline.CLT.Clusters != 2 || b.Headline.CLT.DF != 1 {
		t.Errorf("headline interval %+v", b.Headline.CLT)
	}
	// The cluster bootstrap is NeMo's parity figure, and eval.json says
	// so beside its method; nel's interval is not marked.
	if bs := b.Headline.Bootstrap; bs == nil || bs.Method != "bootstrap_cluster_expanded" || !bs.Parity || b.Headline.CLT.Parity {
		t.Errorf("bootstrap %+v beside %+v: want the cluster bootstrap marked parity, the CLT not", bs, b.Headline.CLT)
	}
	js, err := json.Marshal(b.Headline)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"method":"bootstrap_cluster_expanded","level":0.95,`) || strings.Count(string(js), `"parity":true`) != 1 {
		t.Errorf("eval.json headline %s: want one \"parity\":true, on the bootstrap", js)
	}
	if len(b.Categories) != 2 || b.Categories[0].Name != "algebra" || b.Categories[1].Name != "geometry" {
		t.Fatalf("categories %+v", b.Categories)
	}
	// algebra: i%4 ∈ {0,2} → rewards 1,1 → 1.0; geometry: {1,3} → 1,0 → 0.5.
	near(t, "algebra", *b.Categories[0].Score.Value, 1)
	near(t, "geometry", *b.Categories[1].Score.Value, 0.5)
	if b.Categories[1].Score.N != 20 {
		t.Errorf("geometry n %d", b.Categories[1].Score.N)
	}
}

// Fractional rewards give mean_reward; extra scorers get their own metric.
func TestFractionalAndScorers(t *testing.T) {
	rows := []results.Row{
		row("a", 0, 0, 0.5, ""), row("b", 1, 0, 0.25, ""), row("c", 2, 0, 1, ""),
	}
	for i := range rows {
		rows[i].Correct = nil
		rows[i].Scores = map[string]float64{"scorer:exact_match": float64(i % 2)}
	}
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Resamples: 500})
	if b.Binary || b.Headline.Metric != "mean_reward" {
		t.Fatalf("headline %+v", b.Headline)
	}
	near(t, "mean_reward", *b.Headline.Value, 1.75/3)
	if len(b.Metrics) != 2 || b.Metrics[1].Metric != "scorer:exact_match" {
		t.Fatalf("metrics %+v", b.Metrics)
	}
	near(t, "exact_match", *b.Metrics[1].Value, 1.0/3)
}

// A NAME/num + NAME/den pair of row scores is one pooled metric NAME:
// Σnum/Σden over items (repeats summed into their item), not the mean of
// per-row ratios, with a delta-method and a bootstrap interval.
func TestRatioMetric(t *testing.T) {
	// Item a: 2 repeats of 1 instruction, followed once; item b: 3
	// instructions, followed 3; item c: 4 instructions, followed 1.
	// Pooled: (1 + 3 + 1)/(2 + 3 + 4) = 5/9. Mean of per-row ratios would
	// be (1 + 0 + 1 + 0.25)/4 = 0.5625.
	rows := []results.Row{
		row("a", 0, 0, 1, ""), row("a", 0, 1, 0, ""), row("b", 1, 0, 1, ""), row("c", 2, 0, 0, ""),
	}
	counts := [][2]float64{{1, 1}, {0, 1}, {3, 3}, {1, 4}}
	for i := range rows {
		rows[i].Scores = map[string]float64{"ifeval:inst/num": counts[i][0], "ifeval:inst/den": counts[i][1], "ifeval:prompt": rows[i].Reward}
	}
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Resamples: 500})
	var names []string
	for _, m := range b.Metrics {
		names = append(names, m.Metric)
	}
	if got := strings.Join(names, ","); got != "pass@1,pass@2,ifeval:inst,ifeval:prompt" {
		t.Fatalf("metrics %s", got)
	}
	inst := b.Metrics[2]
	near(t, "ifeval:inst", *inst.Value, 5.0/9)
	if inst.N != 3 || inst.CLT == nil || inst.CLT.Method != "jeffreys_ratio" || inst.Bootstrap == nil {
		t.Fatalf("ratio metric %+v", inst)
	}
	if !(inst.CLT.Lo >= 0 && inst.CLT.Lo < 5.0/9 && inst.CLT.Hi > 5.0/9 && inst.CLT.Hi <= 1) {
		t.Fatalf("ratio interval %+v", inst.CLT)
	}
	// Korn & Graubard on the effective sample size, by hand: the delta
	// method's z_i = (n_i − R·d_i)/d̄ = (−1/27, 4/9, −11/27) (d̄ = 3),
	// variance 0.1824417, SE = √(0.1824417/3) = 0.246605; effective n =
	// (5/9)(4/9)/SE² = 4.06015 (under the 9 instructions); df-adjusted
	// with t_{0.975, 2} = 4.302653, n* = 4.06015·(1.959964/4.302653)² =
	// 0.842492 and x = (5/9)n* = 0.468051. Both counts lie within 2 of
	// their end, so the ends are Clopper–Pearson's, which reach further
	// than Jeffreys' (0.025312 and 0.984775): the 2.5% quantile of
	// Beta(x, n*−x+1) and the 97.5% of Beta(x+1, n*−x), 0.00025667 and
	// 0.99996751 (bisection on a continued fraction of the regularized
	// incomplete beta, in Python; to 1e−6: n is rounded here): three items
	// on two df say little.
	if ci := inst.CLT; ci.DF != 2 || math.Abs(ci.SE-0.246605) > 1e-6 || math.Abs(ci.EffectiveN-4.06015) > 1e-4 ||
		math.Abs(ci.Lo-0.00025667) > 1e-6 || math.Abs(ci.Hi-0.99996751) > 1e-6 {
		t.Fatalf("ratio interval %+v: want Korn & Graubard on 4.06 effective trials with t(2)", ci)
	}
	// An item-mean metric next to it is unchanged: (0.5 + 1 + 0)/3.
	near(t, "ifeval:prompt", *b.Metrics[3].Value, 0.5)
}

// Model errors: counts, shares and at most three exemplars each, with
// the trajectory's error text (the row's error_message first); an
// all-failed and an empty run say so.
func TestFailuresAndNotes(t *testing.T) {
	var rows []results.Row
	errs := map[metrics.RowKey]string{}
	for i := range 5 {
		r := row(string(rune('a'+i)), int64(i), 0, 0, "")
		r.ErrorCategory = "format_error"
		r.Extracted = "x" + r.ItemID
		errs[metrics.RowKey{ItemID: r.ItemID, Repeat: 0}] = "no number in " + r.ItemID
		rows = append(rows, r)
	}
	rows[1].ErrorMessage = "the row's own message"
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Errors: errs, Resamples: 100})
	f := b.Failures
	if f.Samples != 5 || f.Failed != 5 || f.Rate != 1 || len(f.Categories) != 1 || f.Categories[0].Count != 5 || len(f.Categories[0].Exemplars) != 3 {
		t.Fatalf("failures %+v", f)
	}
	if c := f.Categories[0]; c.Outcome != "model_error" || c.Share != 1 {
		t.Errorf("category %+v: want labelled model_error, share 1", c)
	}
	if e := f.Categories[0].Exemplars; e[0].ItemID != "a" || e[0].Error != "no number in a" || e[1].Error != "the row's own message" {
		t.Errorf("exemplars %+v", e)
	}
	// Model errors are scored (as wrong): a pass@1 of 0, not "no score".
	if b.ScoredSamples != 5 || b.Headline.Value == nil || *b.Headline.Value != 0 || b.Validity.InfraErrors != 0 || b.Validity.Invalid {
		t.Errorf("scored %d, headline %v, validity %+v", b.ScoredSamples, b.Headline.Value, b.Validity)
	}
	if !strings.Contains(strings.Join(b.Notes, "\n"), "every scored sample is a model error (format_error 5), scored as wrong") {
		t.Errorf("notes %q", b.Notes)
	}

	empty := metrics.Compute(metrics.Input{Meta: meta})
	if empty.Headline.Value != nil || empty.Headline.CLT != nil || empty.Variance != nil || empty.Validity.Invalid {
		t.Errorf("empty headline %+v, validity %+v", empty.Headline, empty.Validity)
	}
	data, err := metrics.Marshal(empty)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "NaN") || !strings.Contains(string(data), "no rows") {
		t.Errorf("empty bundle:\n%s", data)
	}
}

// The bundle is a pure function of its input: same bytes every time, and
// it round-trips through eval.json.
func TestDeterministicRoundTrip(t *testing.T) {
	var rows []results.Row
	for i := range 50 {
		for r := range 3 {
			rows = append(rows, row(string(rune('a'+i%26))+strings.Repeat("q", i/26), int64(i), int64(r), float64((i+r)%2), ""))
		}
	}
	pb := &plan.Benchmark{Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:b", Repeats: 3, MaxConcurrent: 64}
	b1 := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Benchmark: pb})
	b2 := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Benchmark: pb})
	j1, _ := metrics.Marshal(b1)
	j2, _ := metrics.Marshal(b2)
	if string(j1) != string(j2) {
		t.Fatal("two computations of the same rows differ")
	}
	if _, ok := b1.Methodology["max_concurrent"]; ok {
		t.Error("methodology keeps max_concurrent, a deployment field")
	}
	if b1.Methodology["repeats"] != 3.0 {
		t.Errorf("methodology %v", b1.Methodology)
	}
	// pass@k for k = 2 and 3 (repeats), after pass@1.
	var names []string
	for _, m := range b1.Metrics {
		names = append(names, m.Metric)
	}
	if strings.Join(names, ",") != "pass@1,pass@2,pass@3" {
		t.Errorf("metrics %v", names)
	}

	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(filepath.Join(run, "gsm8k"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := metrics.WriteFile(rundir.Dir(run).Benchmark("gsm8k").Bundle(), b1); err != nil {
		t.Fatal(err)
	}
	// A second benchmark merged without eval.json is computed from Parquet.
	if err := os.MkdirAll(filepath.Join(run, "mmlu"), 0o755); err != nil {
		t.Fatal(err)
	}
	m2 := map[string]string{}
	for k, v := range meta {
		m2[k] = v
	}
	m2[results.MetaBenchmark] = "mmlu"
	if err := results.WriteRows(filepath.Join(run, "mmlu", "results.parquet"), rows, m2); err != nil {
		t.Fatal(err)
	}
	suite, err := metrics.ReadDir(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(suite) != 2 || suite[0].Benchmark != "gsm8k" || suite[1].Benchmark != "mmlu" {
		t.Fatalf("suite %d bundles", len(suite))
	}
	j3, _ := metrics.Marshal(suite[0])
	if string(j3) != string(j1) {
		t.Error("eval.json does not round-trip")
	}
	if *suite[1].Headline.Value != *b1.Headline.Value {
		t.Errorf("from Parquet %v, from rows %v", *suite[1].Headline.Value, *b1.Headline.Value)
	}
	if _, err := metrics.ReadDir(filepath.Join(dir, "nothing")); err == nil {
		t.Error("a missing directory reads")
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.ReadDir(filepath.Join(dir, "empty")); err == nil || !strings.Contains(err.Error(), "no eval.json or results.parquet") {
		t.Errorf("empty dir: %v", err)
	}
}

// A merged benchmark whose failures have no trajectories file still gets
// its bundle (exemplars without text); with the file, the texts are read.
func TestFromParquetErrorTexts(t *testing.T) {
	dir := t.TempDir()
	r := row("a", 0, 0, 0, "")
	r.ErrorCategory = "timeout"
	rows := []results.Row{r, row("b", 1, 0, 1, "")}
	if err := results.WriteRows(filepath.Join(dir, "results.parquet"), rows, meta); err != nil {
		t.Fatal(err)
	}
	b, err := metrics.FromParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := b.Validity.Classes[0].Exemplars[0]; e.ItemID != "a" || e.Error != "" {
		t.Errorf("exemplar without trajectories %+v", e)
	}
	ts := []results.Trajectory{
		{ItemID: "a", Repeat: 0, Error: "deadline exceeded"},
		{ItemID: "b", Repeat: 0, Error: "not a failure"},
	}
	if err := results.WriteTrajectories(filepath.Join(dir, "trajectories.parquet"), ts, meta); err != nil {
		t.Fatal(err)
	}
	texts, err := metrics.ErrorTexts(rows, filepath.Join(dir, "trajectories.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 1 || texts[metrics.RowKey{ItemID: "a", Repeat: 0}] != "deadline exceeded" {
		t.Errorf("error texts %v", texts)
	}
	b, err = metrics.FromParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := b.Validity.Classes[0].Exemplars[0]; e.Error != "deadline exceeded" {
		t.Errorf("exemplar %+v", e)
	}
}

// Every item right: the interval is never the zero-width [1, 1]. With one
// reward per item it is Wilson's [n/(n+z²), 1] (n = 50, z = 1.96: 0.92865);
// with repeats, Wilson on the items (the effective sample size cannot be
// estimated from a zero variance) with t_{n−1}.
func TestAllCorrectNeverZeroWidth(t *testing.T) {
	var one, four []results.Row
	for i := range 50 {
		id := fmt.Sprintf("q%02d", i)
		one = append(one, row(id, int64(i), 0, 1, ""))
		for k := range 4 {
			four = append(four, row(id, int64(i), int64(k), 1, ""))
		}
	}
	z := 1.959963984540054
	b := metrics.Compute(metrics.Input{Rows: one, Meta: meta, Resamples: 200})
	ci := b.Headline.CLT
	if ci.Method != "wilson_ends" || ci.Hi != 1 {
		t.Errorf("k = 1: %+v", ci)
	}
	// The exact one-sided bound: p⁵⁰ = 0.05.
	near(t, "k = 1 lo", ci.Lo, math.Pow(0.05, 1.0/50))
	b = metrics.Compute(metrics.Input{Rows: four, Meta: meta, Resamples: 200})
	ci = b.Headline.CLT
	if ci.Method != "jeffreys_effective" || ci.EffectiveN != 50 || ci.DF != 49 || ci.Hi != 1 {
		t.Errorf("k = 4: %+v", ci)
	}
	// At p̂ = 1 the Jeffreys interval takes Brown, Cai & DasGupta's
	// modification, Clopper–Pearson's lower end: p^n* = 0.025, with
	// n* = 50·(z/t_{0.975, 49})² the df-adjusted trials.
	tq := 2.0095752371292397 // t_{0.975, 49} (mpmath)
	near(t, "k = 4 lo", ci.Lo, math.Pow(0.025, 1/(50*(z/tq)*(z/tq))))
}
