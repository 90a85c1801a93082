package export

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/stats"
)

// Inspect's EvalLog (log version 2), as its published schema has it. The
// schema requires every field a current Inspect writes, many of them
// nullable: those nel has nothing for are written as null, never left out.
type inspectLog struct {
	Version    int                `json:"version"`
	Status     string             `json:"status"`
	Eval       inspectSpec        `json:"eval"`
	Plan       inspectPlan        `json:"plan"`
	Results    *inspectResults    `json:"results"`
	Stats      inspectStats       `json:"stats"`
	Error      *inspectError      `json:"error"`
	Samples    []inspectSample    `json:"samples,omitempty"`
	Reductions []inspectReduction `json:"reductions,omitempty"`
}

type inspectSpec struct {
	EvalSetID        *string           `json:"eval_set_id"`
	EvalID           string            `json:"eval_id"`
	RunID            string            `json:"run_id"`
	Created          string            `json:"created"`
	Task             string            `json:"task"`
	TaskID           string            `json:"task_id"`
	TaskVersion      int               `json:"task_version"`
	TaskFile         *string           `json:"task_file"`
	TaskDisplayName  string            `json:"task_display_name"`
	TaskRegistryName string            `json:"task_registry_name"`
	TaskAttribs      map[string]any    `json:"task_attribs"`
	TaskArgs         map[string]any    `json:"task_args"`
	TaskArgsPassed   map[string]any    `json:"task_args_passed"`
	Solver           *string           `json:"solver"`
	SolverArgs       map[string]any    `json:"solver_args"`
	SolverArgsPassed map[string]any    `json:"solver_args_passed"`
	Tags             []string          `json:"tags"`
	Dataset          inspectDataset    `json:"dataset"`
	Sandbox          any               `json:"sandbox"`
	Model            string            `json:"model"`
	GenerateConfig   map[string]any    `json:"model_generate_config"`
	ModelBaseURL     *string           `json:"model_base_url"`
	ModelArgs        map[string]any    `json:"model_args"`
	ModelRoles       any               `json:"model_roles"`
	Config           map[string]any    `json:"config"`
	Revision         inspectRevision   `json:"revision"`
	Packages         map[string]string `json:"packages"`
	Metadata         map[string]any    `json:"metadata"`
	Scorers          []inspectScorer   `json:"scorers"`
	Metrics          any               `json:"metrics"`
}

type inspectDataset struct {
	Name      string   `json:"name"`
	Location  *string  `json:"location"`
	Samples   int      `json:"samples"`
	SampleIDs []string `json:"sample_ids"`
	Shuffled  bool     `json:"shuffled"`
}

type inspectRevision struct {
	Type   string `json:"type"`
	Origin string `json:"origin"`
	Commit string `json:"commit"`
	Dirty  *bool  `json:"dirty"`
}

type inspectScorer struct {
	Name     string             `json:"name"`
	Options  map[string]any     `json:"options"`
	Metrics  []inspectMetricDef `json:"metrics"`
	Metadata map[string]any     `json:"metadata"`
}

type inspectMetricDef struct {
	Name    string         `json:"name"`
	Options map[string]any `json:"options"`
}

type inspectPlan struct {
	Name   string            `json:"name"`
	Steps  []inspectPlanStep `json:"steps"`
	Finish any               `json:"finish"`
	Config map[string]any    `json:"config"`
}

type inspectPlanStep struct {
	Solver       string         `json:"solver"`
	Params       map[string]any `json:"params"`
	ParamsPassed map[string]any `json:"params_passed"`
}

type inspectResults struct {
	TotalSamples     int                `json:"total_samples"`
	CompletedSamples int                `json:"completed_samples"`
	EarlyStopping    any                `json:"early_stopping"`
	Scores           []inspectEvalScore `json:"scores"`
	Metadata         map[string]any     `json:"metadata"`
}

type inspectEvalScore struct {
	Name            string                   `json:"name"`
	Scorer          string                   `json:"scorer"`
	Reducer         string                   `json:"reducer"`
	ScoredSamples   int                      `json:"scored_samples"`
	UnscoredSamples int                      `json:"unscored_samples"`
	Params          map[string]any           `json:"params"`
	Metrics         map[string]inspectMetric `json:"metrics"`
	Metadata        map[string]any           `json:"metadata"`
}

type inspectMetric struct {
	Name     string         `json:"name"`
	Value    float64        `json:"value"`
	Params   map[string]any `json:"params"`
	Metadata map[string]any `json:"metadata"`
}

type inspectStats struct {
	StartedAt   string                  `json:"started_at"`
	CompletedAt string                  `json:"completed_at"`
	ModelUsage  map[string]inspectUsage `json:"model_usage"`
}

type inspectUsage struct {
	InputTokens     int64    `json:"input_tokens"`
	OutputTokens    int64    `json:"output_tokens"`
	TotalTokens     int64    `json:"total_tokens"`
	CacheWrite      *int64   `json:"input_tokens_cache_write"`
	CacheRead       *int64   `json:"input_tokens_cache_read"`
	ReasoningTokens *int64   `json:"reasoning_tokens"`
	TotalCost       *float64 `json:"total_cost"`
}

type inspectError struct {
	Message       string `json:"message"`
	Traceback     string `json:"traceback"`
	TracebackANSI string `json:"traceback_ansi"`
}

// inspectScorerName is the one scorer of an exported log: the benchmark's
// own scoring, whatever it was, as nel ran it.
const inspectScorerName = "nel"

// inspectLogOf builds the log of one benchmark, samples included.
func inspectLogOf(b bench) inspectLog {
	bu := b.bundle
	p := bu.Provenance
	model := p.Model
	log := inspectLog{
		Version: 2,
		Status:  "success",
		Eval:    inspectSpecOf(b),
		Plan: inspectPlan{
			Name:   "plan",
			Steps:  []inspectPlanStep{{Solver: solverOf(bu), Params: solverParams(bu), ParamsPassed: map[string]any{}}},
			Config: generateConfig(),
		},
		Results: inspectResultsOf(b),
		Stats: inspectStats{
			StartedAt: p.StartedAt, CompletedAt: p.EndedAt,
			ModelUsage: map[string]inspectUsage{model: usage(bu.Runtime.PromptTokens, bu.Runtime.CompletionTokens, bu.Runtime.ReasoningTokens)},
		},
	}
	if bu.Validity.Invalid {
		// The numbers do not measure the model: Inspect's viewer shows an
		// errored log with the reason, as nel's reports show no score.
		log.Status = "error"
		log.Error = &inspectError{Message: "INVALID: " + bu.Validity.Reason}
	}
	for _, r := range b.rows {
		k := metrics.RowKey{ItemID: r.ItemID, Repeat: r.Repeat}
		log.Samples = append(log.Samples, inspectSampleOf(r, b.trajs[k], b.turns[k], model))
	}
	log.Reductions = reductions(b.rows)
	return log
}

func inspectSpecOf(b bench) inspectSpec {
	bu := b.bundle
	p := bu.Provenance
	solver := solverOf(bu)
	ids := itemIDs(b.rows)
	return inspectSpec{
		EvalID:           id(22, p.PlanHash, bu.Benchmark, "eval"),
		RunID:            id(22, p.PlanHash, "run"),
		Created:          p.StartedAt,
		Task:             bu.Name,
		TaskID:           id(22, p.BenchmarkHash, "task"),
		TaskDisplayName:  bu.Benchmark,
		TaskRegistryName: bu.Name,
		TaskAttribs:      map[string]any{},
		TaskArgs:         map[string]any{},
		TaskArgsPassed:   map[string]any{},
		Solver:           &solver,
		SolverArgs:       solverParams(bu),
		SolverArgsPassed: map[string]any{},
		Dataset:          inspectDataset{Name: bu.Name, Samples: bu.Items, SampleIDs: ids, Shuffled: false},
		Model:            p.Model,
		GenerateConfig:   generateConfig(),
		ModelArgs:        map[string]any{},
		Config:           evalConfig(bu.Repeats),
		// Inspect's revision is a git commit; nel's is the recipe hash,
		// which names exactly what ran.
		Revision: inspectRevision{Type: "git", Origin: "nel-recipe", Commit: p.RecipeHash},
		Packages: map[string]string{"nel": p.NelVersion},
		Metadata: map[string]any{
			"nel_recipe_hash": p.RecipeHash, "nel_plan_hash": p.PlanHash, "nel_benchmark_hash": p.BenchmarkHash,
			"nel_scoring_version": p.ScoringVersion, "nel_dataset_digest": p.DatasetDigest, "nel_simulated": p.Simulated,
			"nel_validity": bu.Validity, "nel_methodology": bu.Methodology,
		},
		Scorers: []inspectScorer{{
			Name:    inspectScorerName,
			Metrics: []inspectMetricDef{{Name: "accuracy"}, {Name: "stderr"}},
		}},
	}
}

// inspectResultsOf is the one score of the log: accuracy is nel's
// headline, stderr Inspect's (the standard error of the item means), and
// ci_low/ci_high nel's interval, whose method the metadata names.
func inspectResultsOf(b bench) *inspectResults {
	bu := b.bundle
	ms := map[string]inspectMetric{}
	put := func(name string, v float64, meta map[string]any) {
		ms[name] = inspectMetric{Name: name, Value: v, Params: map[string]any{}, Metadata: meta}
	}
	if v, ok := headline(bu); ok {
		put("accuracy", v, map[string]any{"nel_metric": bu.Headline.Metric})
		put("stderr", stderrOf(b.rows), nil)
	}
	if ci := bu.Headline.CLT; ci != nil {
		meta := map[string]any{"method": ci.Method, "level": ci.Level}
		put("ci_low", ci.Lo, meta)
		put("ci_high", ci.Hi, meta)
	}
	for _, m := range bu.Metrics[min(1, len(bu.Metrics)):] {
		if m.Value != nil {
			put(m.Metric, *m.Value, nil)
		}
	}
	return &inspectResults{
		TotalSamples:     bu.Samples,
		CompletedSamples: bu.ScoredSamples,
		Scores: []inspectEvalScore{{
			Name: inspectScorerName, Scorer: inspectScorerName, Reducer: "mean",
			ScoredSamples: bu.ScoredSamples, UnscoredSamples: bu.Samples - bu.ScoredSamples,
			Params: map[string]any{}, Metrics: ms,
		}},
	}
}

// stderrOf is Inspect's stderr metric over nel's unit: the standard error
// of the scored items' mean rewards (epochs reduced by mean first, as
// Inspect reduces them), sample standard deviation over √n.
func stderrOf(rows []results.Row) float64 {
	means := itemMeans(rows)
	xs := make([]float64, len(means))
	for i, m := range means {
		xs[i] = m.mean
	}
	if len(xs) < 2 {
		return 0
	}
	return math.Sqrt(stats.Variance(xs) / float64(len(xs)))
}

type itemMean struct {
	id   string
	mean float64
}

// itemMeans averages each item's scored rewards (infra_error samples are
// not scored), items in the rows' order.
func itemMeans(rows []results.Row) []itemMean {
	var out []itemMean
	idx := map[string]int{}
	counts := map[string]int{}
	for _, r := range rows {
		if !metrics.Scored(&r) {
			continue
		}
		i, ok := idx[r.ItemID]
		if !ok {
			i = len(out)
			idx[r.ItemID] = i
			out = append(out, itemMean{id: r.ItemID})
		}
		out[i].mean += r.Reward
		counts[r.ItemID]++
	}
	for i := range out {
		out[i].mean /= float64(counts[out[i].id])
	}
	return out
}

type inspectReduction struct {
	Scorer  string               `json:"scorer"`
	Reducer string               `json:"reducer"`
	Samples []inspectSampleScore `json:"samples"`
}

type inspectSampleScore struct {
	Value       float64        `json:"value"`
	Answer      *string        `json:"answer"`
	Explanation *string        `json:"explanation"`
	Metadata    map[string]any `json:"metadata"`
	History     []any          `json:"history"`
	SampleID    string         `json:"sample_id"`
}

func reductions(rows []results.Row) []inspectReduction {
	if len(rows) == 0 {
		return nil
	}
	red := inspectReduction{Scorer: inspectScorerName, Reducer: "mean", Samples: []inspectSampleScore{}}
	for _, m := range itemMeans(rows) {
		red.Samples = append(red.Samples, inspectSampleScore{Value: m.mean, History: []any{}, SampleID: m.id})
	}
	return []inspectReduction{red}
}

func itemIDs(rows []results.Row) []string {
	ids := []string{}
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.ItemID] {
			seen[r.ItemID] = true
			ids = append(ids, r.ItemID)
		}
	}
	return ids
}

func solverOf(b *metrics.Bundle) string {
	if s, ok := b.Methodology["solver"].(map[string]any); ok {
		if t, ok := s["type"].(string); ok {
			return "nel/" + t
		}
	}
	return "nel/simple"
}

func solverParams(b *metrics.Bundle) map[string]any {
	if s, ok := b.Methodology["solver"].(map[string]any); ok {
		return s
	}
	return map[string]any{}
}

func usage(in, out, reasoning int64) inspectUsage {
	u := inspectUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	if reasoning > 0 {
		u.ReasoningTokens = &reasoning
	}
	return u
}

// nulls is an object of the given keys, each null: what Inspect writes
// for a config it was not given.
func nulls(keys string) map[string]any {
	m := map[string]any{}
	for _, k := range strings.Fields(keys) {
		m[k] = nil
	}
	return m
}

func generateConfig() map[string]any {
	return nulls(`max_retries timeout attempt_timeout max_connections system_message max_tokens top_p
		temperature stop_seqs best_of frequency_penalty presence_penalty logit_bias seed top_k num_choices
		logprobs top_logprobs parallel_tool_calls internal_tools max_tool_output cache_prompt verbosity effort
		reasoning_effort reasoning_tokens reasoning_summary reasoning_history response_schema extra_headers
		extra_body cache batch`)
}

func evalConfig(repeats int) map[string]any {
	c := nulls(`limit sample_id sample_shuffle epochs epochs_reducer approval fail_on_error continue_on_fail
		retry_on_error message_limit token_limit time_limit working_limit cost_limit max_samples max_tasks
		max_subprocesses max_sandboxes sandbox_cleanup log_samples log_realtime log_images log_buffer log_shared
		score_display`)
	c["epochs"] = max(repeats, 1)
	c["epochs_reducer"] = []string{"mean"}
	c["log_samples"] = true
	return c
}

// writeInspect writes one log per benchmark under o.Out, named
// <benchmark>.json or <benchmark>.eval.
func writeInspect(run *runData, o Options) ([]string, error) {
	format := o.Format
	if format == "" {
		format = "json"
	}
	if format != "json" && format != "eval" {
		return nil, fmt.Errorf("--format %q: want json or eval", o.Format)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("inspect logs: %w", err)
	}
	var written []string
	for _, b := range run.benches {
		log := inspectLogOf(b)
		var data []byte
		var err error
		if format == "json" {
			data, err = json.MarshalIndent(log, "", "  ")
		} else {
			data, err = evalZip(log)
		}
		if err != nil {
			return nil, fmt.Errorf("inspect log of %s: %w", b.bundle.Benchmark, err)
		}
		path := filepath.Join(o.Out, b.bundle.Benchmark+"."+format)
		if err := atomicfile.WriteFile(path, data); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		written = append(written, path)
	}
	return written, nil
}

// evalZip is Inspect's .eval format: a zip with the log without samples in
// header.json (and _journal/start.json), one samples/<id>_epoch_<n>.json a
// sample, their summaries and the reductions. Entries carry a fixed time so
// that the same run zips to the same bytes.
func evalZip(log inspectLog) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	put := func(name string, v any) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err != nil {
			return err
		}
		return json.NewEncoder(w).Encode(v)
	}
	samples, reds := log.Samples, log.Reductions
	log.Samples, log.Reductions = nil, nil
	start := map[string]any{"version": log.Version, "eval": log.Eval, "plan": log.Plan}
	if err := put("_journal/start.json", start); err != nil {
		return nil, err
	}
	summaries := make([]map[string]any, 0, len(samples))
	for _, s := range samples {
		if err := put(fmt.Sprintf("samples/%s_epoch_%d.json", s.ID, s.Epoch), s); err != nil {
			return nil, err
		}
		summaries = append(summaries, map[string]any{
			"id": s.ID, "epoch": s.Epoch, "input": s.Input, "target": s.Target, "metadata": s.Metadata,
			"scores": s.Scores, "model_usage": s.ModelUsage, "uuid": s.UUID, "completed": true,
		})
	}
	if err := put("summaries.json", summaries); err != nil {
		return nil, err
	}
	if reds != nil {
		if err := put("reductions.json", reds); err != nil {
			return nil, err
		}
	}
	if err := put("header.json", log); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
