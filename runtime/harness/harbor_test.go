package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// TestReadHarbor reads a job folder written by hand in the Harbor CLI's
// shape (testdata/harbor-tb): one sample per finished trial, by task.
func TestReadHarbor(t *testing.T) {
	o, err := Read(Harbor, "testdata/harbor-tb")
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		id      string
		reward  float64
		correct string // "true", "false" or "nil"
		cat     failure.Category
	}
	wants := []want{
		{"build-cython", 0, "nil", failure.ScorerError}, // RewardFileNotFoundError: the verifier wrote nothing
		{"fix-git", 1, "true", failure.None},            // reward 1.0
		{"hello-world", 0, "false", failure.None},       // the agent timed out; the verifier ran and gave 0
		{"regex-log", 0.5, "nil", failure.None},         // the only number the verifier wrote
		{"sqlite-db", 0, "nil", failure.SandboxError},   // the environment did not build
	}
	if len(o.Samples) != len(wants) {
		t.Fatalf("%d samples, want %d (the unfinished trial has no row): %+v", len(o.Samples), len(wants), o.Samples)
	}
	for i, w := range wants {
		s := o.Samples[i]
		c := "nil"
		if s.Correct != nil {
			c = map[bool]string{true: "true", false: "false"}[*s.Correct]
		}
		if s.ItemID != w.id || s.ItemIdx != int64(i) || s.Reward != w.reward || c != w.correct || s.Error != w.cat || s.Task != "Agentic" {
			t.Errorf("sample %d = %s idx %d reward %v correct %s error %q task %q, want %+v", i, s.ItemID, s.ItemIdx, s.Reward, c, s.Error, s.Task, w)
		}
		if !strings.Contains(s.Record, `"task_name": "`+w.id+`"`) {
			t.Errorf("sample %s: record is not its result.json: %.80s", w.id, s.Record)
		}
	}
	// fix-git's agent_result and its 6 min 41 s from started_at to finished_at.
	if f := o.Samples[1]; f.PromptTokens != 18211 || f.CompletionTokens != 2304 || f.LatencyMS != 401000 {
		t.Errorf("fix-git tokens %d/%d latency %v ms, want 18211/2304 and 401000", f.PromptTokens, f.CompletionTokens, f.LatencyMS)
	}
	if got := o.Samples[3].Scores["tests_passed"]; got != 0.5 {
		t.Errorf("regex-log scores = %v, want tests_passed 0.5", o.Samples[3].Scores)
	}
	if !strings.HasPrefix(o.Samples[2].Response, "AgentTimeoutError: ") {
		t.Errorf("hello-world response = %q, want the exception", o.Samples[2].Response)
	}
	if len(o.Files) != 5 || o.Files[0] != "nel/build-cython__Lm4Nb8v/result.json" {
		t.Errorf("files = %v", o.Files)
	}
}

// TestReadHarborRefuses: output nel cannot read as one row per task is an
// error naming the file, never rows made up.
func TestReadHarborRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		files map[string]string
		want  string
	}{
		"no job folder":                      {map[string]string{"other/x": "{}"}, "the Harbor job folder"},
		"no trials":                          {map[string]string{"nel/result.json": "{}"}, "no trial result"},
		"no task name":                       {map[string]string{"nel/a__1/result.json": `{"verifier_result": null}`}, "a__1/result.json: no task_name"},
		"reward not a number":                {map[string]string{"nel/a__1/result.json": `{"task_name": "a", "verifier_result": {"rewards": {"reward": "high"}}}`}, "verifier_result.rewards: reward is high, not a number"},
		"several rewards, none named reward": {map[string]string{"nel/a__1/result.json": `{"task_name": "a", "verifier_result": {"rewards": {"x": 1, "y": 0}}}`}, `no "reward" among x, y`},
		"not JSON":                           {map[string]string{"nel/a__1/result.json": `{`}, "a__1/result.json: unexpected end of JSON input"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for p, body := range c.files {
				path := filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Read(Harbor, dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to say %q", err, c.want)
			}
		})
	}
}

// TestIngestHarbor: the trials become the benchmark's shard and merge as
// any other: a verifier's reward is scored, a trial that failed before its
// verifier gave one is an infra_error, not a wrong answer.
func TestIngestHarbor(t *testing.T) {
	p := ingestPlan(Harbor, "terminal-bench@2.0")
	p.Benchmarks[0].Solver.Type = "harbor"
	res, sum := ingestAndMerge(t, p, "testdata/harbor-tb")
	if res.Rows != 5 || res.AggregateOnly {
		t.Fatalf("ingested %+v", res)
	}
	got := mergedOutcomes(t, sum)
	want := map[string]string{
		"build-cython": "infra_error/scorer_error", "fix-git": "scored/", "hello-world": "scored/",
		"regex-log": "scored/", "sqlite-db": "infra_error/sandbox_error",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: outcome/category %q, want %q", k, got[k], v)
		}
	}
}

// TestReadHarborAttempts: a task's trials (--n-attempts, the recipe's
// repeats) are its repeats, numbered in the order of their folders.
func TestReadHarborAttempts(t *testing.T) {
	dir := t.TempDir()
	for trial, body := range map[string]string{
		"b__k2":  `{"task_name": "b", "verifier_result": {"rewards": {"reward": 1}}}`,
		"a__zz9": `{"task_name": "a", "verifier_result": {"rewards": {"reward": 0}}}`,
		"a__Q07": `{"task_name": "a", "verifier_result": {"rewards": {"reward": 1}}}`,
	} {
		path := filepath.Join(dir, HarborJob, trial, "result.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o, err := Read(Harbor, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range o.Samples {
		got = append(got, fmt.Sprintf("%s/%d/%d=%g", s.ItemID, s.ItemIdx, s.Repeat, s.Reward))
	}
	// "a__Q07" < "a__zz9" (byte order): the reward-1 trial is repeat 0.
	if want := "a/0/0=1 a/0/1=0 b/1/0=1"; strings.Join(got, " ") != want {
		t.Errorf("samples %s, want %s", strings.Join(got, " "), want)
	}
}

// TestIngestHarborTurns: a trial's ATIF trajectory becomes its turns in
// turns.parquet (an assistant turn per agent step, a tool turn per result;
// the prompt's system and user steps are not turns); a trial without one
// keeps a row that says how it ended.
func TestIngestHarborTurns(t *testing.T) {
	p := ingestPlan(Harbor, "terminal-bench@2.0")
	p.Benchmarks[0].Solver.Type = "harbor"
	out := t.TempDir()
	copyTree(t, "testdata/harbor-tb", rundir.Dir(out).Benchmark("bench").Harness())
	if _, err := Ingest(context.Background(), IngestOptions{Plan: p, Benchmark: &p.Benchmarks[0], OutDir: out, NelVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	turns, _, err := results.ReadTurns(rundir.Dir(out).Benchmark("bench").Shard(0, 1).Turns())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range turns {
		got = append(got, fmt.Sprintf("%s#%d %s %s %s %q p%d c%d", tr.ItemID, tr.TurnIndex, tr.Role, tr.Outcome, tr.ToolName, tr.Content, tr.PromptTokens, tr.CompletionTokens))
	}
	want := []string{
		`build-cython#0 none infra_error  "" p0 c0`,
		`fix-git#0 assistant solved  "Let me look at the reflog." p1210 c64`,
		`fix-git#1 tool solved bash "d4e5f6a HEAD@{0}: checkout: moving from 650dba4 to master\n650dba4 HEAD@{1}: commit: Move to Stanford" p0 c0`,
		`fix-git#2 assistant solved  "Merging 650dba4 into master." p1402 c40`,
		`fix-git#3 tool solved bash "Updating d4e5f6a..650dba4\nFast-forward" p0 c0`,
		`fix-git#4 assistant solved  "The commit is back on master." p1490 c12`,
		`hello-world#0 none failed_verifier  "" p0 c0`,
		`regex-log#0 none failed_verifier  "" p0 c0`,
		`sqlite-db#0 none infra_error  "" p0 c0`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("turns:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, tr := range turns {
		if tr.ItemID == "fix-git" && tr.TurnIndex == 0 && (tr.Reasoning != "A lost commit is usually still in the reflog." || tr.ToolCalls != `[{"id":"call_1","name":"bash","arguments":"{\"command\": \"cd /app \u0026\u0026 git reflog | head -5\"}"}]`) {
			t.Errorf("first turn: reasoning %q, tool calls %s", tr.Reasoning, tr.ToolCalls)
		}
		if tr.ItemID == "fix-git" && tr.TurnIndex == 1 && tr.ToolArguments != `{"command": "cd /app && git reflog | head -5"}` {
			t.Errorf("tool turn's arguments %s", tr.ToolArguments)
		}
	}
}
