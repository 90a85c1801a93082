// Package reporttest holds the test suite of bundles that the tests of
// analysis/report and analysis/report/htmlreport render. Only tests import
// it.
package reporttest

import (
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
)

// F returns a pointer to x.
func F(x float64) *float64 { return &x }

// CLT is a 95% CLT interval.
func CLT(lo, hi, se float64) *metrics.Interval {
	return &metrics.Interval{Method: "clt", Level: 0.95, Lo: lo, Hi: hi, SE: se}
}

// Boot is a 95% percentile-bootstrap interval.
func Boot(lo, hi float64) *metrics.Interval {
	return &metrics.Interval{Method: "bootstrap_percentile", Level: 0.95, Lo: lo, Hi: hi, Resamples: 10000, Seed: 42}
}

// Hostile strings: every format must print them as themselves.
const (
	// HostileCategory is a category name full of markup.
	HostileCategory = `<script>alert("x")</script> | 50% & $a_1$ {~^\}`
	// HostileError is an exemplar's error full of markup.
	HostileError = "model said ```rm -rf /``` | <b>bold</b> & 100% $_#{}~^\\ done"
)

// Suite is a realistic run: a binary benchmark with pass@k,
// categories, scorer metrics, infrastructure failures (valid) and model
// errors; a fractional one with clustered intervals and no histogram; a
// simulated one that is INVALID (1 of its 4 samples failed for
// infrastructure reasons); and one with no rows at all.
func Suite() []*metrics.Bundle {
	return []*metrics.Bundle{gsm8k(), humanEval(), mathCoT(), noRows()}
}

// gsm8k is the binary benchmark: 500 items × 4 repeats with pass@k,
// categories (one named with markup), a scorer metric, a latency
// histogram, 8 timeouts (valid) and 4 model errors.
func gsm8k() *metrics.Bundle {
	gsmHead := metrics.Score{Metric: "pass@1", Value: F(0.812), N: 500, CLT: CLT(0.7911, 0.8329, 0.01067), Bootstrap: Boot(0.7905, 0.8324)}
	hist := make([]int, 40)
	for i := range hist {
		// a right-skewed latency distribution
		x := float64(i)
		hist[i] = int(200 * x * x * (40 - x) / 10000)
	}
	hist[39] = 17
	return &metrics.Bundle{
		BundleVersion: 2,
		Benchmark:     "gsm8k",
		Name:          "gsm8k",
		Category:      "Mathematics",
		Provenance: metrics.Provenance{
			RecipeHash:     "sha256:1111111111111111111111111111111111111111111111111111111111111111",
			PlanHash:       "sha256:2222222222222222222222222222222222222222222222222222222222222222",
			BenchmarkHash:  "sha256:3333333333333333333333333333333333333333333333333333333333333333",
			NelVersion:     "v0.4.0",
			ScoringVersion: "3",
			DatasetDigest:  "sha256:4444444444444444444444444444444444444444444444444444444444444444",
			Model:          "meta/llama-3.1-8b-instruct",
			Shards:         8,
			StartedAt:      "2025-05-01T10:00:00Z",
			EndedAt:        "2025-05-01T10:42:13Z",
		},
		Methodology:   map[string]any{"name": "gsm8k", "repeats": float64(4)},
		Samples:       2000,
		Items:         500,
		ScoredSamples: 1992,
		ScoredItems:   500,
		Repeats:       4,
		Binary:        true,
		Headline:      gsmHead,
		Metrics: []metrics.Score{
			gsmHead,
			{Metric: "pass@2", Value: F(0.8731), N: 500, CLT: CLT(0.8552, 0.891, 0.00913), Bootstrap: Boot(0.8547, 0.8905)},
			{Metric: "pass@4", Value: F(0.9102), N: 500, CLT: CLT(0.8951, 0.9253, 0.0077), Bootstrap: Boot(0.8944, 0.9248)},
			{Metric: "scorer:format_ok", Value: F(0.9935), N: 500, CLT: CLT(0.9891, 0.9979, 0.00224), Bootstrap: Boot(0.989, 0.9975)},
		},
		Variance: &metrics.Variance{
			Between: 0.1203, Within: 0.0315, WithinEstimated: true, SE: 0.01067,
			OptimalRepeats: 2, ItemCost: 1, MDE: 0.0299, Alpha: 0.05, Power: 0.8,
		},
		Categories: []metrics.Category{
			{Name: "arithmetic", Score: metrics.Score{Metric: "pass@1", Value: F(0.861), N: 220, CLT: CLT(0.8321, 0.8899, 0.0147), Bootstrap: Boot(0.8315, 0.8893)}},
			{Name: "algebra", Score: metrics.Score{Metric: "pass@1", Value: F(0.7722), N: 180, CLT: CLT(0.7391, 0.8053, 0.0169), Bootstrap: Boot(0.7385, 0.805)}},
			{Name: HostileCategory, Score: metrics.Score{Metric: "pass@1", Value: F(0.78), N: 100, CLT: CLT(0.7381, 0.8219, 0.0214), Bootstrap: Boot(0.737, 0.821)}},
		},
		Runtime: metrics.Runtime{
			LatencyMS:                metrics.Percentiles{P50: 1830.5, P90: 3950, P99: 7600.25, Mean: 2210.7, Max: 14020, BucketMS: 200, Histogram: hist},
			WallSeconds:              2533,
			SamplesPerSecond:         0.79,
			PromptTokens:             412345,
			CompletionTokens:         398765,
			ReasoningTokens:          0,
			TokensPerSecond:          157.4,
			DecodeTokensPerSecondP50: 96.3,
			FinishReasons:            map[string]int{"stop": 1978, "length": 14, "(none)": 8},
			Attempts:                 map[string]int{"1": 1990, "2": 9, "10": 1},
			Interrupted:              10,
		},
		// 8 of 2,000 samples timed out (0.4%, under 5%): not scored.
		Validity: metrics.Validity{
			Samples: 2000, InfraErrors: 8, Rate: 0.004, MaxErrorRate: 0.05, MaxErrorRateFrom: "plan",
			Classes: []metrics.FailureCategory{
				{Category: "timeout", Outcome: "infra_error", Count: 8, Share: 0.004, Exemplars: []metrics.Exemplar{
					{ItemID: "gsm8k-0017", ItemIdx: 17, Repeat: 2, Error: "request timed out after 120s"},
					{ItemID: "gsm8k-0101", ItemIdx: 101, Repeat: 0, Error: HostileError},
					{ItemID: "gsm8k-0230", ItemIdx: 230, Repeat: 3, Error: "request timed out\nafter 120s"},
				}},
			},
		},
		// 4 of the 1,992 scored samples are model errors (0.2%).
		Failures: metrics.Failures{
			Samples: 1992, Failed: 4, Rate: 4.0 / 1992,
			Categories: []metrics.FailureCategory{
				{Category: "format_error", Outcome: "model_error", Count: 4, Share: 4.0 / 1992, Exemplars: []metrics.Exemplar{
					{ItemID: "gsm8k-0005", ItemIdx: 5, Repeat: 1, Error: "extracted: `` (empty)"},
				}},
			},
		},
	}
}

// mathCoT is the fractional benchmark: clustered intervals, no histogram,
// a category of one item.
func mathCoT() *metrics.Bundle {
	mathHead := metrics.Score{Metric: "mean_reward", Value: F(0.4567), N: 300,
		CLT:       &metrics.Interval{Method: "clt_clustered", Level: 0.95, Lo: 0.4102, Hi: 0.5032, SE: 0.0237, Clusters: 60},
		Bootstrap: Boot(0.4111, 0.5019)}
	return &metrics.Bundle{
		BundleVersion: 2,
		Benchmark:     "math#cot",
		Name:          "math",
		Provenance: metrics.Provenance{
			RecipeHash: "sha256:aaaa", PlanHash: "sha256:bbbb", BenchmarkHash: "sha256:cccc",
			NelVersion: "v0.4.0", DatasetDigest: "sha256:dddd", Model: "meta/llama-3.1-8b-instruct", Shards: 4,
			StartedAt: "2025-05-01T10:00:00Z", EndedAt: "2025-05-01T11:02:00Z",
		},
		Samples: 300, Items: 300, ScoredSamples: 300, ScoredItems: 300, Repeats: 1,
		Headline: mathHead,
		Metrics: []metrics.Score{
			mathHead,
			{Metric: "scorer:partial_credit", Value: F(0.5123), N: 300, CLT: CLT(0.471, 0.5536, 0.0211), Bootstrap: Boot(0.4705, 0.553)},
		},
		Variance: &metrics.Variance{Between: 0.1689, WithinEstimated: false, SE: 0.0237, OptimalRepeats: 1, ItemCost: 1, MDE: 0.0664, Alpha: 0.05, Power: 0.8},
		Categories: []metrics.Category{
			{Name: "geometry", Score: metrics.Score{Metric: "mean_reward", Value: F(0.3912), N: 150, CLT: CLT(0.3301, 0.4523, 0.0312), Bootstrap: Boot(0.331, 0.452)}},
			{Name: "number_theory", Score: metrics.Score{Metric: "mean_reward", Value: F(0.5222), N: 149, CLT: CLT(0.4601, 0.5843, 0.0317), Bootstrap: Boot(0.461, 0.583)}},
			{Name: "one_item", Score: metrics.Score{Metric: "mean_reward", Value: F(1), N: 1}},
		},
		Runtime: metrics.Runtime{
			LatencyMS:     metrics.Percentiles{P50: 840, P90: 1510, P99: 2900, Mean: 930, Max: 3500},
			WallSeconds:   3720,
			FinishReasons: map[string]int{"stop": 300},
			Attempts:      map[string]int{"1": 300},
			CacheHits:     new(120),
		},
		Validity: metrics.Validity{Samples: 300, MaxErrorRate: 0.05, MaxErrorRateFrom: "plan"},
		Failures: metrics.Failures{Samples: 300},
	}
}

// humanEval is the simulated benchmark that is INVALID: 1 of its 4
// samples failed for infrastructure reasons.
func humanEval() *metrics.Bundle {
	// 2 items × 2 repeats; item 0's second repeat hit a server error.
	// Scored: item 0 [1], item 1 [1, 0] → pass@1 (1 + 0.5)/2 = 0.75, which
	// an INVALID benchmark never shows.
	humanHead := metrics.Score{Metric: "pass@1", Value: F(0.75), N: 2, CLT: CLT(0.2599, 1, 0.25), Bootstrap: Boot(0.5, 1)}
	return &metrics.Bundle{
		BundleVersion: 2,
		Benchmark:     "humaneval",
		Name:          "humaneval",
		Category:      "Coding",
		Provenance: metrics.Provenance{
			RecipeHash: "sha256:eeee", NelVersion: "dev", Model: "simulated", Simulated: true, Shards: 1,
			StartedAt: "2025-05-01T10:00:00Z", EndedAt: "2025-05-01T10:00:05Z",
		},
		Samples: 4, Items: 2, ScoredSamples: 3, ScoredItems: 2, Repeats: 2, Binary: true,
		Headline: humanHead,
		Metrics:  []metrics.Score{humanHead, {Metric: "pass@2", Value: F(1), N: 1}},
		Runtime: metrics.Runtime{
			LatencyMS:     metrics.Percentiles{P50: 5, P90: 5, P99: 5, Mean: 5, Max: 5, BucketMS: 0.2, Histogram: append(make([]int, 24), 2)},
			FinishReasons: map[string]int{"(none)": 4},
			Attempts:      map[string]int{"1": 4},
		},
		// 1 of 4 samples (25%) > 5%: INVALID.
		Validity: metrics.Validity{
			Invalid: true, Samples: 4, InfraErrors: 1, Rate: 0.25, MaxErrorRate: 0.05, MaxErrorRateFrom: "plan",
			Classes: []metrics.FailureCategory{
				{Category: "server_error", Outcome: "infra_error", Count: 1, Share: 0.25, Exemplars: []metrics.Exemplar{
					{ItemID: "HumanEval/0", Repeat: 1, Error: "500 Internal Server Error"},
				}},
			},
			Reason: "1 of 4 samples (25%) failed for infrastructure reasons (server_error 1), more than max_error_rate 5%",
		},
		Failures: metrics.Failures{Samples: 3, Failed: 1, Rate: 1.0 / 3, Categories: []metrics.FailureCategory{
			{Category: "truncated", Outcome: "model_error", Count: 1, Share: 1.0 / 3, Exemplars: []metrics.Exemplar{
				{ItemID: "HumanEval/1", ItemIdx: 1, Repeat: 1, Error: ""},
			}},
		}},
		Notes: []string{
			"answers came from nel's simulated endpoint, not a model: the scores test the pipeline, not a model",
			"INVALID: 1 of 4 samples (25%) failed for infrastructure reasons (server_error 1), more than max_error_rate 5%: the numbers do not measure the model; fix the cause and run it again",
		},
	}
}

// noRows is a benchmark with no rows at all.
func noRows() *metrics.Bundle {
	return &metrics.Bundle{
		BundleVersion: 2,
		Benchmark:     "mmlu_pro",
		Name:          "mmlu_pro",
		Category:      "Knowledge",
		Provenance:    metrics.Provenance{RecipeHash: "sha256:ffff", NelVersion: "v0.4.0"},
		Repeats:       1,
		Validity:      metrics.Validity{MaxErrorRate: 0.05, MaxErrorRateFrom: "plan"},
		Headline:      metrics.Score{Metric: "mean_reward"},
		Metrics:       []metrics.Score{{Metric: "mean_reward"}},
		Notes:         []string{"no rows: nothing was evaluated, so there is no score"},
	}
}

// MustContain fails the test for each of wants that out (named what)
// lacks.
func MustContain(t testing.TB, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// MustNotContain fails the test for each of bad that out (named what)
// contains.
func MustNotContain(t testing.TB, what, out string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(out, b) {
			t.Errorf("%s contains %q", what, b)
		}
	}
}
