package sim

import (
	"encoding/json"
	"math/rand/v2"
	"strings"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/judge"
	"github.com/nel-eval/nel/runtime/score"
)

// judgeNonsenseKind is Faults.JudgeNonsense's name in ParseFaults.
const judgeNonsenseKind = "judge_nonsense"

// NonsenseAnswer is what a judge request gets under the judge_nonsense
// fault: no score, no letter grade (no capital A, B or C), no class.
const NonsenseAnswer = "lorem ipsum dolor sit amet, the weather is lovely today"

// judge answers a judge request like a competent judge, and says whether
// text (the request's last user message) is one. It recognises the three
// prompts nel sends: SimpleQA's grader (the predicted answer contains the
// gold target → "A", it abstains → "C", else "B"), XSTest's classifier
// (the string-match refusal detector decides), and the default rubric
// ({"score": 5} when the response contains the reference answer, or when
// there is none; else 1).
func (s *Server) judge(text string) (string, bool) {
	var answer string
	switch {
	case strings.HasPrefix(text, simpleqaFirstLine):
		answer = gradeSimpleQA(text)
	case strings.HasPrefix(text, xstestFirstLine):
		answer = classifyXSTest(text)
	case strings.HasPrefix(text, rubricFirstLine):
		answer = scoreRubric(text)
	default:
		return "", false
	}
	s.judged.Add(1)
	if p := s.cfg.Faults.JudgeNonsense; p > 0 && rand.Float64() < p {
		s.nonsense.Add(1)
		return NonsenseAnswer, true
	}
	return answer, true
}

var (
	simpleqaFirstLine = firstLine(bench.SimpleQAGraderTemplate)
	xstestFirstLine   = firstLine(bench.XSTestClassifierPrompt)
	rubricFirstLine   = firstLine(judge.DefaultRubric)
)

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// between is the text after the last before and up to the next after.
func between(s, before, after string) string {
	i := strings.LastIndex(s, before)
	if i < 0 {
		return ""
	}
	s = s[i+len(before):]
	if j := strings.Index(s, after); j >= 0 {
		s = s[:j]
	}
	return s
}

// abstains says a SimpleQA answer declines to answer (NOT_ATTEMPTED).
func abstains(a string) bool {
	a = strings.ToLower(a)
	for _, p := range []string{"don't know", "do not know", "don't have reliable", "not sure", "cannot answer", "i cannot", "no information"} {
		if strings.Contains(a, p) {
			return true
		}
	}
	return false
}

func gradeSimpleQA(text string) string {
	gold := between(text, "\nGold target: ", "\nPredicted answer: ")
	pred := between(text, "\nPredicted answer: ", "\n```\n\nGrade the predicted answer")
	switch {
	case containsWords(pred, gold):
		return "A"
	case abstains(pred):
		return "C"
	}
	return "B"
}

func classifyXSTest(text string) string {
	resp := between(text, `RESPONSE: "`, "\"\n\n        CLASS:")
	if bench.IsRefusal(resp) {
		return bench.XSTestFullRefusal
	}
	return bench.XSTestFullCompliance
}

func scoreRubric(text string) string {
	resp := between(text, "\nResponse:\n", "\nScoring rubric:")
	ref := ""
	if i := strings.LastIndex(resp, "\nReference answer:\n"); i >= 0 {
		resp, ref = resp[:i], strings.TrimSpace(resp[i+len("\nReference answer:\n"):])
	}
	v := map[string]any{"score": 5, "reasoning": "The response matches the reference answer."}
	if ref == "" {
		v["reasoning"] = "There is no reference answer; the response addresses the instruction."
	} else if !containsWords(resp, ref) {
		v = map[string]any{"score": 1, "reasoning": "The response does not contain the reference answer."}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// containsWords says the normalised text contains the normalised want as
// whole words ("Io" is not in "information").
func containsWords(text, want string) bool {
	w := score.Normalize(want)
	return w != "" && strings.Contains(" "+score.Normalize(text)+" ", " "+w+" ")
}
