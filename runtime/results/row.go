// Package results is nel's analysis format: Parquet files with one row per
// (benchmark, item, repeat), zstd-compressed, provenance in the file's
// key-value metadata, written atomically (temporary name, fsync, rename).
package results

// Row is one (benchmark, item, repeat) result: the columns of
// results.parquet (DESIGN §7), in this order.
type Row struct {
	RecipeHash string
	Benchmark  string
	ItemID     string
	ItemIdx    int64
	Repeat     int64
	Category   string
	Reward     float64
	// Correct is null where the reward is not binary.
	Correct          *bool
	Extracted        string
	Expected         string
	FinishReason     string
	PromptTokens     int64
	CompletionTokens int64
	ReasoningTokens  int64
	LatencyMS        float64
	// Attempts counts how many times infrastructure started this sample
	// (1 for an uninterrupted run).
	Attempts      int64
	ErrorCategory string
	Seed          int64
	// Outcome is scored, model_error or infra_error (runtime/failure):
	// what analyses filter on. Files written before the column existed
	// read back with the outcome their error_category implies.
	Outcome string
	// ErrorMessage says what failed, in one line ("" when nothing did):
	// the trajectory's error, kept with the row so that a query over
	// results.parquet alone can group failures by cause.
	ErrorMessage string
	// Scores holds extra metrics by name ("scorer:exact_match": 1), a
	// MAP<STRING, DOUBLE> column.
	Scores map[string]float64
	// Model is the served model id: the one the response named, else the
	// one the request asked for (as the trajectory's model). Files
	// written before the column existed read back with it empty.
	Model string
}

// Trajectory is the full record of one sample: the columns of
// trajectories.parquet, keyed like Row.
type Trajectory struct {
	RecipeHash string
	Benchmark  string
	ItemID     string
	ItemIdx    int64
	Repeat     int64
	// Request is the request's messages (or prompt) as JSON.
	Request   string
	Response  string
	Reasoning string
	// ScoringDetails is the scorer's details as JSON.
	ScoringDetails string
	Error          string
	Model          string
	Retries        int64
	LatencyMS      float64
	// JudgeCalls is the sample's LLM-judge calls as a JSON array (messages
	// sent, raw answer, parsed score, latency, error; runtime/judge.Call),
	// "" when no judge was asked. Files written before this column existed
	// read back with it empty.
	JudgeCalls string
}

// Provenance keys in every file's key-value metadata.
const (
	MetaRecipeHash    = "nel.recipe_hash"
	MetaPlanHash      = "nel.plan_hash"
	MetaBenchmarkHash = "nel.benchmark_hash"
	MetaBenchmark     = "nel.benchmark"
	MetaNelVersion    = "nel.version"
	MetaScoring       = "nel.scoring_version"
	MetaDataset       = "nel.dataset_digest" // sha256:… of the data read
	MetaModel         = "nel.model"
	// MetaCategory is the benchmark's model-card category ("Mathematics",
	// "Coding"), from its definition in the nel-run that ran it: reports
	// read it here instead of a benchmark registry of their own.
	MetaCategory  = "nel.benchmark_category"
	MetaSimulated = "nel.simulated" // "true" when answers came from nel's simulated endpoint
	MetaShard     = "nel.shard"     // "i/N", or "merged/N"
	MetaStartedAt = "nel.started_at"
	MetaEndedAt   = "nel.ended_at"
	MetaRows      = "nel.rows"
	// MetaProvenance is the shard's provenance.Record as JSON; a merged
	// file holds a JSON array of its shards' distinct records.
	MetaProvenance = "nel.provenance"
	// What merge's completeness check needs from every shard.
	MetaSelected = "nel.selected_items" // items selected for the benchmark (all shards)
	MetaRepeats  = "nel.repeats"
)

// Keys of a benchmark run by a peer harness (nel-run ingest).
const (
	// MetaHarness is the harness that produced the rows, as JSON: its
	// kind, task, image and the files of its output that were read.
	MetaHarness = "nel.harness"
	// MetaAggregateOnly is "true" when the harness wrote aggregate scores
	// only: the file then holds no rows (none are invented), and the
	// statistics that need items (intervals, paired tests) are
	// unavailable.
	MetaAggregateOnly = "nel.aggregate_only"
	// MetaHarnessScores is the harness's own aggregate scores as JSON
	// ({"primary": name, "scores": {name: value}}).
	MetaHarnessScores = "nel.harness_scores"
)
