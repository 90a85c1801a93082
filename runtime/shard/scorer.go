package shard

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/results"
)

// Scorer is one benchmark of a plan loaded for scoring answers that come
// from outside a shard (nel serve's /verify): its selected items, and the
// scoring a shard of it does, judges, sandbox and extra scorers included.
// It goes through the shard's own score path, so an answer served gets the
// reward the same answer gets in a run.
type Scorer struct {
	r        *runner
	items    []bench.Item
	closeEnv func()
}

// Verdict is what the shard would record of one answer: the row's verdict
// columns and the trajectory's scoring details.
type Verdict struct {
	Reward    float64
	Correct   *bool
	Extracted string
	// Outcome is scored, model_error or infra_error; ErrorCategory and
	// ErrorMessage say why when it is not plainly scored.
	Outcome, ErrorCategory, ErrorMessage string
	Scores                               map[string]float64
	// Details is the scorer's details (method, extracted, …) as JSON.
	Details json.RawMessage
}

// OpenScorer loads o.Benchmark of o.Plan (its data, the recipe's selection:
// shuffle_seed and max_problems) and opens its scoring environment. Shard
// and Of are ignored: a scorer holds every selected item. Close it.
func OpenScorer(ctx context.Context, o Options) (*Scorer, error) {
	o.Shard, o.Of = 0, 1
	r, err := newRunner(o)
	if err != nil {
		return nil, err
	}
	if r.agentic {
		return nil, fmt.Errorf("benchmark %s: not supported yet: serving a tool_calling benchmark (its verifier runs in the sample's sandbox session)", r.b.Key)
	}
	set, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	s := &Scorer{r: r, items: Select(set.Items, r.b.ShuffleSeed, r.b.MaxProblems), closeEnv: func() {}}
	if len(s.items) > 0 {
		if s.closeEnv, err = r.openScoring(ctx, &s.items[0]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Close closes the scoring environment.
func (s *Scorer) Close() { s.closeEnv() }

// Benchmark is the benchmark's key in the plan.
func (s *Scorer) Benchmark() string { return s.r.b.Key }

// Dir is the benchmark's folder name: its key made safe for a file name.
func (s *Scorer) Dir() string { return s.r.b.Dir }

// Len is how many items the recipe selects.
func (s *Scorer) Len() int { return len(s.items) }

// Item is the i-th selected item, in the order a run takes them.
func (s *Scorer) Item(i int) *bench.Item { return &s.items[i] }

// Bounded says scoring runs programs or asks a judge: callers should bound
// how many verdicts are computed at once.
func (s *Scorer) Bounded() bool {
	return s.r.def.NeedsSandbox || s.r.env != nil && s.r.env.Judge != nil
}

// Score scores response, the model's whole answer, against it as the
// shard does: reasoning in a leading <think> block is split off first
// (the model client does that in a run).
func (s *Scorer) Score(ctx context.Context, it *bench.Item, response string) (Verdict, error) {
	_, answer := model.SplitReasoning(response)
	row := results.Row{Scores: map[string]float64{}}
	var traj results.Trajectory
	if !s.r.score(ctx, it, &model.Response{Content: answer, FinishReason: "stop"}, &row, &traj) {
		return Verdict{}, ctx.Err()
	}
	return Verdict{
		Reward: row.Reward, Correct: row.Correct, Extracted: row.Extracted,
		Outcome: row.Outcome, ErrorCategory: row.ErrorCategory, ErrorMessage: row.ErrorMessage,
		Scores: row.Scores, Details: json.RawMessage(traj.ScoringDetails),
	}, nil
}
