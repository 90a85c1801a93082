package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/score"
)

// scriptJudge answers every Ask with answer (or err) and keeps the messages.
type scriptJudge struct {
	answer string
	err    error
	msgs   [][]Message
}

func (j *scriptJudge) Ask(_ context.Context, msgs []Message) (string, error) {
	j.msgs = append(j.msgs, msgs)
	return j.answer, j.err
}

// TestSimpleQAGraderTemplate pins the grader prompt to simple-evals'
// GRADER_TEMPLATE (openai/simple-evals simpleqa_eval.py, after .strip()):
// its first and last lines, its length and its digest.
func TestSimpleQAGraderTemplate(t *testing.T) {
	lines := strings.Split(SimpleQAGraderTemplate, "\n")
	if first := `Your job is to look at a question, a gold target, and a predicted answer, and then assign a grade of either ["CORRECT", "INCORRECT", "NOT_ATTEMPTED"].`; lines[0] != first {
		t.Errorf("first line %q, want %q", lines[0], first)
	}
	if last := `Just return the letters "A", "B", or "C", with no text around it.`; lines[len(lines)-1] != last {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], last)
	}
	sum := sha256.Sum256([]byte(SimpleQAGraderTemplate))
	if got := hex.EncodeToString(sum[:]); len(SimpleQAGraderTemplate) != 5964 || got != "491d0bd19bed57095b0ec230e9b6005a81e86cfbaf76fb604b68c0d6180bc3e7" {
		t.Errorf("template: %d bytes, sha256 %s; it must stay byte-identical to simple-evals'", len(SimpleQAGraderTemplate), got)
	}
	p := SimpleQAGraderPrompt("Who?", "Ada Lovelace", "It was {target}, Ada.")
	if !strings.Contains(p, "```\nQuestion: Who?\nGold target: Ada Lovelace\nPredicted answer: It was {target}, Ada.\n```") {
		t.Errorf("filled prompt's example block is wrong:\n%s", p[len(p)-400:])
	}
}

// TestSimpleQAGrade follows re.search(r"(A|B|C)", response): the first
// capital A, B or C anywhere, quirks included.
func TestSimpleQAGrade(t *testing.T) {
	tests := []struct {
		raw, grade string
		ok         bool
	}{
		{"A", SimpleQACorrect, true},
		{"B", SimpleQAIncorrect, true},
		{"C", SimpleQANotAttempted, true},
		{" B\n", SimpleQAIncorrect, true},
		{"the grade is B", SimpleQAIncorrect, true},
		{"CORRECT", SimpleQANotAttempted, true}, // the C of CORRECT
		{"Answer: B", SimpleQACorrect, true},    // the A of Answer
		{"lorem ipsum", "", false},
		{"", "", false},
		{"a", "", false}, // lower case does not count
	}
	for _, tc := range tests {
		g, ok := SimpleQAGrade(tc.raw)
		if g != tc.grade || ok != tc.ok {
			t.Errorf("SimpleQAGrade(%q) = %q, %v; want %q, %v", tc.raw, g, ok, tc.grade, tc.ok)
		}
	}
}

func TestSimpleQAScoreEnv(t *testing.T) {
	b := mustLookup(t, "simpleqa")
	it := &Item{Prompt: "Who wrote the first program?", Expected: "Ada Lovelace",
		Messages: []Message{{Role: "user", Content: "Who wrote the first program?"}},
		Content:  map[string]any{"problem": "Who wrote the first program?", "answer": "Ada Lovelace"}}
	type want struct {
		reward                float64
		correct, inc, na, den float64
	}
	for answer, w := range map[string]want{
		"A": {1, 1, 0, 0, 1},
		"B": {0, 0, 1, 0, 1},
		"C": {0, 0, 0, 1, 0},
	} {
		j := &scriptJudge{answer: answer}
		s := b.ScoreEnv(context.Background(), &Env{Judge: j, Judges: map[string]Judge{"g": j}}, it, "It was Ada Lovelace.")
		if s.Failure != failure.None || s.Reward != w.reward || !s.Binary || s.Correct != (w.reward == 1) {
			t.Errorf("grade %s: %+v", answer, s)
		}
		got := s.Scores
		if got["simpleqa:correct"] != w.correct || got["simpleqa:incorrect"] != w.inc || got["simpleqa:not_attempted"] != w.na ||
			got["simpleqa:correct_given_attempted/num"] != w.correct || got["simpleqa:correct_given_attempted/den"] != w.den {
			t.Errorf("grade %s: scores %v", answer, got)
		}
		if len(j.msgs) != 1 || len(j.msgs[0]) != 1 || j.msgs[0][0].Role != "user" ||
			j.msgs[0][0].Content != SimpleQAGraderPrompt(it.Prompt, "Ada Lovelace", "It was Ada Lovelace.") {
			t.Errorf("grade %s: the grader got %+v, want the one user message of the official template", answer, j.msgs)
		}
	}
	// Nonsense and errors are judge failures with no grades.
	for _, j := range []*scriptJudge{{answer: "lorem ipsum"}, {err: errors.New("judge: timeout")}} {
		s := b.ScoreEnv(context.Background(), &Env{Judge: j}, it, "It was Ada Lovelace.")
		if s.Failure != failure.JudgeError || s.Reward != 0 || len(s.Scores) != 0 {
			t.Errorf("judge %+v: %+v, want judge_error without scores", j, s)
		}
	}
	if s := b.ScoreEnv(context.Background(), &Env{}, it, "x"); !s.NeedsJudge || s.Reward != 0 {
		t.Errorf("no judge: %+v", s)
	}
}

// TestSimpleQARespond: Respond's wrong answers never contain the gold
// target, and they both abstain and answer wrongly.
func TestSimpleQARespond(t *testing.T) {
	dir := sharedDatasets(t)
	b := mustLookup(t, "simpleqa")
	s := loadSet(t, newLoader(dir), "simpleqa", map[string]any{"data_path": "simpleqa/simple_qa_test_set.csv"})
	abstain, wrong := 0, 0
	rng := rand.New(rand.NewPCG(1, 1))
	words := func(s string) string { return " " + score.Normalize(s) + " " }
	for i := range s.Items {
		it := &s.Items[i]
		r := b.Respond(it, false, rng)
		if strings.Contains(words(r), words(it.Expected)) {
			t.Fatalf("item %d: wrong response %q contains the gold %q", i, r, it.Expected)
		}
		if strings.Contains(r, "don't have reliable") {
			abstain++
		} else {
			wrong++
		}
	}
	if abstain == 0 || wrong == 0 {
		t.Errorf("wrong responses: %d abstain, %d answer wrongly; want both", abstain, wrong)
	}
}
