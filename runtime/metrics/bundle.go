// Package metrics turns a benchmark's merged rows into its bundle,
// eval.json: the headline and pass@k with labelled intervals, the variance
// decomposition and minimum detectable effect, per-category and extra
// scorer metrics, runtime statistics computed from the rows themselves,
// failure analysis and provenance. nel-run merge writes it beside
// results.parquet; nel report, compare and gate read it.
package metrics

import (
	prov "github.com/nel-eval/nel/runtime/provenance"
)

// BundleVersion is the version of the eval.json format. Version 2: the
// statistics leave out the samples that ended in infra_error (DESIGN
// §6.7), which Validity counts and which can make the benchmark INVALID;
// Failures holds the model errors only. ReadFile still reads version 1
// (see upgrade).
const BundleVersion = 2

// Bundle is eval.json. The same rows and metadata always give the same
// bytes: nothing in it depends on when or where it was computed.
type Bundle struct {
	BundleVersion int    `json:"bundle_version"`
	Benchmark     string `json:"benchmark"` // the plan's benchmark key
	// Name is the benchmark's name (gsm8k), what compare and gate match
	// runs by.
	Name string `json:"name"`
	// Category is the benchmark's model-card category ("Mathematics"),
	// from the results' metadata (results.MetaCategory); "" when unknown.
	Category   string     `json:"category,omitempty"`
	Provenance Provenance `json:"provenance"`
	// Methodology is the plan's benchmark without its deployment fields
	// (max_concurrent, dir, key) and its hash: what compare shows when two runs'
	// benchmark hashes differ.
	Methodology map[string]any `json:"methodology,omitempty"`

	// Samples and Items are what was run: every row, every distinct
	// item_id.
	Samples int `json:"samples"`
	Items   int `json:"items"`
	// ScoredSamples and ScoredItems are what the statistics are computed
	// over: the samples whose outcome is scored or model_error (never
	// infra_error), and the items with at least one of them. An item
	// whose every sample was an infrastructure failure is not scored.
	ScoredSamples int `json:"scored_samples"`
	ScoredItems   int `json:"scored_items"`
	Repeats       int `json:"repeats"`
	// Binary is true when every scored reward is 0 or 1; the headline is
	// then pass@1, otherwise mean_reward.
	Binary bool `json:"binary"`
	// Correct is the number of scored samples with reward 1 (binary
	// rewards only). pass@1 is the mean of the items' means, which equals
	// Correct/ScoredSamples only when every item has as many scored
	// samples.
	Correct *int `json:"correct,omitempty"`

	// Headline is Metrics[0]: pass@1 or mean_reward.
	Headline Score `json:"headline"`
	// Metrics: the headline, pass@k for k = 2, 4, … ≤ repeats and k =
	// repeats (binary only), then scorer:<name> for every extra scorer.
	Metrics    []Score    `json:"metrics"`
	Variance   *Variance  `json:"variance,omitempty"`
	Categories []Category `json:"categories,omitempty"`
	Runtime    Runtime    `json:"runtime"`
	// Validity says whether the numbers above measure the model: the
	// infrastructure failures, and whether there were too many.
	Validity Validity `json:"validity"`
	// Failures is the failure analysis of the scored samples: the model
	// errors.
	Failures Failures `json:"failures"`
	// Harness is set when a peer harness ran the benchmark (lm-eval://,
	// skills://, container://).
	Harness *Harness `json:"harness,omitempty"`
	// Agent is the trajectory audit of a benchmark whose solver takes
	// turns (tool_calling); nil for the others.
	Agent *Agent `json:"agent,omitempty"`
	// Notes say what a reader must know before trusting the numbers:
	// "no rows", "every sample failed (timeout 40)", "simulated endpoint".
	Notes []string `json:"notes,omitempty"`
}

// Harness says which peer harness produced a benchmark's results, and
// what it reported itself.
type Harness struct {
	Kind  string `json:"kind"` // lm-eval, skills, container
	Task  string `json:"task"`
	Image string `json:"image"`
	// Files are the harness's output files the results were read from.
	Files []string `json:"files,omitempty"`
	// AggregateOnly is set when the harness wrote aggregate scores only:
	// the benchmark has no rows (none are invented), its headline is the
	// harness's Primary score with no interval, and what needs items
	// (intervals, pass@k, paired comparison, gate verdicts on deltas) is
	// unavailable.
	AggregateOnly bool `json:"aggregate_only"`
	// Primary and Scores are the harness's own aggregates, by its names.
	Primary string             `json:"primary,omitempty"`
	Scores  map[string]float64 `json:"scores,omitempty"`
}

// Score is one metric with its intervals. Value is nil when it is
// undefined (no rows); intervals are nil when they cannot be computed
// (fewer than two items), never NaN.
type Score struct {
	Metric string   `json:"metric"` // "pass@1", "pass@4", "mean_reward", "scorer:exact_match"
	Value  *float64 `json:"value"`
	// N is the number of items the value averages over (items are the
	// unit: repeats stay with their item).
	N int `json:"n"`
	// CLT is the analytic interval on the item means (the field keeps its
	// first name; Method says which interval it is, docs/statistics.md
	// why): for a metric of binary rewards (pass@1, pass@k) a Wilson
	// score interval, which never has zero width — on the n items with z
	// when each has one 0/1 value ("wilson_ends", with the exact one-sided
	// bound when every item is right or wrong and Jeffreys' one count
	// from an end; "wilson", with Brown, Cai & DasGupta's exact Poisson
	// bounds within 2 or 3 counts of either end, in older bundles), else on
	// the effective sample size (capped at the samples) df-adjusted as
	// Korn & Graubard, Jeffreys' interval ("jeffreys_effective";
	// "korn_graubard", Clopper–Pearson's, and "wilson_effective" in older
	// bundles); for pass@k at k < repeats on the smaller of that size and a
	// Beta-binomial model's of the items' counts ("jeffreys_betabinomial";
	// "jeffreys_effective", capped at the disjoint k-sample blocks, in
	// older bundles), or over G clusters
	// Clopper–Pearson's ("korn_graubard_clustered"; "wilson_clustered" in
	// older bundles); for other metrics mean ±
	// t_{n−1}·SE ("t"), or with the clustered
	// standard error mean ± t_{G−1}·SE ("clt_clustered") when items carry
	// clusters; clipped to [0, 1] when every per-item value lies there.
	CLT *Interval `json:"ci_clt,omitempty"`
	// Bootstrap is the seeded percentile bootstrap over items (for pass@k,
	// over the per-item estimates): NeMo Evaluator's figure, kept for
	// parity and not a confidence claim ("bootstrap_percentile"; it cannot
	// cover near 0 or 1; the analytic CLT beside it is nel's interval, and
	// no report, compare or gate output presents this one as an interval
	// at its level). Over whole clusters when items
	// carry clusters, its ends read at Hesterberg's expanded level for
	// few clusters ("bootstrap_cluster_expanded").
	Bootstrap *Interval `json:"ci_bootstrap,omitempty"`
}

// Interval is a labelled confidence interval.
type Interval struct {
	// Method is one of the vocabulary's (method.go, Methods): "t",
	// "clt_clustered", "wilson_ends" ("wilson" in older
	// bundles), "jeffreys_effective",
	// "jeffreys_betabinomial" (pass@k at k < repeats over items),
	// "korn_graubard_clustered",
	// "jeffreys_ratio" (a ratio metric Σnum/Σden over items whose num
	// lies in [0, den]: Korn & Graubard on the effective sample size from
	// the delta method's SE, m−1 df; "wilson_effective", "wilson_clustered"
	// and "wilson_ratio" in older bundles), "clt_ratio" (other ratio metrics: the
	// delta method, t at m−1 df; z before df was set),
	// "bootstrap_percentile" or "bootstrap_cluster_expanded"
	// ("bootstrap_cluster", the plain percentile ends, in bundles of
	// before it was expanded); bundles written
	// before nel chose intervals by coverage also say "clt" (normal, z).
	Method Method  `json:"method"`
	Level  float64 `json:"level"` // 0.95
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	// SE is the standard error (CLT methods).
	SE float64 `json:"se,omitempty"`
	// Clusters is the number of clusters (the clustered methods).
	Clusters int `json:"clusters,omitempty"`
	// DF is the degrees of freedom of the t critical value (n−1 items or
	// G−1 clusters).
	DF int `json:"df,omitempty"`
	// EffectiveN is the effective sample size a Wilson or Korn & Graubard
	// interval is on (before Korn & Graubard's df adjustment).
	EffectiveN float64 `json:"effective_n,omitempty"`
	// Resamples and Seed describe a bootstrap.
	Resamples int    `json:"resamples,omitempty"`
	Seed      uint64 `json:"seed,omitempty"`
	// Parity is set on every ci_bootstrap: NeMo Evaluator's figure, kept
	// so that its users can compare with what their tool printed, and not
	// a confidence claim at Level (it covers far less near 0 and 1;
	// docs/statistics.md, "The rule for NeMo's bootstrap"). Method alone
	// would leave a reader of eval.json to know that. Absent in bundles
	// written before it was set.
	Parity bool `json:"parity,omitempty"`
}

// Variance is the headline's variance decomposition (Miller 2024): the
// score of item i on a repeat is s = x_i + ε, Var(s) = Var(x) + E[σ_i²].
type Variance struct {
	// Between is Var(x), the variance of the items' true scores
	// (estimated: variance of item means minus Within/Repeats, ≥ 0).
	Between float64 `json:"between_item"`
	// Within is E[σ_i²], the mean within-item (sampling) variance; 0 with
	// one repeat (not estimable: WithinEstimated is false).
	Within          float64 `json:"within_item"`
	WithinEstimated bool    `json:"within_estimated"`
	// SE of the headline implied by the decomposition at this run's items
	// and repeats.
	SE float64 `json:"se"`
	// OptimalRepeats minimises the standard error per unit of compute,
	// K* = sqrt(Within/Between · ItemCost), where a sample costs 1 and
	// adding an item costs ItemCost more (prompt, loading); at least 1.
	OptimalRepeats int     `json:"optimal_repeats"`
	ItemCost       float64 `json:"item_cost"`
	// MDE is the smallest true difference this run detects with 80% power
	// at two-sided α = 0.05 against an independent run of the same design:
	// (z_0.975 + z_0.8)·sqrt(2)·SE.
	MDE   float64 `json:"mde"`
	Alpha float64 `json:"alpha"`
	Power float64 `json:"power"`
}

// Category is the headline restricted to one category's items.
type Category struct {
	Name  string `json:"name"`
	Score Score  `json:"score"`
}

// Runtime statistics, from the merged rows (never from shard summaries).
type Runtime struct {
	// LatencyMS percentiles over every sample's model latency.
	LatencyMS Percentiles `json:"latency_ms"`
	// WallSeconds is the run's span (earliest shard start to latest end).
	WallSeconds      float64 `json:"wall_seconds"`
	SamplesPerSecond float64 `json:"samples_per_second"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	// TokensPerSecond is completion tokens over WallSeconds (throughput);
	// DecodeTokensPerSecondP50 the median of each sample's completion
	// tokens over its latency.
	TokensPerSecond          float64        `json:"tokens_per_second"`
	DecodeTokensPerSecondP50 float64        `json:"decode_tokens_per_second_p50"`
	FinishReasons            map[string]int `json:"finish_reasons"`
	// Attempts counts samples by how many times infrastructure started
	// them ("1": 990, "2": 10); Interrupted is the samples with more than
	// one.
	Attempts    map[string]int `json:"attempts"`
	Interrupted int            `json:"interrupted"`
	// CacheHits is set when the run used a response cache.
	CacheHits *int `json:"cache_hits,omitempty"`
}

// Percentiles of a distribution (linear interpolation between order
// statistics, numpy's default).
type Percentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
	// Histogram: counts per bucket of width BucketMS from 0, for plots.
	BucketMS  float64 `json:"bucket_ms,omitempty"`
	Histogram []int   `json:"histogram,omitempty"`
}

// Validity is whether a benchmark measured the model (DESIGN §6.7). A
// sample whose outcome is infra_error (the endpoint, network, sandbox,
// judge, time budget or nel failed) is never scored; when such samples
// are more than the benchmark's max_error_rate of all samples, the
// benchmark is INVALID: reports show no score for it, and nel gate,
// compare and reproduce give no verdict on it.
type Validity struct {
	// Invalid is set when Rate > MaxErrorRate.
	Invalid bool `json:"invalid"`
	// Samples is every sample run; InfraErrors those that ended in
	// infra_error, Rate their share (0 without samples).
	Samples     int     `json:"samples"`
	InfraErrors int     `json:"infra_errors"`
	Rate        float64 `json:"rate"`
	// MaxErrorRate is the benchmark's max_error_rate; MaxErrorRateFrom
	// says where it came from: "plan" (the recipe, or its default there),
	// or "default" (plan.DefaultMaxErrorRate, when the bundle was computed
	// without the plan, from results.parquet alone).
	MaxErrorRate     float64 `json:"max_error_rate"`
	MaxErrorRateFrom string  `json:"max_error_rate_from"`
	// Classes group the infrastructure failures by error_category, by
	// count descending, each with up to three exemplar messages; Share is
	// of all samples.
	Classes []FailureCategory `json:"classes,omitempty"`
	// Reason says, when Invalid, why, in one sentence.
	Reason string `json:"reason,omitempty"`
}

// Failures is the failure analysis of the scored samples: the model
// errors (outcome model_error: the model answered, unusably), each scored
// as a wrong answer. Infrastructure failures are in Validity.
type Failures struct {
	// Samples is the scored samples (Bundle.ScoredSamples); Failed the
	// model errors among them, Rate their share.
	Samples    int               `json:"samples"`
	Failed     int               `json:"failed"`
	Rate       float64           `json:"rate"`
	Categories []FailureCategory `json:"categories,omitempty"` // by count, descending
}

// FailureCategory is one error_category with up to three exemplars.
type FailureCategory struct {
	Category string `json:"category"`
	// Outcome labels the category: model_error (in Failures) or
	// infra_error (in Validity).
	Outcome   string     `json:"outcome"`
	Count     int        `json:"count"`
	Share     float64    `json:"share"` // of the section's samples
	Exemplars []Exemplar `json:"exemplars"`
}

// Exemplar is one failed sample.
type Exemplar struct {
	ItemID  string `json:"item_id"`
	ItemIdx int64  `json:"item_idx"`
	Repeat  int64  `json:"repeat"`
	// Error is the row's error_message, else the trajectory's error,
	// else the extracted answer.
	Error string `json:"error"`
}

// Provenance says exactly what produced the numbers.
type Provenance struct {
	RecipeHash     string `json:"recipe_hash"`
	PlanHash       string `json:"plan_hash"`
	BenchmarkHash  string `json:"benchmark_hash"`
	NelVersion     string `json:"nel_version"`
	ScoringVersion string `json:"scoring_version"`
	DatasetDigest  string `json:"dataset_digest"`
	Model          string `json:"model"`
	Simulated      bool   `json:"simulated"`
	Shards         int    `json:"shards"`
	StartedAt      string `json:"started_at"`
	EndedAt        string `json:"ended_at"`
	// Build, Hosts and Serving come from the shards' provenance records
	// (results.MetaProvenance): the nel-run build, every distinct host
	// the shards ran on (sorted by hostname), and each service's
	// fingerprint (more than one entry per service when shards saw
	// different servers, which the notes then say).
	Build   *prov.Build    `json:"build,omitempty"`
	Hosts   []prov.Host    `json:"hosts,omitempty"`
	Serving []prov.Serving `json:"serving,omitempty"`
}

// RowKey names one sample.
type RowKey struct {
	ItemID string
	Repeat int64
}
