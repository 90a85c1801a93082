package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// ErrUnparseable is wrapped by Parse's error when the answer holds no score
// in any form it knows; an out-of-range score is another error.
var ErrUnparseable = errors.New("no score in the judge's answer")

// Grades maps letter grades to scores on a 1–5 scale: A is the best, F the
// worst, E (rarely used) between D and F. A letter answer is then
// normalised like a 1–5 score, whatever max_score says.
var Grades = map[string]float64{"A": 5, "B": 4, "C": 3, "D": 2, "E": 1.5, "F": 1}

// The forms Parse reads, in order. NeMo Evaluator's own three come first
// (§3.3: JSON "score", the `"score": x` regex, `x/y`); the rest are what
// other judges answer.
var (
	// fenceRE finds a ```json … ``` (or bare ```) block.
	fenceRE = regexp.MustCompile("(?s)```(?:json|JSON)?\\s*(\\{.*?\\})\\s*```")
	// objectRE is the first {...} without nested braces: a JSON verdict
	// inside prose.
	objectRE = regexp.MustCompile(`(?s)\{[^{}]*\}`)
	// scoreFieldRE is NeMo's `"score"\s*:\s*(\d+(?:\.\d+)?)`, signed here so
	// that "-1" is out of range rather than 1.
	scoreFieldRE = regexp.MustCompile(`"score"\s*:\s*"?(-?\d+(?:\.\d+)?)`)
	// ratioRE is NeMo's `\b(\d+)\s*/\s*\d+\b`, with decimals and the
	// denominator kept (a 7/10 is 0.7 whatever max_score is).
	ratioRE = regexp.MustCompile(`\b(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)\b`)
	// bracketRE is MT-bench's "[[7]]".
	bracketRE = regexp.MustCompile(`\[\[\s*(-?\d+(?:\.\d+)?)\s*\]\]`)
	// labelRE is "Score: 4", "Rating: 4.5", "Final score = 3", "**Score:** 4".
	// The last such line wins: judges restate their verdict at the end.
	labelRE = regexp.MustCompile(`(?i)\b(?:final\s+)?(?:score|rating)\s*\**\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)`)
	// gradeRE is "Grade: B" or "Grade: B+" (the sign is dropped).
	gradeRE = regexp.MustCompile(`(?i)\bgrade\s*\**\s*[:=]\s*\**\s*([A-F])[+-]?(?:[^A-Za-z]|$)`)
	// bareRE is an answer that is only a number or a letter grade.
	bareNumRE   = regexp.MustCompile(`^\s*\**(-?\d+(?:\.\d+)?)\**\s*\.?\s*$`)
	bareGradeRE = regexp.MustCompile(`^\s*\**([A-Fa-f])[+-]?\**\s*\.?\s*$`)
)

// Parse reads a judge's score out of its raw answer. It tries, in order:
// a JSON object with a "score" field (bare, in a ```json fence, or inside
// prose); a `"score": x` fragment; "x/y" (normalised by y); MT-bench's
// "[[x]]"; "Score: x" / "Rating: x" (the last one); "Grade: L" and a bare
// letter (Grades); a bare number. Numbers elsewhere in prose are never
// taken. score is on the judge's scale, normalized is
// min(score/maxScore, 1) as NeMo Evaluator (so on a 1–5 scale a 1 maps to
// 0.2, not 0), or score/y for "x/y"; how names the form that matched. A
// score below 0 or above its scale is an error, not clamped.
func Parse(raw string, maxScore float64) (score, normalized float64, how string, err error) {
	if maxScore <= 0 {
		maxScore = 5
	}
	in := func(s float64, how string) (float64, float64, string, error) {
		if math.IsNaN(s) || s < 0 || s > maxScore {
			return 0, 0, how, fmt.Errorf("judge score %v (%s) is outside 0..%v", s, how, maxScore)
		}
		return s, min(s/maxScore, 1), how, nil
	}
	// JSON: the whole answer, a fenced block, then the first flat object.
	cands := []string{strings.TrimSpace(raw)}
	for _, m := range fenceRE.FindAllStringSubmatch(raw, -1) {
		cands = append(cands, m[1])
	}
	cands = append(cands, objectRE.FindAllString(raw, -1)...)
	for _, c := range cands {
		if s, ok := jsonScore(c); ok {
			return in(s, "json")
		}
	}
	if m := scoreFieldRE.FindStringSubmatch(raw); m != nil {
		s, _ := strconv.ParseFloat(m[1], 64)
		return in(s, "score_field")
	}
	if m := bracketRE.FindStringSubmatch(raw); m != nil {
		s, _ := strconv.ParseFloat(m[1], 64)
		return in(s, "brackets")
	}
	if ms := labelRE.FindAllStringSubmatch(raw, -1); ms != nil {
		m := ms[len(ms)-1]
		s, _ := strconv.ParseFloat(m[1], 64)
		// "Score: 4/5": the denominator gives the scale.
		if r := ratioRE.FindStringSubmatch(raw[strings.LastIndex(raw, m[0]):]); r != nil && strings.HasPrefix(r[0], m[1]) {
			return ratio(r)
		}
		return in(s, "label")
	}
	if m := ratioRE.FindStringSubmatch(raw); m != nil {
		return ratio(m)
	}
	if m := gradeRE.FindStringSubmatch(raw); m != nil {
		return grade(m[1])
	}
	if m := bareGradeRE.FindStringSubmatch(raw); m != nil {
		return grade(m[1])
	}
	if m := bareNumRE.FindStringSubmatch(raw); m != nil {
		s, _ := strconv.ParseFloat(m[1], 64)
		return in(s, "number")
	}
	return 0, 0, "", fmt.Errorf("%w: %q", ErrUnparseable, truncate(raw, 200))
}

// jsonScore reads "score" from a JSON object: a number, or a string
// holding one.
func jsonScore(s string) (float64, bool) {
	if !strings.HasPrefix(s, "{") {
		return 0, false
	}
	var v map[string]any
	if json.Unmarshal([]byte(s), &v) != nil {
		return 0, false
	}
	var x any
	for k, val := range v {
		if strings.EqualFold(k, "score") {
			x = val
		}
	}
	switch x := x.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func ratio(m []string) (float64, float64, string, error) {
	s, _ := strconv.ParseFloat(m[1], 64)
	d, _ := strconv.ParseFloat(m[2], 64)
	if d <= 0 || s > d {
		return 0, 0, "ratio", fmt.Errorf("judge score %s/%s is outside 0..%s", m[1], m[2], m[2])
	}
	return s, s / d, "ratio", nil
}

func grade(l string) (float64, float64, string, error) {
	s := Grades[strings.ToUpper(l)]
	return s, s / 5, "grade", nil
}

// truncate is s cut to at most n runes.
func truncate(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n]) + "…"
}
