package shard

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/judge"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
)

// openJudges builds the benchmark's judge metrics by name, and the first
// one (which scores a NeedsJudge benchmark); nil when there are none. Each
// judge has its own client for its service, with the metric's max_retries
// as the transport retries; its timeout bounds each call (runtime/judge).
func (r *runner) openJudges(ctx context.Context) (map[string]bench.Judge, bench.Judge, error) {
	var judges map[string]bench.Judge
	var first bench.Judge
	for _, m := range r.b.Scoring.Metrics {
		if m.Type != "judge" {
			continue
		}
		svc, ok := r.p.Service(m.Service)
		if !ok {
			return nil, nil, fmt.Errorf("judge %s: the plan has no service %q", m.Name, m.Service)
		}
		c, err := r.serviceClient(svc, m.MaxRetries)
		if err != nil {
			return nil, nil, fmt.Errorf("judge %s: %w", m.Name, err)
		}
		r.judgeClients = append(r.judgeClients, c)
		j := judge.New(judge.FromMetric(m), c)
		if judges == nil {
			judges = map[string]bench.Judge{}
		}
		judges[m.Name] = j
		if first == nil {
			first = j
		}
	}
	return judges, first, nil
}

// serviceClient is a model client for svc, another service than the
// solver's (r.client), its URL and API key resolved the same way.
func (r *runner) serviceClient(svc *plan.Service, maxRetries int) (*model.Client, error) {
	base, key, err := r.endpoint(svc)
	if err != nil {
		return nil, err
	}
	mw, err := r.middleware(svc)
	if err != nil {
		return nil, err
	}
	c, err := model.New(model.Config{
		Middleware: mw,
		BaseURL:    base, APIKey: key, Model: svc.Model, Protocol: svc.Protocol,
		MaxConcurrent: max(r.b.MaxConcurrent, 1),
		// 0 means: retry while the call's timeout lasts (model.Config).
		MaxRetries: maxRetries,
		Logger:     r.log,
	})
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", svc.Name, err)
	}
	return c, nil
}

// judgeMetrics scores a response with the benchmark's judge metrics, after
// the benchmark's own scorer gave s:
//
//   - A benchmark scored by a judge (s.NeedsJudge from its Score) takes its
//     reward from the first judge metric: its ScoreEnv asks that judge
//     itself (SimpleQA's grader, XSTest's classifier), or, without one, the
//     first judge's normalised rubric score is the reward (NeMo Evaluator's
//     healthbench path). A failure of that judge is the row's failure
//     (judge_error): the sample is recorded and the run goes on.
//   - Every other judge metric is an extra score, row.Scores["judge:NAME"]
//     = its normalised score. When such a judge fails, the score is left
//     out of the row (the metric's N shows how many rows have it) and the
//     reward and error category stay the benchmark's: an extra metric does
//     not turn a scored sample into a failed one. The failed call is in
//     the trajectory's judge_calls with its error.
func (r *runner) judgeMetrics(ctx context.Context, it *bench.Item, response string, s bench.Score) bench.Score {
	if r.env == nil || len(r.env.Judges) == 0 {
		return s
	}
	firstIsReward := s.NeedsJudge
	question := it.Question()
	first := true
	for _, m := range r.b.Scoring.Metrics {
		if m.Type != "judge" {
			continue
		}
		j, ok := r.env.Judges[m.Name].(*judge.Judge)
		isFirst := first
		first = false
		if !ok {
			continue
		}
		if isFirst && firstIsReward {
			if r.def.ScoreEnv != nil {
				continue // the benchmark asked it already
			}
			v, err := j.Score(ctx, question, response, it.Expected)
			if err != nil {
				s.Failure = failure.JudgeError
				s.Details = withDetail(s.Details, "judge_error", err.Error())
				continue
			}
			s.Reward, s.Binary, s.Correct = v.Normalized, false, false
			s.Method = "judge:" + m.Name
			s.Details = withDetail(s.Details, "judge", map[string]any{"score": v.Score, "normalized": v.Normalized, "how": v.How})
			continue
		}
		v, err := j.Score(ctx, question, response, it.Expected)
		if err != nil {
			r.log.Debug("judge metric failed; its score is left out of the row", "judge", m.Name, "item", it.ID, "err", err)
			continue
		}
		if s.Scores == nil {
			s.Scores = map[string]float64{}
		}
		s.Scores["judge:"+m.Name] = v.Normalized
	}
	return s
}

func withDetail(d map[string]any, k string, v any) map[string]any {
	if d == nil {
		d = map[string]any{}
	}
	d[k] = v
	return d
}

// judgeCallsJSON is the trajectory's judge_calls column: "" without calls.
func judgeCallsJSON(rec *judge.Recorder) string {
	calls := rec.Calls()
	if len(calls) == 0 {
		return ""
	}
	b, err := json.Marshal(calls)
	if err != nil {
		return ""
	}
	return string(b)
}
