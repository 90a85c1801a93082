// Package ifeval checks responses against IFEval's verifiable instructions
// (Zhou et al. 2023), reproducing Google's official scorer
// (google-research/instruction_following_eval: instructions.py,
// instructions_util.py, evaluation_lib.py) in Go.
//
// Each instruction id ("punctuation:no_comma", "length_constraints:
// number_words", ...) has a checker that takes the instruction's kwargs as
// the dataset gives them. Evaluate scores one prompt's instruction list both
// ways the official scorer does: strict (the response as is) and loose (the
// response or one of seven variants — first line, last line or both
// removed, and each of those with every '*' removed — follows it).
//
// Where the official code calls into nltk or langdetect, this package has
// small pure-Go stand-ins: words are \w+ runs (count_words' RegexpTokenizer,
// exact), sentences are counted by a port of nltk's Punkt algorithm with the
// English model's abbreviations, collocations and sentence starters
// (punkt.go), capital words use a Treebank-style word tokenizer
// (tokenize.go), and the response language comes from a script-and-
// stopword identifier (lang.go).
package ifeval

import (
	"fmt"
	"sort"
	"strings"
)

// Verdict is one prompt's result.
type Verdict struct {
	// StrictAll and LooseAll say every instruction was followed.
	StrictAll, LooseAll bool
	// Strict and Loose are the per-instruction verdicts, in the order of
	// the instruction ids.
	Strict, Loose []bool
}

// checker is one instruction's check_following with its kwargs bound.
type checker func(response string) bool

// builder binds an instruction's kwargs (and the prompt, for the few that
// need it) into a checker, or says what is wrong with the kwargs.
type builder func(a args, prompt string) (checker, error)

// builders maps every supported instruction id to its builder. Built per
// call (it is small) so no caller can change it.
func builders() map[string]builder {
	return map[string]builder{
		"keywords:existence":                            keywordsExistence,
		"keywords:frequency":                            keywordsFrequency,
		"keywords:forbidden_words":                      forbiddenWords,
		"keywords:letter_frequency":                     letterFrequency,
		"language:response_language":                    responseLanguage,
		"length_constraints:number_sentences":           numberSentences,
		"length_constraints:number_paragraphs":          numberParagraphs,
		"length_constraints:number_words":               numberWords,
		"length_constraints:nth_paragraph_first_word":   nthParagraphFirstWord,
		"detectable_content:number_placeholders":        numberPlaceholders,
		"detectable_content:postscript":                 postscript,
		"detectable_format:number_bullet_lists":         bulletLists,
		"detectable_format:constrained_response":        constrainedResponse,
		"detectable_format:number_highlighted_sections": highlightedSections,
		"detectable_format:multiple_sections":           multipleSections,
		"detectable_format:json_format":                 jsonFormat,
		"detectable_format:title":                       title,
		"combination:two_responses":                     twoResponses,
		"combination:repeat_prompt":                     repeatPrompt,
		"startend:end_checker":                          endChecker,
		"startend:quotation":                            quotation,
		"change_case:capital_word_frequency":            capitalWordFrequency,
		"change_case:english_capital":                   englishCapital,
		"change_case:english_lowercase":                 englishLowercase,
		"punctuation:no_comma":                          noComma,
	}
}

// IDs lists the supported instruction ids, sorted.
func IDs() []string {
	b := builders()
	out := make([]string, 0, len(b))
	for id := range b {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Supported reports whether id has a checker.
func Supported(id string) bool {
	_, ok := builders()[id]
	return ok
}

// build returns the checker for one instruction. Null kwargs are dropped,
// as the official scorer's callers do (the Hugging Face copy of the data
// lists every kwarg of every instruction, most of them null).
func build(id string, kwargs map[string]any, prompt string) (checker, error) {
	b, ok := builders()[id]
	if !ok {
		return nil, fmt.Errorf("ifeval %s: unknown instruction id", id)
	}
	a := args{}
	for k, v := range kwargs {
		if v != nil {
			a[k] = v
		}
	}
	c, err := b(a, prompt)
	if err != nil {
		return nil, fmt.Errorf("ifeval %s: %w", id, err)
	}
	return c, nil
}

// Check reports whether response strictly follows one instruction: the
// official test_instruction_following_strict for a single id (an empty or
// all-whitespace response follows nothing).
func Check(id string, kwargs map[string]any, prompt, response string) (bool, error) {
	c, err := build(id, kwargs, prompt)
	if err != nil {
		return false, err
	}
	return nonEmpty(response) && c(response), nil
}

// Evaluate scores response against a prompt's instructions, strict and
// loose. kwargs[i] belongs to ids[i]; a missing entry means no kwargs.
func Evaluate(ids []string, kwargs []map[string]any, prompt, response string) (Verdict, error) {
	variants := looseVariants(response)
	v := Verdict{StrictAll: true, LooseAll: true, Strict: make([]bool, len(ids)), Loose: make([]bool, len(ids))}
	for i, id := range ids {
		var kw map[string]any
		if i < len(kwargs) {
			kw = kwargs[i]
		}
		c, err := build(id, kw, prompt)
		if err != nil {
			return Verdict{}, err
		}
		v.Strict[i] = nonEmpty(response) && c(response)
		for _, r := range variants {
			if nonEmpty(r) && c(r) {
				v.Loose[i] = true
				break
			}
		}
		v.StrictAll = v.StrictAll && v.Strict[i]
		v.LooseAll = v.LooseAll && v.Loose[i]
	}
	return v, nil
}

// looseVariants are the eight responses the official loose test tries, in
// its order.
func looseVariants(response string) []string {
	r := strings.Split(response, "\n")
	first := pyStrip(strings.Join(r[1:], "\n"))
	last := pyStrip(strings.Join(r[:len(r)-1], "\n"))
	both := ""
	if len(r) > 2 {
		both = pyStrip(strings.Join(r[1:len(r)-1], "\n"))
	}
	nostar := func(s string) string { return strings.ReplaceAll(s, "*", "") }
	return []string{response, nostar(response), first, last, both, nostar(first), nostar(last), nostar(both)}
}

func nonEmpty(s string) bool { return pyStrip(s) != "" }
