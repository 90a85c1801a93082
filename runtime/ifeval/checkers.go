package ifeval

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/score"
)

// The checkers below follow instructions.py class by class; comments name
// the class and note where Go needs care to match Python.

var (
	placeholderRe = regexp.MustCompile(`\[.*?\]`)
	// Python's \s* may cross newlines, so a bullet may be found after blank
	// lines; \s is Python's Unicode class (CompilePy).
	bulletStarRe   = score.MustCompilePy(`(?m)^\s*\*[^\*].*$`)
	bulletDashRe   = score.MustCompilePy(`(?m)^\s*-.*$`)
	highlightRe    = regexp.MustCompile(`\*[^\n\*]*\*`)
	highlightTwoRe = regexp.MustCompile(`\*\*[^\n\*]*\*\*`)
	paragraphRe    = score.MustCompilePy(`\s?\*\*\*\s?`)
	titleRe        = regexp.MustCompile(`<<[^\n]+>>`)
	ppsRe          = score.MustCompilePy(`(?m)\s*p\.\s?p\.\s?s.*$`)
	psRe           = score.MustCompilePy(`(?m)\s*p\.\s?s\..*$`)
)

// KeywordChecker: every keyword matches (re.search, IGNORECASE).
func keywordsExistence(a args, _ string) (checker, error) {
	kws, err := a.strs("keywords")
	if err != nil {
		return nil, err
	}
	res := make([]*regexp.Regexp, len(kws))
	for i, k := range kws {
		if res[i], err = pyRegexpI(k); err != nil {
			return nil, err
		}
	}
	return func(v string) bool {
		for _, re := range res {
			if !re.MatchString(v) {
				return false
			}
		}
		return true
	}, nil
}

// KeywordFrequencyChecker: len(re.findall(keyword, IGNORECASE)) compared.
func keywordsFrequency(a args, _ string) (checker, error) {
	kw, err := a.str("keyword")
	if err != nil {
		return nil, err
	}
	freq, err := a.int("frequency")
	if err != nil {
		return nil, err
	}
	lt, err := a.relation("relation")
	if err != nil {
		return nil, err
	}
	re, err := pyRegexpI(pyStrip(kw))
	if err != nil {
		return nil, err
	}
	return func(v string) bool { return compare(len(re.FindAllStringIndex(v, -1)), freq, lt) }, nil
}

// ForbiddenWords: no r"\b" + word + r"\b" match (IGNORECASE). Go's \b is
// ASCII-only, so the Unicode word boundary is checked around each match.
func forbiddenWords(a args, _ string) (checker, error) {
	ws, err := a.strs("forbidden_words")
	if err != nil {
		return nil, err
	}
	res := make([]*regexp.Regexp, len(ws))
	for i, w := range ws {
		if res[i], err = pyRegexpI("^(?:" + w + ")"); err != nil {
			return nil, err
		}
	}
	return func(v string) bool {
		for _, re := range res {
			if searchBounded(re, v) {
				return false
			}
		}
		return true
	}, nil
}

// searchBounded reports whether the anchored pattern re matches v at
// some position with a Python \b before and after the match.
func searchBounded(re *regexp.Regexp, v string) bool {
	for i := 0; i <= len(v); {
		if wordBoundary(v, i) {
			if loc := re.FindStringIndex(v[i:]); loc != nil && wordBoundary(v, i+loc[1]) {
				return true
			}
		}
		if i == len(v) {
			break
		}
		_, n := utf8.DecodeRuneInString(v[i:])
		i += n
	}
	return false
}

// wordBoundary is Python's \b at byte offset i of s.
func wordBoundary(s string, i int) bool {
	before, after := false, false
	if i > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		before = isPyWord(r)
	}
	if i < len(s) {
		r, _ := utf8.DecodeRuneInString(s[i:])
		after = isPyWord(r)
	}
	return before != after
}

// pyRegexpI compiles a Python pattern with IGNORECASE; plain words (all the
// data has) are quoted so nothing is lost in translation.
func pyRegexpI(p string) (*regexp.Regexp, error) {
	if regexp.QuoteMeta(p) == p {
		return regexp.Compile("(?i)" + p)
	}
	re, err := score.CompilePy("(?i)" + p)
	if err != nil {
		return nil, fmt.Errorf("keyword %q: %w", p, err)
	}
	return re, nil
}

// LetterFrequencyChecker: collections.Counter(value.lower())[letter].
func letterFrequency(a args, _ string) (checker, error) {
	l, err := a.str("letter")
	if err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(l) != 1 {
		// The official code picks a random letter here; a scorer cannot.
		return nil, fmt.Errorf("kwarg \"letter\": want one character, got %q", l)
	}
	letter, _ := utf8.DecodeRuneInString(strings.ToLower(pyStrip(l)))
	freq, err := a.int("let_frequency")
	if err != nil {
		return nil, err
	}
	lt, err := a.relation("let_relation")
	if err != nil {
		return nil, err
	}
	return func(v string) bool {
		n := 0
		for _, r := range strings.ToLower(v) {
			if r == letter {
				n++
			}
		}
		return compare(n, freq, lt)
	}, nil
}

// ResponseLanguageChecker: langdetect.detect(value) == language; text the
// detector cannot classify counts as followed, as upstream.
func responseLanguage(a args, _ string) (checker, error) {
	lang, err := a.str("language")
	if err != nil {
		return nil, err
	}
	return func(v string) bool { return languageFollowed(DetectLanguage(v), lang) }, nil
}

// NumberOfSentences: nltk's Punkt (English) sentence count compared.
func numberSentences(a args, _ string) (checker, error) {
	n, err := a.int("num_sentences")
	if err != nil {
		return nil, err
	}
	lt, err := a.relation("relation")
	if err != nil {
		return nil, err
	}
	return func(v string) bool { return compare(CountSentences(v), n, lt) }, nil
}

// ParagraphChecker: exactly num_paragraphs pieces between "***" dividers;
// an empty piece is allowed only first or last.
func numberParagraphs(a args, _ string) (checker, error) {
	want, err := a.int("num_paragraphs")
	if err != nil {
		return nil, err
	}
	return func(v string) bool {
		ps := paragraphRe.Split(v, -1)
		n := len(ps)
		for i, p := range ps {
			if pyStrip(p) == "" {
				if i == 0 || i == len(ps)-1 {
					n--
				} else {
					return false
				}
			}
		}
		return n == want
	}, nil
}

// NumberOfWords: count of \w+ tokens compared.
func numberWords(a args, _ string) (checker, error) {
	n, err := a.int("num_words")
	if err != nil {
		return nil, err
	}
	lt, err := a.relation("relation")
	if err != nil {
		return nil, err
	}
	return func(v string) bool { return compare(CountWords(v), n, lt) }, nil
}

// ParagraphFirstWordCheck: paragraphs split on "\n\n"; the count of
// non-empty ones must equal num_paragraphs and paragraph nth_paragraph (an
// index into the raw split, empties included, as upstream) must start
// with first_word, compared up to the first punctuation mark.
func nthParagraphFirstWord(a args, _ string) (checker, error) {
	want, err := a.int("num_paragraphs")
	if err != nil {
		return nil, err
	}
	nth, err := a.int("nth_paragraph")
	if err != nil {
		return nil, err
	}
	if nth <= 0 || nth > want {
		return nil, fmt.Errorf("kwarg \"nth_paragraph\" %d out of range 1..%d", nth, want)
	}
	fw, err := a.str("first_word")
	if err != nil {
		return nil, err
	}
	fw = strings.ToLower(fw)
	return func(v string) bool {
		ps := strings.Split(v, "\n\n")
		n := len(ps)
		for _, p := range ps {
			if pyStrip(p) == "" {
				n--
			}
		}
		if nth > n {
			return false
		}
		p := pyStrip(ps[nth-1])
		if p == "" {
			return false
		}
		word := pyStrip(pySplit(p)[0])
		word = strings.TrimLeft(word, "'")
		word = strings.TrimLeft(word, `"`)
		var b strings.Builder
		for _, r := range word {
			if strings.ContainsRune(`.,?!'"`, r) {
				break
			}
			b.WriteString(strings.ToLower(string(r)))
		}
		return n == want && b.String() == fw
	}, nil
}

// PlaceholderChecker: at least num_placeholders [..] spans.
func numberPlaceholders(a args, _ string) (checker, error) {
	n, err := a.int("num_placeholders")
	if err != nil {
		return nil, err
	}
	return func(v string) bool { return len(placeholderRe.FindAllStringIndex(v, -1)) >= n }, nil
}

// PostscriptChecker: the marker (lowercased, P.S. and P.P.S with optional
// spaces) occurs anywhere; there is no ^ in the upstream pattern.
func postscript(a args, _ string) (checker, error) {
	m, err := a.str("postscript_marker")
	if err != nil {
		return nil, err
	}
	m = pyStrip(m)
	var re *regexp.Regexp
	switch m {
	case "P.P.S":
		re = ppsRe
	case "P.S.":
		re = psRe
	default:
		// Upstream splices the marker into the pattern unescaped.
		if re, err = score.CompilePy(`(?m)\s*` + strings.ToLower(m) + `.*$`); err != nil {
			return nil, err
		}
	}
	return func(v string) bool { return re.MatchString(strings.ToLower(v)) }, nil
}

// BulletListChecker: exactly num_bullets lines starting "*" (not "**") or
// "-".
func bulletLists(a args, _ string) (checker, error) {
	n, err := a.int("num_bullets")
	if err != nil {
		return nil, err
	}
	return func(v string) bool {
		return len(bulletStarRe.FindAllStringIndex(v, -1))+len(bulletDashRe.FindAllStringIndex(v, -1)) == n
	}, nil
}

// constrainedOptions are ConstrainedResponseChecker's options.
var constrainedOptions = []string{"My answer is yes.", "My answer is no.", "My answer is maybe."}

// ConstrainedResponseChecker: one of the options occurs in the response.
func constrainedResponse(args, string) (checker, error) {
	return func(v string) bool {
		v = pyStrip(v)
		for _, o := range constrainedOptions {
			if strings.Contains(v, o) {
				return true
			}
		}
		return false
	}, nil
}

// HighlightSectionChecker: *x* and **x** spans with non-blank content,
// counted together, at least num_highlights.
func highlightedSections(a args, _ string) (checker, error) {
	want, err := a.int("num_highlights")
	if err != nil {
		return nil, err
	}
	return func(v string) bool {
		n := 0
		for _, h := range highlightRe.FindAllString(v, -1) {
			if pyStrip(strings.Trim(h, "*")) != "" {
				n++
			}
		}
		for _, h := range highlightTwoRe.FindAllString(v, -1) {
			if pyStrip(strings.TrimSuffix(strings.TrimPrefix(h, "**"), "**")) != "" {
				n++
			}
		}
		return n >= want
	}, nil
}

// SectionChecker: re.split(r"\s?" + spliter + r"\s?\d+\s?") gives at
// least num_sections + 1 pieces. The spliter goes in unescaped, as
// upstream.
func multipleSections(a args, _ string) (checker, error) {
	sp, err := a.str("section_spliter")
	if err != nil {
		return nil, err
	}
	n, err := a.int("num_sections")
	if err != nil {
		return nil, err
	}
	re, err := score.CompilePy(`\s?` + pyStrip(sp) + `\s?\d+\s?`)
	if err != nil {
		return nil, err
	}
	return func(v string) bool { return len(re.FindAllStringIndex(v, -1)) >= n }, nil
}

// JsonFormat: the response, stripped of ``` / ```json fences, parses as
// JSON.
func jsonFormat(args, string) (checker, error) {
	return func(v string) bool {
		v = pyStrip(v)
		for _, p := range []string{"```json", "```Json", "```JSON", "```"} {
			if strings.HasPrefix(v, p) {
				v = v[len(p):]
				break
			}
		}
		v = pyStrip(strings.TrimSuffix(v, "```"))
		return pyJSONValid(v)
	}, nil
}

// pyJSONValid is json.loads succeeding: Go's grammar check plus Python's
// extensions NaN, Infinity and -Infinity as values.
func pyJSONValid(v string) bool {
	if json.Valid([]byte(v)) {
		return true
	}
	if !strings.Contains(v, "NaN") && !strings.Contains(v, "Infinity") {
		return false
	}
	return json.Valid([]byte(pyJSONConstRe.ReplaceAllString(v, "${1}0")))
}

// pyJSONConstRe finds NaN / Infinity / -Infinity outside strings (a
// string prefix of balanced quotes precedes them).
var pyJSONConstRe = regexp.MustCompile(`^((?:[^"\\]|"(?:[^"\\]|\\.)*")*?)(?:-?Infinity|NaN)`)

// TitleChecker: a <<...>> with non-blank content on one line.
func title(args, string) (checker, error) {
	return func(v string) bool {
		for _, t := range titleRe.FindAllString(v, -1) {
			if pyStrip(strings.TrimRight(strings.TrimLeft(t, "<"), ">")) != "" {
				return true
			}
		}
		return false
	}, nil
}

// TwoResponsesChecker: exactly two different non-blank pieces between
// "******"; a blank piece is allowed only first or last.
func twoResponses(args, string) (checker, error) {
	return func(v string) bool {
		var valid []string
		rs := strings.Split(v, "******")
		for i, r := range rs {
			if pyStrip(r) == "" {
				if i != 0 && i != len(rs)-1 {
					return false
				}
				continue
			}
			valid = append(valid, r)
		}
		return len(valid) == 2 && pyStrip(valid[0]) != pyStrip(valid[1])
	}, nil
}

// RepeatPromptThenAnswer: the response starts with prompt_to_repeat
// (stripped, case-insensitive).
func repeatPrompt(a args, _ string) (checker, error) {
	p, err := a.str("prompt_to_repeat")
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, fmt.Errorf("kwarg \"prompt_to_repeat\" is empty")
	}
	want := strings.ToLower(pyStrip(p))
	return func(v string) bool { return strings.HasPrefix(strings.ToLower(pyStrip(v)), want) }, nil
}

// EndChecker: the response, stripped and with '"' trimmed, ends with the
// phrase (case-insensitive).
func endChecker(a args, _ string) (checker, error) {
	p, err := a.str("end_phrase")
	if err != nil {
		return nil, err
	}
	want := strings.ToLower(pyStrip(p))
	return func(v string) bool {
		return strings.HasSuffix(strings.ToLower(strings.Trim(pyStrip(v), `"`)), want)
	}, nil
}

// QuotationChecker: the stripped response starts and ends with '"'.
func quotation(args, string) (checker, error) {
	return func(v string) bool {
		v = pyStrip(v)
		return utf8.RuneCountInString(v) > 1 && v[0] == '"' && v[len(v)-1] == '"'
	}, nil
}

// CapitalWordFrequencyChecker: nltk.word_tokenize tokens that are
// str.isupper(), compared.
func capitalWordFrequency(a args, _ string) (checker, error) {
	n, err := a.int("capital_frequency")
	if err != nil {
		return nil, err
	}
	lt, err := a.relation("capital_relation")
	if err != nil {
		return nil, err
	}
	return func(v string) bool { return compare(CountCapitalWords(v), n, lt) }, nil
}

// CapitalLettersEnglishChecker: value.isupper() and detected English (or
// undetectable).
func englishCapital(args, string) (checker, error) {
	return func(v string) bool {
		if !pyIsUpper(v) {
			return false
		}
		l := DetectLanguage(v)
		return l == "" || l == "en"
	}, nil
}

// LowercaseLettersEnglishChecker: value.islower() and detected English (or
// undetectable).
func englishLowercase(args, string) (checker, error) {
	return func(v string) bool {
		if !pyIsLower(v) {
			return false
		}
		l := DetectLanguage(v)
		return l == "" || l == "en"
	}, nil
}

// CommaChecker: no ','.
func noComma(args, string) (checker, error) {
	return func(v string) bool { return !strings.Contains(v, ",") }, nil
}

// CountWords is instructions_util.count_words: the number of \w+ runs.
func CountWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := isPyWord(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}
