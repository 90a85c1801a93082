package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/score"
)

// IngestOptions say which benchmark's harness output to read.
type IngestOptions struct {
	Plan       *plan.Plan
	Benchmark  *plan.Benchmark
	OutDir     string // the run folder; "" means Plan.OutputDir
	NelVersion string
	// Started is when the harness started (the job records it); the
	// shard's end is when ingest runs.
	Started time.Time
}

// Ingested says what Ingest wrote.
type Ingested struct {
	Path          string // the shard file
	Rows          int
	AggregateOnly bool
}

// Ingest reads the harness output of a benchmark and writes it as the
// benchmark's one shard (shard 0 of 1), so that nel-run merge checks it
// and computes its statistics like any other. The recipe's scorer metrics
// are applied to the harness's responses; the primary one (or the only
// one) is the reward, as when nel itself runs the benchmark, and the
// harness's own verdicts are kept as "harness:<metric>" scores.
func Ingest(ctx context.Context, o IngestOptions) (*Ingested, error) {
	b := o.Benchmark
	if b.Harness == nil {
		return nil, fmt.Errorf("benchmark %s is not run by a harness", b.Key)
	}
	if o.OutDir == "" {
		o.OutDir = o.Plan.OutputDir
	}
	if n := max(o.Plan.Shards, 1); n != 1 {
		return nil, fmt.Errorf("benchmark %s: a harness runs as one shard, the plan has %d", b.Key, n)
	}
	dir := rundir.Dir(o.OutDir).Benchmark(b.Dir)
	out, err := ReadTask(b.Harness.Kind, b.Harness.Task, dir.Harness())
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	if err := checkLimit(b, out); err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	model := ""
	for _, s := range o.Plan.Services {
		if s.Name == b.Solver.Service {
			model = s.Model
		}
	}
	rows, trajs, err := toRows(o.Plan, b, out, model)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	meta, err := ingestMeta(o, out, rows, model)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	sh := dir.Shard(0, 1)
	if err := os.MkdirAll(dir.Shards(), 0o755); err != nil {
		return nil, err
	}
	// Trajectories and turns first: a results file marks the shard
	// complete.
	if err := results.WriteTrajectories(sh.Trajectories(), trajs, meta); err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	if b.Harness.Kind == Harbor { // an agent's: every sample has its turns, or a row saying it had none
		var turns []results.Turn
		for i, s := range out.Samples {
			turns = append(turns, results.TurnsOf(rows[i], 0, s.Turns, harborOutcome(s))...)
		}
		if err := results.WriteTurns(sh.Turns(), turns, meta); err != nil {
			return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
		}
	}
	if err := results.WriteRows(string(sh), rows, meta); err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	return &Ingested{Path: string(sh), Rows: len(rows), AggregateOnly: out.AggregateOnly()}, nil
}

// checkLimit refuses VLMEvalKit output with more items than max_problems:
// the job's driver cuts datasets built on VLMEvalKit's image dataset
// class only, and a number over more items than the recipe asked for
// would be another benchmark's.
func checkLimit(b *plan.Benchmark, out *Output) error {
	if b.Harness.Kind != VLMEvalKit || b.MaxProblems == nil || len(out.Samples) <= *b.MaxProblems {
		return nil
	}
	return fmt.Errorf("VLMEvalKit ran %d items, max_problems is %d: not supported yet: max_problems for a %s dataset (the limit applies to VLMEvalKit's image datasets)",
		len(out.Samples), *b.MaxProblems, b.Harness.Task)
}

// toRows turns the harness's samples into rows and trajectories, scoring
// each with the recipe's scorer metrics.
func toRows(p *plan.Plan, b *plan.Benchmark, out *Output, model string) ([]results.Row, []results.Trajectory, error) {
	scorers, primary, err := recipeScorers(b)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]results.Row, 0, len(out.Samples))
	trajs := make([]results.Trajectory, 0, len(out.Samples))
	for _, s := range out.Samples {
		r := results.Row{
			RecipeHash: p.RecipeHash, Benchmark: b.Key, ItemID: s.ItemID, ItemIdx: s.ItemIdx, Repeat: s.Repeat,
			Category: s.Task, Reward: s.Reward, Correct: s.Correct, Extracted: s.Extracted, Expected: s.Expected,
			Attempts: 1, Outcome: "scored", Scores: map[string]float64{}, Model: model,
			PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, LatencyMS: s.LatencyMS,
		}
		for k, v := range s.Scores {
			r.Scores["harness:"+k] = v
		}
		for _, name := range scorers {
			f, _ := score.Lookup(name)
			v := f(s.Response, s.Expected, nil)
			x := 0.0
			if v.Correct {
				x = 1
			}
			r.Scores["scorer:"+name] = x
			if name == primary {
				r.Reward, r.Correct, r.Extracted = x, binary(x), v.Extracted
			}
		}
		if s.Error != failure.None {
			r.ErrorCategory, r.Outcome = string(s.Error), string(s.Error.Outcome())
		}
		rows = append(rows, r)
		req, _ := json.Marshal(s.Prompt)
		trajs = append(trajs, results.Trajectory{
			RecipeHash: p.RecipeHash, Benchmark: b.Key, ItemID: s.ItemID, ItemIdx: s.ItemIdx, Repeat: s.Repeat,
			Request: string(req), Response: s.Response, ScoringDetails: s.Record, Model: model,
		})
	}
	return rows, trajs, nil
}

// recipeScorers are the benchmark's scorer metrics and the one that is
// the reward ("" when the harness's verdict is). The compiler refuses the
// metrics a harness benchmark cannot have; this checks again, since
// nel-run trusts no more than the plan says.
func recipeScorers(b *plan.Benchmark) (names []string, primary string, err error) {
	for _, m := range b.Scoring.Metrics {
		if m.Type != "scorer" {
			return nil, "", fmt.Errorf("metric %s (type %s): a harness benchmark takes scorer metrics only", m.Name, m.Type)
		}
		if _, ok := score.Lookup(m.Name); !ok {
			return nil, "", fmt.Errorf("unknown scorer %q", m.Name)
		}
		names = append(names, m.Name)
	}
	switch {
	case b.Scoring.Primary != nil:
		primary = *b.Scoring.Primary
	case len(names) > 0:
		primary = names[0]
	}
	return names, primary, nil
}

func ingestMeta(o IngestOptions, out *Output, rows []results.Row, model string) (map[string]string, error) {
	b := o.Benchmark
	items := map[string]bool{}
	repeats := int64(b.Repeats)
	for _, r := range rows {
		items[r.ItemID] = true
		repeats = max(repeats, r.Repeat+1)
	}
	h, err := json.Marshal(map[string]any{"kind": b.Harness.Kind, "task": b.Harness.Task, "image": b.Harness.Image, "files": out.Files})
	if err != nil {
		return nil, err
	}
	scores, err := json.Marshal(map[string]any{"primary": out.Primary, "scores": out.Aggregate})
	if err != nil {
		return nil, err
	}
	// The build that read the output, and the host it ran on (the job's
	// batch node; the harness ran in its image on a node of the same job).
	prov, err := json.Marshal(provenance.Record{Version: provenance.Version,
		Build: provenance.CollectBuild(o.NelVersion), Host: provenance.CollectHost(nil)})
	if err != nil {
		return nil, err
	}
	started := o.Started
	if started.IsZero() {
		started = time.Now()
	}
	return map[string]string{
		results.MetaProvenance:    string(prov),
		results.MetaRecipeHash:    o.Plan.RecipeHash,
		results.MetaPlanHash:      o.Plan.PlanHash,
		results.MetaBenchmarkHash: b.Hash,
		results.MetaBenchmark:     b.Key,
		results.MetaNelVersion:    o.NelVersion,
		results.MetaScoring:       o.Plan.ScoringVersion,
		results.MetaModel:         model,
		results.MetaSimulated:     "false",
		results.MetaShard:         "0/1",
		results.MetaStartedAt:     started.UTC().Format(time.RFC3339),
		results.MetaEndedAt:       time.Now().UTC().Format(time.RFC3339),
		results.MetaSelected:      strconv.Itoa(len(items)),
		results.MetaRepeats:       strconv.FormatInt(repeats, 10),
		results.MetaHarness:       string(h),
		results.MetaHarnessScores: string(scores),
		results.MetaAggregateOnly: strconv.FormatBool(out.AggregateOnly()),
	}, nil
}
