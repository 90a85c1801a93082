package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/jsonany"
	"github.com/nel-eval/nel/runtime/judge"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/score"
)

// refusalPattern is NeMo Evaluator's refusal detector for failure
// analysis (reference §5.4): a wrong answer that reads like this is a
// refusal. refusalLits are its alternatives as score.ContainsAnyFold
// takes them (the tests hold the two to each other).
const refusalPattern = `(?i)I cannot|I'm unable|I can't|as an AI|I don't have the ability|I apologize`

var refusalLits = []string{"i cannot", "i'm unable", "i can't", "as an ai", "i don't have the ability", "i apologize"}

// isRefusal reports whether refusalPattern matches s.
func isRefusal(s string) bool { return score.ContainsAnyFold(s, refusalLits) }

// sample runs one (item, repeat): ask, release, then conclude.
// release is called as soon as the model has answered.
func (r *runner) sample(ctx context.Context, client *model.Client, it *bench.Item, repeat, attempt int, release func()) (rec *sampleRecord, interrupted bool) {
	a := r.ask(ctx, client, it, repeat, attempt)
	release()
	return r.conclude(ctx, a)
}

// answer is what the request of a sample brought back.
type answer struct {
	it              *bench.Item
	repeat, attempt int
	seed            int64
	resp            *model.Response
	err             error
	latency         time.Duration
}

// ask sends the request of one (item, repeat) within the benchmark's
// per-sample time budget.
func (r *runner) ask(ctx context.Context, client *model.Client, it *bench.Item, repeat, attempt int) answer {
	seed := Seed(r.p.RecipeHash, r.b.Key, it.ID, repeat)
	req := r.modelRequest(it, seed)
	budget := r.sampleBudget()
	sctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	if len(r.svc.Interceptors) > 0 || r.svc.ModelTraffic != nil || r.o.ModelTransport != nil {
		// The chain's traffic log and interceptors say which sample a
		// request is; without a chain nothing reads it.
		sctx = intercept.WithSample(sctx, intercept.Sample{Benchmark: r.b.Key, Item: it.ID, Repeat: repeat})
	}
	start := time.Now()
	resp, err := client.Complete(sctx, req)
	latency := time.Since(start)
	r.noteResponse(resp)
	return answer{it: it, repeat: repeat, attempt: attempt, seed: seed, resp: resp, err: err, latency: latency}
}

// conclude scores an answered sample and makes its record. interrupted
// reports that the run itself was stopped (the sample then has no result
// and runs again on resume).
func (r *runner) conclude(ctx context.Context, a answer) (rec *sampleRecord, interrupted bool) {
	it, repeat, attempt, seed, resp, err, latency := a.it, a.repeat, a.attempt, a.seed, a.resp, a.err, a.latency
	if err != nil && ctx.Err() != nil {
		return nil, true
	}

	row := results.Row{
		RecipeHash: r.p.RecipeHash,
		Benchmark:  r.b.Key,
		ItemID:     it.ID,
		ItemIdx:    int64(it.Index),
		Repeat:     int64(repeat),
		Category:   it.Category,
		Expected:   it.Expected,
		LatencyMS:  float64(latency.Microseconds()) / 1000,
		Attempts:   int64(attempt),
		Seed:       seed,
		Scores:     map[string]float64{},
	}
	traj := results.Trajectory{
		RecipeHash: r.p.RecipeHash,
		Benchmark:  r.b.Key,
		ItemID:     it.ID,
		ItemIdx:    int64(it.Index),
		Repeat:     int64(repeat),
		Request:    string(r.requestJSON(it)),
		Model:      r.svc.Model,
		LatencyMS:  row.LatencyMS,
	}
	rec = &sampleRecord{}
	if err != nil {
		rec.Status = r.failed(&row, &traj, resp, err)
		row.Model = traj.Model
		rec.Row, rec.Traj = row, traj
		return rec, false
	}

	rec.Simulated = resp.Simulated
	if resp.Simulated {
		r.simulated.Store(true)
	}
	row.FinishReason = resp.FinishReason
	row.PromptTokens = resp.PromptTokens
	row.CompletionTokens = resp.CompletionTokens
	row.ReasoningTokens = resp.ReasoningTokens
	traj.Response = resp.Content
	traj.Reasoning = resp.Reasoning
	traj.Retries = int64(max(resp.Attempts-1, 0))
	if resp.Model != "" {
		traj.Model = resp.Model
	}
	row.Model = traj.Model
	if !r.score(ctx, it, resp, &row, &traj) {
		return nil, true // stopped while scoring: run it again on resume
	}
	rec.Row, rec.Traj = row, traj
	return rec, false
}

// request is what the solver sends for it, and its JSON for the
// trajectory.
func (r *runner) request(it *bench.Item, seed int64) (model.Request, []byte) {
	return r.modelRequest(it, seed), r.requestJSON(it)
}

// modelRequest is what the solver sends for it: the prompt (completions)
// or the messages (chat).
func (r *runner) modelRequest(it *bench.Item, seed int64) model.Request {
	req := model.Request{Generation: r.b.Solver.Generation, Seed: seed}
	if r.svc.Protocol == "completions" {
		req.Prompt = it.Prompt
		return req
	}
	for _, m := range r.messages(it) {
		req.Messages = append(req.Messages, model.Message{Role: m.Role, Content: m.Content})
	}
	return req
}

// requestJSON is the request's JSON for the trajectory. It is made apart
// from the request, after the answer (conclude): encoding/json's
// reflection would grow the stack of every goroutine waiting on the model.
// The bytes are json.Marshal's of {"prompt": …} or of the messages,
// written without its reflection (issue 23).
func (r *runner) requestJSON(it *bench.Item) []byte {
	if r.svc.Protocol == "completions" {
		b := append(make([]byte, 0, len(it.Prompt)+16), `{"prompt":`...)
		return append(jsonany.AppendString(b, it.Prompt), '}')
	}
	msgs := r.messages(it)
	if msgs == nil {
		return []byte("null")
	}
	n := 2
	for _, m := range msgs {
		n += len(m.Role) + len(m.Content) + 32
	}
	b := append(make([]byte, 0, n), '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonany.AppendString(append(b, `{"role":`...), m.Role), `,"content":`...)
		b = append(jsonany.AppendString(b, m.Content), '}')
	}
	return append(b, ']')
}

// messages are the chat messages sent for it. Unlike NeMo Evaluator
// (which ignores solver.system_prompt when the benchmark builds messages,
// reference §3.1), the recipe's system prompt is sent: it is part of the
// recipe hash.
func (r *runner) messages(it *bench.Item) []bench.Message {
	msgs := it.Messages
	if sp := r.b.Solver.SystemPrompt; sp != nil && *sp != "" && (len(msgs) == 0 || msgs[0].Role != "system") {
		msgs = append([]bench.Message{{Role: "system", Content: *sp}}, msgs...)
	}
	return msgs
}

// failed records a request that ended in err (resp is what came back, if
// anything) in row and traj, and returns the HTTP status it failed with.
func (r *runner) failed(row *results.Row, traj *results.Trajectory, resp *model.Response, err error) (status int) {
	var fe *failure.Error
	cat := failure.APIError
	if errors.As(err, &fe) {
		cat = fe.Category
		traj.Retries = int64(max(fe.Attempts-1, 0))
		status = fe.Status
	}
	if errors.Is(err, context.DeadlineExceeded) {
		cat = failure.Timeout
	}
	row.ErrorCategory = string(cat)
	traj.Error = err.Error()
	if cat.Outcome() == failure.ModelError && resp != nil {
		// An empty message still says how it ended and what it cost.
		row.FinishReason = resp.FinishReason
		row.PromptTokens, row.CompletionTokens = resp.PromptTokens, resp.CompletionTokens
	}
	settle(row, r.binary, r.extras, traj.Error)
	return status
}

// score scores the answer in resp as the benchmark does, with its judge
// metrics and extra scorers, into row and traj. It returns false when ctx
// ended while scoring.
func (r *runner) score(ctx context.Context, it *bench.Item, resp *model.Response, row *results.Row, traj *results.Trajectory) bool {
	var s bench.Score
	// Judge calls made while scoring are recorded for the trajectory
	// (only a scorer with the environment, or a judge metric, makes one).
	jctx, calls := ctx, (*judge.Recorder)(nil)
	if r.def.ScoreEnv != nil || (r.env != nil && len(r.env.Judges) > 0) {
		jctx, calls = judge.WithRecorder(ctx)
	}
	if r.def.ScoreEnv != nil {
		s = r.def.ScoreEnv(jctx, r.env, it, resp.Content)
	} else {
		s = r.def.Score(it, resp.Content)
	}
	s = r.judgeMetrics(jctx, it, resp.Content, s)
	if ctx.Err() != nil {
		return false
	}
	if calls != nil {
		traj.JudgeCalls = judgeCallsJSON(calls)
	}
	// The failure's text is the exemplar reports show.
	// (Scorers put it in Details under the category's name: judge_error,
	// sandbox_error, scorer_error.)
	if e, ok := s.Details[string(s.Failure)].(string); ok && s.Failure != failure.None {
		traj.Error = e
	}
	if s.Failure != failure.None {
		// Scoring infrastructure failed (sandbox, judge): the sample keeps
		// its response but no verdict; the run goes on.
		s.Reward, s.Correct = 0, false
	}
	row.Reward = s.Reward
	row.Extracted = s.Extracted
	if s.Binary {
		c := s.Correct
		row.Correct = &c
	}
	for _, x := range r.extras {
		res := x.fn(resp.Content, it.Expected, it.Meta)
		row.Scores[x.name] = b2f(res.Correct)
	}
	for k, v := range s.Scores {
		row.Scores[k] = v
	}
	msg := traj.Error
	if s.Failure != failure.None {
		row.ErrorCategory = string(s.Failure)
	} else if s.Reward == 0 {
		msg = r.whyWrong(row, resp, s, msg)
	}
	settle(row, s.Binary, nil, msg)
	details := map[string]any{"method": s.Method, "extracted": s.Extracted}
	for k, v := range s.Details {
		details[k] = v
	}
	if d, ok := jsonany.Append(make([]byte, 0, 256), details); ok {
		traj.ScoringDetails = string(d)
	} else if d, err := json.Marshal(details); err == nil {
		traj.ScoringDetails = string(d)
	}
	return true
}

// whyWrong gives a wrong answer the error category that says why, when one
// does (cut off, a refusal, nothing to extract), and returns the row's
// message: the category's, else msg.
func (r *runner) whyWrong(row *results.Row, resp *model.Response, s bench.Score, msg string) string {
	switch {
	case resp.FinishReason == "length":
		row.ErrorCategory = string(failure.Truncated)
		return fmt.Sprintf("the answer was cut off (finish_reason length) after %d completion tokens", resp.CompletionTokens)
	case r.def.Name != "xstest" && isRefusal(resp.Content):
		// (XSTest scores refusals; there a refusal is an answer.)
		row.ErrorCategory = string(failure.Refusal)
		return "the answer reads as a refusal"
	case s.Extracted == "":
		row.ErrorCategory = string(failure.FormatError)
		return "no answer could be extracted from the response"
	}
	return msg
}

// settle gives the row its outcome (scored, model_error or infra_error)
// from its error category, and its error message on one line. A model
// error is scored as wrong: reward 0, correct false where rewards are
// binary, every extra scorer 0. An infrastructure failure has no verdict
// at all: reward 0 only because the column cannot be empty, correct null
// and no scores, and every analysis leaves the row out (DESIGN §6.7).
func settle(row *results.Row, binary bool, extras []namedScorer, msg string) {
	o := failure.Category(row.ErrorCategory).Outcome()
	row.Outcome = string(o)
	if row.ErrorCategory != "" {
		row.ErrorMessage = oneLine(msg)
	}
	switch o {
	case failure.InfraError:
		row.Reward, row.Correct = 0, nil
		clear(row.Scores)
	case failure.ModelError:
		row.Reward = 0
		if binary {
			f := false
			row.Correct = &f
		}
		for _, x := range extras {
			if _, ok := row.Scores[x.name]; !ok {
				row.Scores[x.name] = 0
			}
		}
	}
}

// oneLine folds a message onto one line of at most 500 bytes: the row's
// error_message is for grouping and reading in a table; the whole text
// stays in the trajectory's error column.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 500 {
		cut := 497
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// sampleBudget is how long one sample may take: the benchmark's timeout,
// 30 minutes when it sets none.
func (r *runner) sampleBudget() time.Duration {
	if budget := time.Duration(r.b.Timeout * float64(time.Second)); budget > 0 {
		return budget
	}
	return 30 * time.Minute
}
