package judge

import (
	"errors"
	"math"
	"testing"
)

// TestParse reads answers in the shapes real judges give (GPT-4-class
// judges, MT-bench, Prometheus-style graders, small open models that wrap
// or break their JSON). Expected values follow from the rubric's scale:
// normalized = score/max_score (1 on a 1–5 scale is 0.2), x/y = x/y.
func TestParse(t *testing.T) {
	tests := []struct {
		raw     string
		max     float64
		score   float64
		norm    float64
		how     string
		bad     bool // an error
		noscore bool // the error is ErrUnparseable
	}{
		{raw: `{"score": 4, "reasoning": "Mostly correct, misses one detail."}`, max: 5, score: 4, norm: 0.8, how: "json"},
		{raw: "```json\n{\"score\": 5, \"reasoning\": \"Fully correct.\"}\n```", max: 5, score: 5, norm: 1, how: "json"},
		{raw: "Here is my evaluation:\n```json\n{\n  \"score\": 3,\n  \"reasoning\": \"Partially correct.\"\n}\n```\nHope this helps.", max: 5, score: 3, norm: 0.6, how: "json"},
		{raw: `The response is reasonable. {"score": 2, "reasoning": "It has factual errors."} That is my verdict.`, max: 5, score: 2, norm: 0.4, how: "json"},
		{raw: `{"score": "4", "reasoning": "ok"}`, max: 5, score: 4, norm: 0.8, how: "json"},
		{raw: `{"Score": 4.5}`, max: 5, score: 4.5, norm: 0.9, how: "json"},
		{raw: `{"score": 0}`, max: 5, score: 0, norm: 0, how: "json"},
		{raw: `{"score": 4, "reasoning": "the answer said "yes" which is right"}`, max: 5, score: 4, norm: 0.8, how: "score_field"},
		{raw: `{"score": 3, "reasoning": "The response was cut off befo`, max: 5, score: 3, norm: 0.6, how: "score_field"},
		{raw: "Score: 4", max: 5, score: 4, norm: 0.8, how: "label"},
		{raw: "**Score:** 3", max: 5, score: 3, norm: 0.6, how: "label"},
		{raw: "score: 3.5", max: 5, score: 3.5, norm: 0.7, how: "label"},
		{raw: "Rating: 1", max: 5, score: 1, norm: 0.2, how: "label"},
		{raw: "The answer is 1.73 m, matching the 2019 reference.\nScore: 5", max: 5, score: 5, norm: 1, how: "label"},
		{raw: "Score: 4\nOn reflection the second claim is wrong.\nFinal score: 3", max: 5, score: 3, norm: 0.6, how: "label"},
		{raw: "Score: 10", max: 10, score: 10, norm: 1, how: "label"},
		{raw: "Rating: 2/5", max: 5, score: 2, norm: 0.4, how: "ratio"},
		{raw: "4/5", max: 5, score: 4, norm: 0.8, how: "ratio"},
		{raw: "I would give this response a 7/10.", max: 5, score: 7, norm: 0.7, how: "ratio"},
		{raw: "The assistant's answer is accurate and helpful. Rating: [[8]]", max: 10, score: 8, norm: 0.8, how: "brackets"},
		{raw: "[[7]]", max: 10, score: 7, norm: 0.7, how: "brackets"},
		{raw: "Grade: B", max: 5, score: 4, norm: 0.8, how: "grade"},
		{raw: "Grade: A+ — excellent.", max: 5, score: 5, norm: 1, how: "grade"},
		{raw: "B", max: 5, score: 4, norm: 0.8, how: "grade"},
		{raw: "F.", max: 5, score: 1, norm: 0.2, how: "grade"},
		{raw: "5", max: 5, score: 5, norm: 1, how: "number"},
		// Numbers in prose are not scores.
		{raw: "The model answered 42, which matches the reference from 2019.", max: 5, bad: true, noscore: true},
		{raw: "In 15 of 20 studies the effect held; the response says so.", max: 5, bad: true, noscore: true},
		{raw: "I cannot evaluate this response.", max: 5, bad: true, noscore: true},
		{raw: "", max: 5, bad: true, noscore: true},
		{raw: `{"reasoning": "fine, but I forgot the score"}`, max: 5, bad: true, noscore: true},
		// Out of range is an error, not clamped.
		{raw: `{"score": 7, "reasoning": "great"}`, max: 5, bad: true},
		{raw: "Score: -1", max: 5, bad: true},
		{raw: "6/5", max: 5, bad: true},
		{raw: "[[11]]", max: 10, bad: true},
	}
	for _, tc := range tests {
		s, n, how, err := Parse(tc.raw, tc.max)
		if tc.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %v, %v, %s; want an error", tc.raw, s, n, how)
			} else if errors.Is(err, ErrUnparseable) != tc.noscore {
				t.Errorf("Parse(%q): error %v; unparseable = %v, want %v", tc.raw, err, errors.Is(err, ErrUnparseable), tc.noscore)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.raw, err)
			continue
		}
		if s != tc.score || math.Abs(n-tc.norm) > 1e-12 || how != tc.how {
			t.Errorf("Parse(%q) = %v, %v, %s; want %v, %v, %s", tc.raw, s, n, how, tc.score, tc.norm, tc.how)
		}
	}
}
