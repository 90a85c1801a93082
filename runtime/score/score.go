// Package score holds the scoring primitives the built-in benchmarks use,
// written to agree with NeMo Evaluator's Python scorers (nemo_evaluator.scoring):
// the same regular expressions, normalisation and comparison.
//
// Python's re module differs from Go's regexp in ways that change verdicts:
// Python 3 str patterns treat \s, \d, \w and \b as Unicode classes, while
// Go's are ASCII. CompilePy translates \s, \d and \w (and their negations)
// into Unicode classes with Python's membership; \b is emulated by hand where
// a Python pattern uses it (Normalize, ExtractMCQLetter). Both engines pick
// the leftmost match and, among those, the one a backtracking engine finds
// first, so re.search equals FindStringSubmatch once the classes agree.
package score

import "sort"

// Result is one scorer's verdict.
type Result struct {
	Correct bool
	// Extracted is the answer the scorer took from the response.
	Extracted string
}

// Func scores response against expected; meta carries what some scorers
// need beyond expected (fuzzy_match: "correct_answers").
type Func func(response, expected string, meta map[string]any) Result

// funcs returns the registry; a function rather than a package variable so
// no caller can change it.
func funcs() map[string]Func {
	return map[string]Func{
		"exact_match": func(response, expected string, _ map[string]any) Result {
			return ExactMatch(response, expected)
		},
		"fuzzy_match": func(response, expected string, meta map[string]any) Result {
			targets := []string{expected}
			if v, ok := meta["correct_answers"]; ok {
				if ss, ok := Strings(v); ok {
					targets = ss
				}
			}
			return FuzzyMatch(response, targets)
		},
		"multichoice_regex": func(response, expected string, _ map[string]any) Result {
			return MultichoiceRegex(response, expected, multichoiceABCD)
		},
		"mcq_extract": func(response, expected string, _ map[string]any) Result {
			return MCQExtract(response, expected)
		},
		"mcq_robust": func(response, expected string, meta map[string]any) Result {
			// The item's own letters when its benchmark records them
			// (meta "letters", e.g. "ABCD"), else A–J.
			letters, _ := meta["letters"].(string)
			return MCQRobust(response, expected, letters)
		},
		"answer_line": func(response, expected string, _ map[string]any) Result {
			return AnswerLine(response, expected, answerLineDefault)
		},
		"numeric_match": func(response, expected string, _ map[string]any) Result {
			return NumericMatch(response, expected)
		},
	}
}

// Lookup returns the scorer registered under name, with its default
// parameters (multichoice_regex: A–D; answer_line: "Answer:").
func Lookup(name string) (Func, bool) {
	f, ok := funcs()[name]
	return f, ok
}

// Names lists the registered scorers, sorted.
func Names() []string {
	m := funcs()
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Strings converts a []string or a []any of strings (as JSON and Parquet
// decode lists) to []string; ok is false for anything else.
func Strings(v any) ([]string, bool) {
	switch v := v.(type) {
	case []string:
		return v, true
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}
