package score

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// The Python patterns NeMo Evaluator uses, verbatim.
const (
	// MultichoicePattern is multichoice_regex's default (A–D).
	MultichoicePattern = `(?i)Answer\s*:\s*([A-D])`
	// AnswerLinePattern is answer_line's default.
	AnswerLinePattern = `(?i)Answer\s*:\s*([^\n]+)`
	// NumberPattern is numeric_match's number.
	NumberPattern = `-?\d+\.?\d*`
)

var (
	multichoiceABCD   = MustCompilePy(MultichoicePattern)
	answerLineDefault = MustCompilePy(AnswerLinePattern)
	numberRe          = MustCompilePy(NumberPattern)
	// mcqLetterRe is extract_mcq_letter's pattern. Its \b cannot go through
	// CompilePy; Go's ASCII \b is used on a masked copy of the text in which
	// every non-ASCII word character is replaced by '0', so that the
	// boundary falls where Python's Unicode \b puts it.
	mcqLetterRe = regexp.MustCompile(`(?i)(?:\\boxed\{([A-Za-z])\}` +
		`|(?:answer|ans)[` + pySpaceSet + `:]*([A-Za-z])\b` +
		`|\(([A-Za-z])\)` +
		`|^([A-Za-z])[\.\)` + pySpaceSet + `]*$)`)
)

// truncRunes is Python's s[:n] on a str.
func truncRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// ExactMatch: Normalize(response) == Normalize(expected). Extracted is the
// stripped response cut to 200 characters (BYOB's default).
func ExactMatch(response, expected string) Result {
	return Result{
		Correct:   Normalize(response) == Normalize(expected),
		Extracted: truncRunes(PyStrip(response), 200),
	}
}

// FuzzyMatch is correct when, for some target t, Normalize(t) is a
// substring of Normalize(response) or the other way round. As in Python an
// empty (normalised) response is a substring of every target and so counts
// as correct whenever there is a target.
func FuzzyMatch(response string, targets []string) Result {
	pred := Normalize(response)
	correct := false
	for _, t := range targets {
		nt := Normalize(t)
		if strings.Contains(pred, nt) || strings.Contains(nt, pred) {
			correct = true
			break
		}
	}
	return Result{Correct: correct, Extracted: truncRunes(PyStrip(response), 200)}
}

// MultichoiceRegex takes group 1 of the FIRST match of pattern (re.search),
// upper-cased, and compares it with expected upper-cased. No match is wrong
// and extracts "".
func MultichoiceRegex(response, expected string, pattern *regexp.Regexp) Result {
	m := pattern.FindStringSubmatch(response)
	if len(m) < 2 {
		return Result{}
	}
	ex := strings.ToUpper(m[1])
	return Result{Correct: ex == strings.ToUpper(expected), Extracted: ex}
}

// AnswerLine takes group 1 of the first match of pattern, stripped, or, with
// no match, the last line of the stripped response, and compares it with
// expected under NormalizeMath.
func AnswerLine(response, expected string, pattern *regexp.Regexp) Result {
	return AnswerLineWith(response, expected, func(s string) (string, bool) {
		if m := pattern.FindStringSubmatch(s); len(m) >= 2 {
			return m[1], true
		}
		return "", false
	})
}

// AnswerLineWith is AnswerLine with the pattern's group 1 found by find
// (a hand-written matcher of a fixed pattern, see fold.go).
func AnswerLineWith(response, expected string, find func(string) (string, bool)) Result {
	var ex string
	if g, ok := find(response); ok {
		ex = PyStrip(g)
	} else {
		s := PyStrip(response)
		ex = s[strings.LastIndexByte(s, '\n')+1:]
	}
	return Result{Correct: NormalizeMath(ex) == NormalizeMath(expected), Extracted: ex}
}

// stripNumber is Python's s.rstrip("0").rstrip(".").
func stripNumber(s string) string {
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// NumericMatch deletes commas from the response, takes the last number
// (NumberPattern, Unicode digits as Python's \d), strips trailing zeros and
// then dots, and compares the string with expected stripped the same way
// (expected keeps its commas, as in Python).
//
// This is the 0.3/0.4 behaviour, kept on purpose: the string comparison
// after rstrip("0") makes 10 and 100 (and 1) equal and treats "0" as "", so
// a target of 0 is matched by a response with no number at all. Later
// upstream versions compare as floats.
func NumericMatch(response, expected string) Result {
	nums := numberRe.FindAllString(strings.ReplaceAll(response, ",", ""), -1)
	ex := ""
	if len(nums) > 0 {
		ex = stripNumber(nums[len(nums)-1])
	}
	return Result{Correct: ex == stripNumber(PyStrip(expected)), Extracted: ex}
}

// maskWord maps each rune of s to one ASCII rune wherever Go's ASCII \b
// and Python's Unicode \b disagree: a non-ASCII word character becomes '0'
// (a word character that no pattern alternative can use), except ſ and K,
// which case-fold to ASCII letters and so become 's' and 'k'. It also
// returns, for every byte offset of the result that starts a rune, the
// byte offset of that rune in s.
func maskWord(s string) (string, []int) {
	var b strings.Builder
	offs := make([]int, 0, len(s)+1)
	for i, r := range s {
		switch {
		case r == 'ſ':
			r = 's'
		case r == 'K':
			r = 'k'
		case r >= 0x80 && isPyWord(r):
			r = '0'
		}
		for n := utf8.RuneLen(r); n > 0; n-- {
			offs = append(offs, i)
		}
		b.WriteRune(r)
	}
	offs = append(offs, len(s))
	return b.String(), offs
}

// ExtractMCQLetter is extract_mcq_letter: on the stripped text, the LAST
// match of \boxed{X} | (answer|ans)[\s:]*X\b | (X) | ^X[.)\s]*$ (ignoring
// case) gives the letter, upper-cased; with no match the stripped text is
// returned as is.
func ExtractMCQLetter(text string) string {
	text = PyStrip(text)
	masked, offs := maskWord(text)
	ms := mcqLetterRe.FindAllStringSubmatchIndex(masked, -1)
	if len(ms) == 0 {
		return text
	}
	last := ms[len(ms)-1]
	for g := 2; g+1 < len(last); g += 2 {
		if last[g] >= 0 {
			return strings.ToUpper(text[offs[last[g]]:offs[last[g+1]]])
		}
	}
	return text
}

// MCQExtract is correct when ExtractMCQLetter(response) equals expected,
// stripped and upper-cased.
func MCQExtract(response, expected string) Result {
	ex := ExtractMCQLetter(response)
	return Result{Correct: ex == strings.ToUpper(PyStrip(expected)), Extracted: ex}
}

// Caveat says, for a scorer that reproduces a NeMo Evaluator quirk on
// purpose, what the quirk does to its score, so that a report can say it
// beside the number; "" for the others.
func Caveat(name string) string {
	switch name {
	case "numeric_match":
		return `NeMo Evaluator's numeric_match, kept as it is so that its numbers match NeMo's: ` +
			`it compares text after stripping trailing zeros and then a trailing period, so an answer ending "40." keeps its zero ("40") ` +
			`while the target 40 loses it ("4") and is marked wrong; it reads below a scorer that compares the numbers ` +
			`wherever answers end a sentence with a number ending in 0`
	}
	return ""
}
