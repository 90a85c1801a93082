package shard_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/judge"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// writeSimpleQA writes n SimpleQA-shaped rows (metadata, problem, answer).
func writeSimpleQA(t *testing.T, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, "simpleqa.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	w.Write([]string{"metadata", "problem", "answer"})
	for i := range n {
		w.Write([]string{fmt.Sprintf("{'topic': 'T%d', 'answer_type': 'Other'}", i%3), fmt.Sprintf("Which town hosted fair number %d?", i), fmt.Sprintf("Townsville %d", i)})
	}
	w.Flush()
	if err := f.Close(); err != nil || w.Error() != nil {
		t.Fatal(err, w.Error())
	}
	return path
}

// judgeSim is a simulated judge (no datasets: it answers judge prompts).
func judgeSim(t *testing.T, cfg sim.Config) *httptest.Server {
	t.Helper()
	cfg.Model = "judge-sim"
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func judgePlan(name, solverURL, judgeURL, data string, m plan.Metric) *plan.Plan {
	zero := 0.0
	m.Type, m.Service = "judge", "judge"
	return &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "test", ScoringVersion: "1",
		RecipeHash: "sha256:recipe", PlanHash: "sha256:plan-judge", OutputDir: "unused", Shards: 1,
		Services: []plan.Service{
			{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: solverURL + "/v1"},
			{Name: "judge", Type: "api", Protocol: "chat_completions", Model: "judge-sim", URL: judgeURL + "/v1/chat/completions"},
		},
		Benchmarks: []plan.Benchmark{{
			Key: name, Name: name, Dir: name, Hash: "sha256:bench",
			Solver:        plan.Solver{Type: "simple", Service: "sim", Generation: plan.Generation{Temperature: &zero}},
			MaxConcurrent: 8, Timeout: 30,
			Params:  map[string]any{"data_path": data},
			Scoring: plan.Scoring{Metrics: []plan.Metric{m}},
		}},
	}
}

func runJudged(t *testing.T, p *plan.Plan) ([]results.Row, []results.Trajectory) {
	t.Helper()
	out := t.TempDir()
	b := p.Benchmarks[0]
	res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: b.Key, Shard: 0, Of: 1, OutDir: out, NelVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := results.ReadRows(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	trajs, _, err := results.ReadTrajectories(rundir.Shard(res.Path).Trajectories())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(trajs) {
		t.Fatalf("%d rows, %d trajectories", len(rows), len(trajs))
	}
	return rows, trajs
}

func calls(t *testing.T, tr results.Trajectory) []judge.Call {
	t.Helper()
	var cs []judge.Call
	if err := json.Unmarshal([]byte(tr.JudgeCalls), &cs); err != nil {
		t.Fatalf("item %s: judge_calls %q: %v", tr.ItemID, tr.JudgeCalls, err)
	}
	return cs
}

// SimpleQA end to end: a simulated solver (right half the time, wrong or
// abstaining otherwise) graded by a simulated judge with the official
// grader prompt; every grader call is in the trajectory.
func TestJudgeSimpleQA(t *testing.T) {
	dir := t.TempDir()
	data := writeSimpleQA(t, dir, 40)
	solver := simServer(t, sim.Config{Accuracy: 0.5}, "simpleqa", data)
	j := judgeSim(t, sim.Config{})
	rows, trajs := runJudged(t, judgePlan("simpleqa", solver.URL, j.URL, data, plan.Metric{Name: "grader", Timeout: 10, MaxRetries: 2}))
	if len(rows) != 40 {
		t.Fatalf("%d rows", len(rows))
	}
	grades := map[string]int{}
	for i, r := range rows {
		tr := trajs[i]
		if r.ErrorCategory != "" {
			t.Errorf("item %s failed: %s (%s)", r.ItemID, r.ErrorCategory, tr.Error)
			continue
		}
		cs := calls(t, tr)
		if len(cs) != 1 {
			t.Fatalf("item %s: %d judge calls", r.ItemID, len(cs))
		}
		c := cs[0]
		if c.Judge != "grader" || len(c.Messages) != 1 || !strings.HasPrefix(c.Messages[0].Content, "Your job is to look at a question, a gold target") ||
			!strings.Contains(c.Messages[0].Content, "Gold target: "+r.Expected+"\nPredicted answer: "+tr.Response+"\n") {
			t.Errorf("item %s: judge call %+v does not carry the grader prompt for this answer", r.ItemID, c)
		}
		grade, ok := bench.SimpleQAGrade(c.Raw)
		if !ok {
			t.Fatalf("item %s: raw judge answer %q", r.ItemID, c.Raw)
		}
		grades[grade]++
		if (r.Reward == 1) != (grade == bench.SimpleQACorrect) || (r.Reward == 1) != strings.Contains(tr.Response, r.Expected) {
			t.Errorf("item %s: reward %v, grade %s, response %q", r.ItemID, r.Reward, grade, tr.Response)
		}
		if r.Scores["simpleqa:correct"]+r.Scores["simpleqa:incorrect"]+r.Scores["simpleqa:not_attempted"] != 1 {
			t.Errorf("item %s: scores %v", r.ItemID, r.Scores)
		}
		if !strings.Contains(tr.ScoringDetails, `"grade":"`+grade+`"`) {
			t.Errorf("item %s: scoring details %s", r.ItemID, tr.ScoringDetails)
		}
	}
	if grades[bench.SimpleQACorrect] == 0 || grades[bench.SimpleQAIncorrect] == 0 || grades[bench.SimpleQANotAttempted] == 0 {
		t.Errorf("grades %v: want all three", grades)
	}
}

// A judge that answers nonsense 30% of the time: those samples are
// judge_error rows with the nonsense in their trajectory (each was asked
// once, as simple-evals asks once), and the run completes.
func TestJudgeNonsense(t *testing.T) {
	dir := t.TempDir()
	data := writeSimpleQA(t, dir, 60)
	solver := simServer(t, sim.Config{}, "simpleqa", data)
	j := judgeSim(t, sim.Config{Faults: sim.Faults{JudgeNonsense: 0.3}})
	rows, trajs := runJudged(t, judgePlan("simpleqa", solver.URL, j.URL, data, plan.Metric{Name: "grader", Timeout: 10}))
	failed := 0
	for i, r := range rows {
		cs := calls(t, trajs[i])
		switch {
		case r.ErrorCategory == string(failure.JudgeError):
			failed++
			if cs[0].Raw != sim.NonsenseAnswer || r.Reward != 0 || len(r.Scores) != 0 || !strings.Contains(trajs[i].ScoringDetails, "no A, B or C") {
				t.Errorf("item %s: judge_error row %+v, calls %+v", r.ItemID, r, cs)
			}
		case r.ErrorCategory == "":
			if r.Reward != 1 || cs[0].Raw != "A" {
				t.Errorf("item %s: reward %v, judge said %q", r.ItemID, r.Reward, cs[0].Raw)
			}
		default:
			t.Errorf("item %s: %s", r.ItemID, r.ErrorCategory)
		}
	}
	// 60 draws at 0.3: 18 expected; [6, 32] holds with probability > 0.999.
	if failed < 6 || failed > 32 {
		t.Errorf("%d of 60 judge_error rows at a 0.3 nonsense rate", failed)
	}
}

// A judge that never answers within the metric's timeout: every sample is
// a judge_error with the timeout in its trajectory, and the run completes
// (judge failures do not trip the endpoint breaker).
func TestJudgeTimeout(t *testing.T) {
	dir := t.TempDir()
	data := writeSimpleQA(t, dir, 25)
	solver := simServer(t, sim.Config{}, "simpleqa", data)
	j := judgeSim(t, sim.Config{Faults: sim.Faults{Slow: 1}}) // every answer after 2 s
	start := time.Now()
	rows, trajs := runJudged(t, judgePlan("simpleqa", solver.URL, j.URL, data, plan.Metric{Name: "grader", Timeout: 0.2, MaxRetries: 1}))
	for i, r := range rows {
		cs := calls(t, trajs[i])
		if r.ErrorCategory != string(failure.JudgeError) || len(cs) != 1 || !strings.Contains(cs[0].Error, "timeout") {
			t.Errorf("item %s: %s, calls %+v", r.ItemID, r.ErrorCategory, cs)
		}
	}
	if len(rows) != 25 {
		t.Errorf("%d rows", len(rows))
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v: the judge timeout did not bound the calls", d)
	}
}

// A judge metric on a benchmark scored without one is an extra score,
// judge:NAME, the normalised rubric score; the reward stays the
// benchmark's.
func TestJudgeExtraMetric(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 30)
	solver := simServer(t, sim.Config{Accuracy: 0.5}, "gsm8k", data)
	j := judgeSim(t, sim.Config{})
	rows, trajs := runJudged(t, judgePlan("gsm8k", solver.URL, j.URL, data, plan.Metric{Name: "quality", MaxScore: 5, Timeout: 10}))
	right := 0
	for i, r := range rows {
		v, ok := r.Scores["judge:quality"]
		// The simulated judge gives 5 (→ 1.0) when the response contains
		// the reference, 1 (→ 0.2, NeMo's min(score/5, 1)) otherwise.
		want := 0.2
		if r.Reward == 1 {
			want = 1
			right++
		}
		if !ok || v != want {
			t.Errorf("item %s: reward %v, judge:quality %v (%v), want %v", r.ItemID, r.Reward, v, ok, want)
		}
		cs := calls(t, trajs[i])
		if len(cs) != 1 || cs[0].Messages[0].Content != judge.DefaultSystem || !strings.Contains(cs[0].Messages[1].Content, "Reference answer:\n"+r.Expected) ||
			cs[0].Score == nil || cs[0].Normalized == nil || *cs[0].Normalized != want {
			t.Errorf("item %s: calls %+v", r.ItemID, cs)
		}
	}
	if right == 0 || right == len(rows) {
		t.Errorf("%d of %d right: want a mix", right, len(rows))
	}
}

// Without a judge metric, a benchmark scored by a judge is refused.
func TestJudgeRequired(t *testing.T) {
	dir := t.TempDir()
	data := writeSimpleQA(t, dir, 3)
	p := judgePlan("simpleqa", "http://127.0.0.1:1", "http://127.0.0.1:1", data, plan.Metric{Name: "g"})
	p.Benchmarks[0].Scoring.Metrics = nil
	_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "simpleqa", Shard: 0, Of: 1, OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "judge metric") {
		t.Errorf("simpleqa without a judge: %v", err)
	}
}
