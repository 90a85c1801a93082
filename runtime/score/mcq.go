package score

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Multiple-choice answer extraction.
//
// ExtractChoice is the robust extractor (scorer "mcq_robust"): built for
// reasoning models, which discuss several options before they commit to
// one, write markdown and LaTeX, and use "A" and "I" as words. NeMo's
// multichoice_regex takes the FIRST "Answer: X" and so scores a model that
// writes "Answer: B? No — re-checking … Answer: D" by its discarded guess;
// ExtractChoice takes the LAST committed answer.
//
// ExtractMMLUPro is the official MMLU-Pro extraction (TIGER-Lab's
// evaluate_from_local.py / evaluate_from_api.py), kept exact so the
// official numbers can be reproduced.

// DefaultLetters are the letters the registry's mcq_robust accepts when an
// item does not say how many options it has (MMLU-Pro's ten).
const DefaultLetters = "ABCDEFGHIJ"

// The ways ExtractChoice can find an answer, from the strongest signal to
// the weakest. Within a tier the match that starts last wins; a tier is
// consulted only when every stronger tier found nothing valid.
//
//  1. committed (how "statement", "boxed" or "line"): an explicit answer
//     statement ("Answer: B", "the answer is (B)", "The correct option is
//     **B**", "Final answer: $\boxed{B}$", "**Final Answer**\n\nB",
//     "<answer>B</answer>", "Option B is correct"), a \boxed{B} /
//     \boxed{\text{B}} anywhere, or a last non-empty line that is only the
//     letter ("B", "**B**", "(B)", "B."), which covers a response that is
//     just the letter.
//  2. "line": an earlier line that is only the letter.
//  3. "emphasis": **B**, **(B)**, **Option B**.
//  4. "paren": (B) not glued to a word (P(A) is a probability, not an answer).
//  5. "label": B) / B. / B: at the start of a line, after any bullet.
//  6. "math": $B$, $\text{B}$ — last, because in mathematical answers $A$
//     is far more often a variable than a choice. (Committed forms such as
//     "Answer: $B$" or a last line "$B$" are tier 1.)
//
// Everywhere: the letter must be one of letters and upper case (a lower
// case "a" is an article); it must not be inside a word ("Because",
// "I'm", "A-series", "e.g."); it must not be followed by "?" (a question is
// not a commitment). In an answer statement a bare A or I followed by a
// lower-case word is prose ("Answer: I think it is B", "the answer is A
// nice…") unless that word is a connective ("the answer is A because").
// "was" is not a statement verb: "I first thought the answer was A" is a
// retraction.
const (
	HowStatement = "statement"
	HowBoxed     = "boxed"
	HowLine      = "line"
	HowEmphasis  = "emphasis"
	HowParen     = "paren"
	HowLabel     = "label"
	HowMath      = "math"
)

const (
	// mcqDecor is what may wrap a letter: spaces, markdown emphasis, math
	// delimiters, brackets and LaTeX text/box commands.
	mcqDecor = `(?:[\s*_$(\[{]|\\[(\[]|\\(?:boxed|text|textbf|mathrm|mathbf|mathit)\s*\{)*`
	// mcqOptionWord lets "option B" / "choice (B)" stand for the letter.
	mcqOptionWord = `(?:(?i:option|choice|letter)\s*)?`
)

var (
	// An answer statement: a head naming the answer, a verb or colon (or a
	// line break after a heading), optional adverb, the letter.
	mcqStatementRe = regexp.MustCompile(`(?i:\b(?:(?:final|correct|right|best)\s+)?(?:answer|(?:correct|right|best)\s+(?:option|choice|letter)|closest(?:\s+(?:answer|option|choice|match|one))?)(?:\s+(?:choice|option|letter))?)` +
		`(?:[ \t*_]*(?i:is|would\s+be|should\s+be|must\s+be|will\s+be|:|=)[\s*_:]*|[ \t*_#:]*\n[\s*_#>:]*)` +
		`(?i:(?:therefore|thus|hence|clearly|probably|likely|most\s+likely|definitely|indeed|so)[\s,]+)?` +
		mcqOptionWord + mcqDecor + `([A-Z])`)
	// "Option B is correct", "(C) is the right answer".
	// The letter must be marked as an option (a word, brackets, emphasis)
	// or open a sentence: "Vitamin C is the best source" is not an answer.
	mcqReverseRe = regexp.MustCompile(`(?:(?i:option|choice)\s+[(*$]*|[(*$]+|(?m:^)[ \t>*_-]*|[.!;:]\s+)([A-Z])[)*$]*\s+(?i:is|must\s+be|would\s+be)\s+(?i:the\s+)?(?i:correct|right|best)\b`)
	mcqTagRe     = regexp.MustCompile(`(?i:<answer>)\s*` + mcqOptionWord + mcqDecor + `([A-Z])`)
	mcqBoxedRe   = regexp.MustCompile(`\\boxed\s*\{[\s(]*(?:\\(?:text|textbf|mathrm|mathbf|mathit)\s*\{[\s(]*)?` + mcqOptionWord + `([A-Z])[\s).:]*\}`)
	// A line holding only the letter and its decoration.
	mcqLineRe   = regexp.MustCompile(`(?m)^[ \t>#*_-]*` + mcqDecor + mcqOptionWord + `([A-Z])[ \t*_$)\]}.:]*$`)
	mcqBoldRe   = regexp.MustCompile(`\*\*[ \t]*` + mcqOptionWord + `\(?([A-Z])\)?[.:)]?[ \t]*\*\*`)
	mcqDollarRe = regexp.MustCompile(`\$[ \t]*(?:\\(?:text|textbf|mathrm|mathbf)\s*\{[ \t]*)?\(?([A-Z])\)?[ \t]*\}?[ \t]*\$`)
	mcqParenRe  = regexp.MustCompile(`\(([A-Z])\)`)
	mcqLabelRe  = regexp.MustCompile(`(?m)^[ \t>#*_-]*\(?([A-Z])[.):]`)
)

// connectives may follow a bare A or I in an answer statement without
// making it prose: "the answer is A because …".
var connectives = map[string]bool{
	"because": true, "since": true, "as": true, "is": true, "and": true, "or": true,
	"but": true, "so": true, "with": true, "given": true, "here": true, "then": true,
	"for": true, "which": true, "fits": true, "matches": true, "corresponds": true,
	"seems": true, "appears": true, "looks": true, "remains": true, "in": true,
}

// mcqCandidate is one tier's pattern.
type mcqCandidate struct {
	re  *regexp.Regexp
	how string
	// statement says the letter follows an answer statement, where a bare
	// A or I before a lower-case word is prose.
	statement bool
	// free says the whole match must not be glued to a preceding word:
	// P(A), f(B).
	free bool
}

var mcqTiers = [][]mcqCandidate{
	{{re: mcqStatementRe, how: HowStatement, statement: true}, {re: mcqReverseRe, how: HowStatement},
		{re: mcqTagRe, how: HowStatement}, {re: mcqBoxedRe, how: HowBoxed}},
	{{re: mcqLineRe, how: HowLine}},
	{{re: mcqBoldRe, how: HowEmphasis}},
	{{re: mcqParenRe, how: HowParen, free: true}},
	{{re: mcqLabelRe, how: HowLabel}},
	{{re: mcqDollarRe, how: HowMath}},
}

// ExtractChoice returns the last committed answer letter of response among
// letters (upper case, e.g. "ABCD"; "" means DefaultLetters) and how it was
// found (a How* constant), or "", "" when the response commits to none.
// The tiers and rules are documented above.
func ExtractChoice(response, letters string) (letter, how string) {
	if letters == "" {
		letters = DefaultLetters
	}
	text := strings.ReplaceAll(response, "\r\n", "\n")
	best, bestAt, bestHow := "", -1, ""
	consider := func(c mcqCandidate, m []int) {
		l := text[m[2]:m[3]]
		if m[2] <= bestAt || !strings.Contains(letters, l) || !letterStands(text, m[2], m[3], c.statement) {
			return
		}
		if r, _ := utf8.DecodeLastRuneInString(text[:m[0]]); c.free && m[0] > 0 && isWordRune(r) {
			return
		}
		best, bestAt, bestHow = l, m[2], c.how
	}
	// A last non-empty line that is only the letter is a commitment.
	trimmed := strings.TrimRightFunc(text, unicode.IsSpace)
	off := strings.LastIndexByte(trimmed, '\n') + 1
	if m := mcqLineRe.FindStringSubmatchIndex(trimmed[off:]); m != nil {
		for k := range m {
			m[k] += off
		}
		consider(mcqCandidate{re: mcqLineRe, how: HowLine}, m)
	}
	for _, tier := range mcqTiers {
		for _, c := range tier {
			for _, m := range c.re.FindAllStringSubmatchIndex(text, -1) {
				consider(c, m)
			}
		}
		if best != "" {
			return best, bestHow
		}
	}
	return "", ""
}

// letterStands reports whether the letter text[i:j] stands alone: not part
// of a word, not asked about, and, after an answer statement, not the
// article A or the pronoun I starting a clause.
func letterStands(text string, i, j int, statement bool) bool {
	if r, _ := utf8.DecodeLastRuneInString(text[:i]); i > 0 && isWordRune(r) {
		return false
	}
	rest := text[j:]
	r, n := utf8.DecodeRuneInString(rest)
	switch {
	case rest == "":
		return true
	case isWordRune(r):
		return false
	case r == '\'' || r == '’' || r == '-' || r == '.':
		// I'm, A's, A-series, e.g. — but "B." at the end of a sentence.
		if r2, _ := utf8.DecodeRuneInString(rest[n:]); isWordRune(r2) {
			return false
		}
	}
	// "(B)?" or "B?" is a question, not an answer.
	if t := strings.TrimLeft(rest, ")]}*_$ \t"); strings.HasPrefix(t, "?") {
		return false
	}
	if statement && (text[i] == 'A' || text[i] == 'I') {
		t := strings.TrimLeft(rest, " \t")
		if len(t) < len(rest) && t != "" {
			w := t
			if k := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsLetter(r) }); k >= 0 {
				w = t[:k]
			}
			if w != "" && unicode.IsLower([]rune(w)[0]) && !connectives[w] {
				return false
			}
		}
	}
	return true
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// MCQRobust is correct when ExtractChoice(response, letters) equals
// expected, stripped and upper-cased.
func MCQRobust(response, expected, letters string) Result {
	ex, _ := ExtractChoice(response, letters)
	return Result{Correct: ex != "" && ex == strings.ToUpper(PyStrip(expected)), Extracted: ex}
}

// The official MMLU-Pro extraction, in order (evaluate_from_local.py and
// evaluate_from_api.py, identical in both):
//
//	extract_answer: re.search(r"answer is \(?([A-J])\)?", text)
//	extract_again:  re.search(r".*[aA]nswer:\s*([A-J])", text)
//	extract_final:  re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
//
// The last is the last standalone capital A–J anywhere in the text; Go has
// no look-ahead, so it is the last of all \b[A-J]\b matches (two such
// letters cannot overlap), found on the maskWord copy so that \b is
// Python's Unicode boundary.
var (
	mmluProAnswerIs = regexp.MustCompile(`answer is \(?([A-J])\)?`)
	mmluProAgain    = MustCompilePy(`.*[aA]nswer:\s*([A-J])`)
	mmluProFinal    = regexp.MustCompile(`\b[A-J]\b`)
)

// How ExtractMMLUPro found its letter: which official step matched.
const (
	HowMMLUProAnswerIs   = "answer_is"
	HowMMLUProAnswer     = "answer_colon"
	HowMMLUProLastLetter = "last_letter"
)

// ExtractMMLUPro is the official MMLU-Pro answer extraction. It returns the
// letter and the step that found it, or "", "" when no step matches; the
// official scripts then guess (see the mmlu_pro benchmark).
func ExtractMMLUPro(text string) (letter, how string) {
	if m := mmluProAnswerIs.FindStringSubmatch(text); m != nil {
		return m[1], HowMMLUProAnswerIs
	}
	// .*[aA]nswer: — '.' stops at \n in both engines, so the leftmost
	// match is the first line holding "answer:" followed by a letter, and
	// greedy .* picks that line's last such "answer:".
	if m := mmluProAgain.FindStringSubmatch(text); m != nil {
		return m[1], HowMMLUProAnswer
	}
	masked, offs := maskWord(text)
	if ms := mmluProFinal.FindAllStringIndex(masked, -1); len(ms) > 0 {
		last := ms[len(ms)-1]
		return text[offs[last[0]]:offs[last[1]]], HowMMLUProLastLetter
	}
	return "", ""
}
