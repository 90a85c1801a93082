package metrics_test

import (
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

// infra makes r an infrastructure failure, as the shard records one.
func infra(r results.Row, category, msg string) results.Row {
	r.Reward, r.Correct = 0, nil
	r.ErrorCategory, r.Outcome, r.ErrorMessage = category, "infra_error", msg
	return r
}

// bench is a plan benchmark with the given max_error_rate.
func bench(maxErrorRate float64) *plan.Benchmark {
	return &plan.Benchmark{Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Repeats: 1, MaxErrorRate: maxErrorRate}
}

// 100 items of one repeat: 90 answered correctly, 10 lost to the
// endpoint. The 10 are not wrong answers: pass@1 = 90/90 = 1, not
// 90/100 = 0.9.
func TestInfraErrorsAreNotScored(t *testing.T) {
	var rows []results.Row
	for i := range 100 {
		r := row(fmt.Sprintf("q%03d", i), int64(i), 0, 1, "")
		if i%10 == 3 {
			// Items 3, 13, …, 93: 10 infrastructure failures.
			cat := "server_error"
			if i == 93 {
				cat = "timeout"
			}
			r = infra(r, cat, fmt.Sprintf("http://sim/v1: 503 for q%03d", i))
		}
		rows = append(rows, r)
	}
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Benchmark: bench(0.1), Resamples: 100})
	if b.Headline.Metric != "pass@1" || b.Headline.Value == nil {
		t.Fatalf("headline %+v", b.Headline)
	}
	near(t, "pass@1", *b.Headline.Value, 1)
	if b.Headline.N != 90 {
		t.Errorf("headline over %d items, want the 90 scored", b.Headline.N)
	}
	// What ran and what was scored.
	if b.Samples != 100 || b.Items != 100 || b.ScoredSamples != 90 || b.ScoredItems != 90 || b.Correct == nil || *b.Correct != 90 {
		t.Errorf("samples %d items %d, scored %d of %d items, correct %v; want 100, 100, 90, 90, 90", b.Samples, b.Items, b.ScoredSamples, b.ScoredItems, b.Correct)
	}
	v := b.Validity
	// 10/100 = 0.1, exactly max_error_rate 0.1: valid.
	if v.Invalid || v.InfraErrors != 10 || v.Samples != 100 || v.Rate != 0.1 || v.MaxErrorRate != 0.1 || v.MaxErrorRateFrom != "plan" || v.Reason != "" {
		t.Errorf("validity %+v: want 10 of 100 infrastructure failures, valid at max_error_rate 0.1 from the plan", v)
	}
	// By class, by count: server_error 9 (3, 13, …, 83), timeout 1 (93).
	if len(v.Classes) != 2 || v.Classes[0].Category != "server_error" || v.Classes[0].Count != 9 || v.Classes[1].Category != "timeout" || v.Classes[1].Count != 1 {
		t.Fatalf("classes %+v", v.Classes)
	}
	if c := v.Classes[0]; c.Outcome != "infra_error" || c.Share != 0.09 || len(c.Exemplars) != 3 || c.Exemplars[0].Error != "http://sim/v1: 503 for q003" {
		t.Errorf("server_error class %+v", c)
	}
	if b.Failures.Failed != 0 || b.Failures.Samples != 90 {
		t.Errorf("failure analysis %+v: want no model error among 90 scored samples", b.Failures)
	}
	if !slicesContain(b.Notes, "10 infrastructure failures (server_error 9, timeout 1) not scored: the statistics are over the other 90 samples, of 90 items") {
		t.Errorf("notes %q", b.Notes)
	}

	// Without the plan the default max_error_rate (0.05) applies, and
	// 10% is above it.
	b = metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Resamples: 100})
	if v := b.Validity; !v.Invalid || v.MaxErrorRate != plan.DefaultMaxErrorRate || v.MaxErrorRateFrom != "default" {
		t.Errorf("validity %+v: want INVALID at the default max_error_rate", v)
	}
}

// A benchmark is INVALID strictly above max_error_rate: 6 infrastructure
// failures in 100 samples (6%) against 5% is, 5 in 100 (exactly 5%) is
// not.
func TestValidityThreshold(t *testing.T) {
	rows := func(failed int) []results.Row {
		var rs []results.Row
		for i := range 100 {
			r := row(fmt.Sprintf("q%03d", i), int64(i), 0, float64(i%2), "")
			if i < failed {
				r = infra(r, "rate_limit", "429 Too Many Requests")
			}
			rs = append(rs, r)
		}
		return rs
	}
	b := metrics.Compute(metrics.Input{Rows: rows(6), Meta: meta, Benchmark: bench(0.05), Resamples: 100})
	v := b.Validity
	if !v.Invalid || v.InfraErrors != 6 || v.Rate != 0.06 {
		t.Fatalf("6 of 100: validity %+v, want INVALID at 6%%", v)
	}
	const reason = "6 of 100 samples (6%) failed for infrastructure reasons (rate_limit 6), more than max_error_rate 5%"
	if v.Reason != reason {
		t.Errorf("reason %q\nwant   %q", v.Reason, reason)
	}
	if !slicesContain(b.Notes, "INVALID: "+reason+": the numbers do not measure the model; fix the cause and run it again") {
		t.Errorf("notes %q", b.Notes)
	}
	// The numbers are still computed over the scored samples (eval.json
	// keeps them for diagnosis; what renders them says INVALID): items
	// 6..99, of which the odd ones are correct: 47 of 94.
	near(t, "pass@1 over the scored items", *b.Headline.Value, 47.0/94)

	b = metrics.Compute(metrics.Input{Rows: rows(5), Meta: meta, Benchmark: bench(0.05), Resamples: 100})
	if v := b.Validity; v.Invalid || v.InfraErrors != 5 || v.Rate != 0.05 || v.Reason != "" {
		t.Errorf("5 of 100: validity %+v, want valid at exactly 5%%", v)
	}
	// max_error_rate 0: any infrastructure failure makes it INVALID.
	b = metrics.Compute(metrics.Input{Rows: rows(1), Meta: meta, Benchmark: bench(0), Resamples: 100})
	if !b.Validity.Invalid {
		t.Errorf("1 of 100 at max_error_rate 0: valid")
	}
}

// Items keep their own number of scored repeats; pass@k's estimator is
// per item and undefined for n < k, so such an item is left out of
// pass@k; an item with no scored repeat is not scored at all.
func TestPerItemScoredRepeats(t *testing.T) {
	X := -1.0 // an infrastructure failure
	design := []struct {
		id      string
		rewards []float64
	}{
		{"a", []float64{1, 1, 0, 0}}, // n 4, c 2
		{"b", []float64{1, X, X, 0}}, // n 2, c 1
		{"c", []float64{X, X, X, X}}, // not scored
		{"d", []float64{1, 1, 1, 1}}, // n 4, c 4
	}
	var rows []results.Row
	for i, it := range design {
		for rep, r := range it.rewards {
			rw := row(it.id, int64(i), int64(rep), max(r, 0), "")
			if r == X {
				rw = infra(rw, "sandbox_error", "docker: cannot connect to the daemon")
			}
			rows = append(rows, rw)
		}
	}
	// a's last repeat is a model error: scored, as wrong.
	rows[3].ErrorCategory, rows[3].Outcome = "format_error", "model_error"
	// An outcome recorded on the row wins over the one its category
	// implies (a row an older writer left without one gets the latter:
	// b's failures carry infra_error, c's rows below carry none).
	for i := 8; i < 12; i++ {
		rows[i].Outcome = ""
	}
	pb := bench(1)
	pb.Repeats = 4
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Benchmark: pb, Resamples: 200})
	if b.Items != 4 || b.ScoredItems != 3 || b.Samples != 16 || b.ScoredSamples != 10 || *b.Correct != 7 {
		t.Fatalf("items %d scored %d, samples %d scored %d, correct %d; want 4, 3, 16, 10, 7", b.Items, b.ScoredItems, b.Samples, b.ScoredSamples, *b.Correct)
	}
	if b.Validity.InfraErrors != 6 || b.Validity.Invalid {
		t.Errorf("validity %+v: want 6 infrastructure failures, valid at max_error_rate 1", b.Validity)
	}
	got := map[string]metrics.Score{}
	for _, m := range b.Metrics {
		got[m.Metric] = m
	}
	// pass@1: item means a 2/4, b 1/2, d 4/4 → (0.5 + 0.5 + 1)/3 = 2/3.
	near(t, "pass@1", *got["pass@1"].Value, 2.0/3)
	// pass@2 = 1 − C(n−c, 2)/C(n, 2): a 1 − C(2,2)/C(4,2) = 1 − 1/6 = 5/6;
	// b 1 − C(1,2)/C(2,2) = 1 − 0 = 1; d 1 → (5/6 + 1 + 1)/3 = 17/18.
	near(t, "pass@2", *got["pass@2"].Value, 17.0/18)
	if got["pass@2"].N != 3 {
		t.Errorf("pass@2 over %d items, want 3", got["pass@2"].N)
	}
	// pass@4: b has n = 2 < 4 and is left out; a 1 − C(2,4)/C(4,4) = 1,
	// d 1 → 1 over 2 items.
	near(t, "pass@4", *got["pass@4"].Value, 1)
	if got["pass@4"].N != 2 {
		t.Errorf("pass@4 over %d items, want 2", got["pass@4"].N)
	}
	if !slicesContain(b.Notes, "pass@k is over the items with at least k scored samples (an item that lost repeats to infrastructure failures has fewer): pass@4 over 2 of the 3 scored items") {
		t.Errorf("notes %q", b.Notes)
	}
	if f := b.Failures; f.Failed != 1 || f.Samples != 10 || f.Categories[0].Category != "format_error" {
		t.Errorf("failure analysis %+v: want the one format_error of 10 scored samples", f)
	}
	// Variance: within = mean sample variance of a [1 1 0 0] (1/3), b
	// [1 0] (1/2), d (0) = 5/18; between = max(0, Var(0.5, 0.5, 1) −
	// within/K̃) with K̃ = 3/(1/4 + 1/2 + 1/4) = 3: 1/12 − 5/54 < 0 → 0.
	// SE at 3 items × K̃ = 3 repeats: sqrt((0 + (5/18)/3)/3) = sqrt(5/162).
	v := b.Variance
	near(t, "within", v.Within, 5.0/18)
	near(t, "between", v.Between, 0)
	near(t, "SE", v.SE, math.Sqrt(5.0/162))
}

// An eval.json of version 1 (before outcomes) reads as version 2: its
// failures are split by the outcome their category implies. Its scores
// count the infrastructure failures as wrong, which a note says; beside
// results.parquet it is recomputed from the rows instead.
func TestReadVersion1(t *testing.T) {
	dir := t.TempDir()
	v1 := `{"bundle_version": 1, "benchmark": "gsm8k", "name": "gsm8k", "samples": 200, "items": 200, "repeats": 1,
  "headline": {"metric": "pass@1", "value": 0.5, "n": 200},
  "failures": {"samples": 200, "failed": 14, "rate": 0.07, "categories": [
    {"category": "timeout", "count": 8, "share": 0.04, "exemplars": [{"item_id": "q1", "item_idx": 1, "repeat": 0, "error": "deadline"}]},
    {"category": "format_error", "count": 4, "share": 0.02, "exemplars": []},
    {"category": "server_error", "count": 2, "share": 0.01, "exemplars": []}]}}`
	path := rundir.Dir(dir).Benchmark("gsm8k").Bundle()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := metrics.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Infrastructure: timeout 8 + server_error 2 = 10 of 200 = 5%, at the
	// default max_error_rate: valid. Model errors: format_error 4 of the
	// 190 scored samples.
	v := b.Validity
	if b.BundleVersion != metrics.BundleVersion || v.InfraErrors != 10 || v.Rate != 0.05 || v.Invalid || len(v.Classes) != 2 || v.Classes[0].Outcome != "infra_error" {
		t.Errorf("validity %+v", v)
	}
	if f := b.Failures; f.Failed != 4 || f.Samples != 190 || b.ScoredSamples != 190 || len(f.Categories) != 1 || f.Categories[0].Share != 4.0/190 {
		t.Errorf("failures %+v", f)
	}
	if !slicesContain(b.Notes, "computed by an older nel (bundle version 1), whose scores count the 10 infrastructure failures as wrong answers: run nel-run merge again to score without them") {
		t.Errorf("notes %q", b.Notes)
	}

	// Beside its rows, the bundle is recomputed from them.
	rows := []results.Row{row("q0", 0, 0, 1, ""), infra(row("q1", 1, 0, 0, ""), "timeout", "deadline")}
	rows[1].Outcome = "" // as a file without the outcome column reads back
	if err := results.WriteRows(filepath.Join(dir, "gsm8k", "results.parquet"), rows, meta); err != nil {
		t.Fatal(err)
	}
	suite, err := metrics.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b = suite[0]
	if b.Samples != 2 || b.ScoredSamples != 1 || *b.Headline.Value != 1 || b.Repeats != 1 || !b.Validity.Invalid {
		t.Errorf("recomputed: samples %d, scored %d, headline %v, repeats %d, validity %+v", b.Samples, b.ScoredSamples, *b.Headline.Value, b.Repeats, b.Validity)
	}
}

func TestPercent(t *testing.T) {
	for x, want := range map[float64]string{0.06: "6%", 0.05: "5%", 0.0504: "5.04%", 1.0 / 3: "33.33%", 1: "100%", 0: "0%", 0.004: "0.4%"} {
		if got := metrics.Percent(x); got != want {
			t.Errorf("Percent(%v) = %q, want %q", x, got, want)
		}
	}
}

func slicesContain(xs []string, s string) bool {
	for _, x := range xs {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}
