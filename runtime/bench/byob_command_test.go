package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
)

// commandScore scores response to a Peru item with a scorer command run
// in dir.
func commandScore(t *testing.T, dir string, argv []string, timeout float64, response string) Score {
	t.Helper()
	b, err := BYOB("caps", &plan.BYOB{Dataset: "caps.jsonl", Prompt: "{country}", Target: "capital",
		Scorer: plan.BYOBScorer{Command: argv, Timeout: timeout}}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.ScoreEnv == nil {
		t.Fatal("a command scorer has no ScoreEnv")
	}
	it := &Item{Expected: "Lima", Messages: []Message{{Role: "user", Content: "Peru"}},
		Meta: map[string]any{"row": map[string]any{"country": "Peru", "capital": "Lima"}}}
	return b.ScoreEnv(context.Background(), nil, it, response)
}

// The worked example of docs/byob.md: examples/byob/score_capital.py, run
// by python3 from the recipe's directory.
func TestBYOBCommandExample(t *testing.T) {
	py := testenv.LookPath(t, testenv.Python3)
	dir := filepath.Join(testenv.Root(t), "examples", "byob")
	argv := []string{py, "score_capital.py"}
	s := commandScore(t, dir, argv, 0, "Lima.\nIt is on the coast.")
	if !s.Correct || !s.Binary || s.Reward != 1 || s.Extracted != "Lima" || s.Failure != failure.None || s.Method != "command" {
		t.Errorf("right answer: %+v", s)
	}
	// Keys besides correct and extracted are kept as details: here the
	// script echoes the row's country, which shows the row reached it.
	if s.Details["country"] != "Peru" {
		t.Errorf("details %v, want the row's country Peru", s.Details)
	}
	if s := commandScore(t, dir, argv, 0, "The capital is Lima."); s.Correct || s.Reward != 0 || s.Extracted != "The capital is Lima" || s.Failure != failure.None {
		t.Errorf("wrong answer: %+v", s)
	}
}

// writeScript writes a Python scorer into dir.
func writeScript(t *testing.T, dir, name, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The protocol's other answers, and every way a command can fail: each
// failure is a scorer_error with what the command said, never a verdict.
func TestBYOBCommandProtocol(t *testing.T) {
	py := testenv.LookPath(t, testenv.Python3)
	dir := t.TempDir()
	writeScript(t, dir, "reward.py", `import json, sys
s = json.load(sys.stdin)
json.dump({"reward": 0.25 if s["target"] in s["response"] else 0.0}, sys.stdout)
`)
	s := commandScore(t, dir, []string{py, "reward.py"}, 0, "  Lima, I think  ")
	if s.Reward != 0.25 || s.Binary || s.Failure != failure.None || s.Extracted != "Lima, I think" {
		t.Errorf("reward: %+v, want reward 0.25, not binary, the stripped response extracted", s)
	}

	failures := []struct {
		name, src string
		timeout   float64
		want      []string
	}{
		{"crash", "import sys\nsys.stderr.write('loading model\\n')\nraise ValueError('boom')\n", 0,
			[]string{"scorer command: exit status 1", "stderr: loading model", "ValueError: boom"}},
		{"timeout", "import time\ntime.sleep(30)\n", 0.3, []string{"no answer within 300ms"}},
		{"not json", "print('yes')\n", 0, []string{`stdout is not one JSON object`, `"yes\n"`}},
		{"two values", "print('{\"correct\": true}')\nprint('{\"correct\": false}')\n", 0, []string{"more than one JSON value"}},
		{"no verdict", "print('{\"score\": 1}')\n", 0, []string{`neither "correct" nor "reward"`}},
		{"correct not a bool", "print('{\"correct\": 1}')\n", 0, []string{`"correct" is 1, want true or false`}},
		{"reward out of range", "print('{\"reward\": 5}')\n", 0, []string{`"reward" is 5, want a number in [0, 1]`}},
	}
	for _, f := range failures {
		writeScript(t, dir, "s.py", f.src)
		start := time.Now()
		s := commandScore(t, dir, []string{py, "s.py"}, f.timeout, "Lima")
		if s.Failure != failure.ScorerError || s.Reward != 0 || s.Correct {
			t.Errorf("%s: %+v, want a scorer_error without a verdict", f.name, s)
			continue
		}
		msg, _ := s.Details["scorer_error"].(string)
		for _, w := range f.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", f.name, msg, w)
			}
		}
		if f.timeout > 0 && time.Since(start) > 5*time.Second {
			t.Errorf("%s: took %v, the timeout is %vs", f.name, time.Since(start), f.timeout)
		}
	}
	// A command that does not exist fails the same way.
	if s := commandScore(t, dir, []string{filepath.Join(dir, "no-such-scorer")}, 0, "Lima"); s.Failure != failure.ScorerError {
		t.Errorf("missing command: %+v", s)
	}
}

// TestBYOBCommandHidesKeys: a scorer command inherits nel-run's
// environment except the variables holding the plan's API keys.
func TestBYOBCommandHidesKeys(t *testing.T) {
	py := testenv.LookPath(t, testenv.Python3)
	dir := t.TempDir()
	writeScript(t, dir, "env.py", `import json, os, sys
json.load(sys.stdin)
print(json.dumps({"correct": True, "key": os.environ.get("NEL_TEST_KEY", "<unset>"), "other": os.environ.get("NEL_TEST_OTHER", "<unset>")}))
`)
	t.Setenv("NEL_TEST_KEY", "sk-secret")
	t.Setenv("NEL_TEST_OTHER", "visible")
	b, err := BYOB("caps", &plan.BYOB{Dataset: "caps.jsonl", Prompt: "{country}", Target: "capital",
		Scorer: plan.BYOBScorer{Command: []string{py, "env.py"}}}, dir, []string{"NEL_TEST_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	it := &Item{Expected: "Lima", Messages: []Message{{Role: "user", Content: "Peru"}}, Meta: map[string]any{}}
	s := b.ScoreEnv(context.Background(), nil, it, "Lima")
	if s.Failure != failure.None || s.Details["key"] != "<unset>" || s.Details["other"] != "visible" {
		t.Errorf("the command saw key=%v other=%v (failure %q), want <unset> and visible", s.Details["key"], s.Details["other"], s.Failure)
	}
}
