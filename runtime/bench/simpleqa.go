package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/failure"
)

// simpleqaTopic reads 'topic' out of the metadata column, a Python dict
// literal ("{'topic': 'Science and technology', ...}").
var simpleqaTopic = regexp.MustCompile(`['"]topic['"]\s*:\s*['"]([^'"]*)['"]`)

func simpleqa() *Benchmark {
	const src = "hf://basicv8vc/SimpleQA?split=test"
	return &Benchmark{
		Name:     "simpleqa",
		Category: "Factuality",
		Source:   src,
		Scorer:   "needs_judge",
		Size:     4326,
		RowWise:  true,
		Key:      newRowKey(nil, "problem", "answer"),
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, src)
			if err != nil {
				return nil, fmt.Errorf("simpleqa: %w", err)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				p, err := need(r, i, "problem")
				if err != nil {
					return nil, fmt.Errorf("simpleqa: %w", err)
				}
				a, err := need(r, i, "answer")
				if err != nil {
					return nil, fmt.Errorf("simpleqa: %w", err)
				}
				topic := ""
				if v, _, ok := field(r.rec, "metadata"); ok {
					if m, ok := v.(map[string]any); ok {
						topic = text(m["topic"])
					} else if m := simpleqaTopic.FindStringSubmatch(text(v)); m != nil {
						topic = m[1]
					}
				}
				items = append(items, r.located(userItem(0, topic, p, a, nil,
					map[string]any{"problem": p, "answer": a})))
			}
			return finish(items, dss...), nil
		},
		// Without a judge SimpleQA cannot be scored: Score says so (the
		// runtime refuses to run it without a judge metric). Extracted is
		// response[:500] as NeMo's needs_judge.
		Score: func(it *Item, response string) Score {
			return Score{
				Method:     "needs_judge",
				Binary:     true,
				Extracted:  truncate(response, 500),
				NeedsJudge: true,
				Details:    map[string]any{"needs_judge": true},
			}
		},
		ScoreEnv: scoreSimpleQA,
		Respond: func(it *Item, correct bool, rng *rand.Rand) string {
			if correct {
				return "The answer is " + it.Expected + "."
			}
			// Half abstain (NOT_ATTEMPTED), half answer wrongly
			// (INCORRECT), so that the grader's three grades all occur.
			if rngOr(rng).IntN(2) == 0 {
				return "I don't have reliable information about that, but I would guess it is unknown."
			}
			return "I believe the answer is " + simpleqaWrong(it.Expected) + "."
		},
	}
}

// SimpleQA grades (simple-evals CHOICE_LETTERS / CHOICE_STRINGS).
const (
	SimpleQACorrect      = "CORRECT"
	SimpleQAIncorrect    = "INCORRECT"
	SimpleQANotAttempted = "NOT_ATTEMPTED"
)

var simpleqaGrades = map[string]string{"A": SimpleQACorrect, "B": SimpleQAIncorrect, "C": SimpleQANotAttempted}

// simpleqaGradeRE is simple-evals' re.search(r"(A|B|C)", response): the
// first capital A, B or C anywhere in the grader's answer.
var simpleqaGradeRE = regexp.MustCompile(`(A|B|C)`)

// SimpleQAGraderPrompt is the grader's prompt for one answer:
// GRADER_TEMPLATE.format(question=…, target=…, predicted_answer=…).
func SimpleQAGraderPrompt(question, target, predicted string) string {
	return strings.NewReplacer("{question}", question, "{target}", target, "{predicted_answer}", predicted).Replace(SimpleQAGraderTemplate)
}

// SimpleQAGrade reads the grader's answer as simple-evals does: the first
// A, B or C (ok false when there is none; simple-evals then defaults to
// NOT_ATTEMPTED, see scoreSimpleQA).
func SimpleQAGrade(raw string) (grade string, ok bool) {
	m := simpleqaGradeRE.FindString(raw)
	if m == "" {
		return "", false
	}
	return simpleqaGrades[m], true
}

// scoreSimpleQA grades a response with the official grader prompt, sent as
// the only (user) message to the benchmark's first judge metric; that
// metric's rubric and system prompt are not used (the grader template is
// the benchmark's methodology). The reward is 1 for CORRECT. The row's
// scores are the three grades (0/1) and correct_given_attempted as a ratio
// (num = correct, den = attempted = correct or incorrect), which the
// metrics turn into simpleqa:correct, simpleqa:incorrect,
// simpleqa:not_attempted, simpleqa:correct_given_attempted and
// simpleqa:f_score.
//
// One deviation from simple-evals: a grader answer without A, B or C is a
// judge_error (the sample is recorded with the raw answer in its
// trajectory, and the run goes on), not a silent NOT_ATTEMPTED: a broken
// judge must not read as a cautious model. Such rows carry no simpleqa:*
// scores, so those metrics are over the graded samples; the failure
// summary counts the others.
func scoreSimpleQA(ctx context.Context, env *Env, it *Item, response string) Score {
	s := Score{Method: "simpleqa_grader", Binary: true, NeedsJudge: true, Extracted: truncate(response, 500)}
	if env == nil || env.Judge == nil {
		s.Method, s.Details = "needs_judge", map[string]any{"needs_judge": true}
		return s
	}
	question := text(it.Content["problem"])
	if question == "" {
		question = it.Prompt
	}
	raw, err := env.Judge.Ask(ctx, []Message{{Role: "user", Content: SimpleQAGraderPrompt(question, it.Expected, response)}})
	if err != nil {
		s.Failure = failure.JudgeError
		s.Details = map[string]any{"judge_error": err.Error()}
		return s
	}
	grade, ok := SimpleQAGrade(raw)
	if !ok {
		s.Failure = failure.JudgeError
		s.Details = map[string]any{"judge_error": "the grader's answer has no A, B or C", "judge_raw": truncate(raw, 500)}
		return s
	}
	s.Correct = grade == SimpleQACorrect
	if s.Correct {
		s.Reward = 1
	}
	s.Details = map[string]any{"grade": grade}
	attempted := b2f(grade != SimpleQANotAttempted)
	s.Scores = map[string]float64{
		"simpleqa:correct":                     b2f(grade == SimpleQACorrect),
		"simpleqa:incorrect":                   b2f(grade == SimpleQAIncorrect),
		"simpleqa:not_attempted":               b2f(grade == SimpleQANotAttempted),
		"simpleqa:correct_given_attempted/num": b2f(grade == SimpleQACorrect),
		"simpleqa:correct_given_attempted/den": attempted,
	}
	return s
}

// simpleqaWrong is a wrong answer to a question whose gold answer is
// expected: one of a few fixed answers that does not contain it, nor is
// contained in it.
func simpleqaWrong(expected string) string {
	e := strings.ToLower(expected)
	for _, w := range []string{"Springfield", "1887", "Marie Curie", "the Blue Lagoon"} {
		lw := strings.ToLower(w)
		if !strings.Contains(e, lw) && !strings.Contains(lw, e) {
			return w
		}
	}
	return "none of the above"
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// truncate is Python's s[:n].
func truncate(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n])
}
