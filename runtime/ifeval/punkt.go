package ifeval

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/score"
)

// CountSentences is instructions_util.count_sentences: the number of
// sentences nltk's Punkt tokenizer (the pretrained English model, NLTK 3.8
// span logic) finds in s.
//
// This is a port of PunktSentenceTokenizer.span_tokenize: candidate ends
// are '.', '?' and '!' followed by punctuation or by whitespace and a
// token; a candidate is a break when Punkt's two annotation passes mark the
// token before it a sentence break. The English model's abbreviation
// types, collocations and sentence starters are copied below. Its
// orthographic context (how each of ~20,000 training words was seen
// capitalised) is not: punktOrtho approximates it (see there), which only
// matters after a known abbreviation, an initial or a number.
func CountSentences(s string) int {
	n := 0
	for _, sl := range punktSlices(s) {
		if sl[1] > sl[0] {
			n++
		}
	}
	return n
}

// punktSlices returns the sentence spans (byte offsets) after boundary
// realignment; empty spans are kept for the caller to drop.
func punktSlices(text string) [][2]int {
	var raw [][2]int
	last := 0
	for _, c := range punktEndContexts(text) {
		if punktContainsBreak(c.context) {
			raw = append(raw, [2]int{last, c.end})
			if c.nextTok >= 0 {
				last = c.nextTok
			} else {
				last = c.end
			}
		}
	}
	raw = append(raw, [2]int{last, len(strings.TrimRightFunc(text, score.IsPySpace))})
	// _realign_boundaries: closing quotes/brackets after a break move to
	// the sentence before.
	var out [][2]int
	realign := 0
	for i, s1 := range raw {
		s1[0] += realign
		if s1[0] > s1[1] {
			s1[0] = s1[1]
		}
		if i == len(raw)-1 {
			if s1[1] > s1[0] {
				out = append(out, s1)
			}
			continue
		}
		s2 := raw[i+1]
		if m := realignPrefix(text[s2[0]:max(s2[0], s2[1])]); m != "" {
			out = append(out, [2]int{s1[0], s2[0] + len(strings.TrimRightFunc(m, score.IsPySpace))})
			realign = len(m)
		} else {
			realign = 0
			if s1[1] > s1[0] {
				out = append(out, s1)
			}
		}
	}
	return out
}

// realignPrefix matches re_boundary_realignment, r'["\')\]}]+?(?:\s+|(?=--)|$)'
// (MULTILINE), at the start of s and returns the match.
func realignPrefix(s string) string {
	i := 0
	for i < len(s) && strings.IndexByte(`"')]}`, s[i]) >= 0 {
		i++
		// Lazy +?: stop at the first closing char after which the rest
		// of the pattern matches (\s+ first, then (?=--), then $).
		rest := s[i:]
		if rest == "" {
			return s
		}
		if r, _ := utf8.DecodeRuneInString(rest); isPySpaceRune(r) {
			j := i
			for j < len(s) {
				r, n := utf8.DecodeRuneInString(s[j:])
				if !isPySpaceRune(r) {
					break
				}
				j += n
			}
			return s[:j]
		}
		if strings.HasPrefix(rest, "--") {
			return s[:i]
		}
	}
	return ""
}

// endContext is one candidate sentence end.
type endContext struct {
	end     int // just after the end character
	nextTok int // start of the following token, or -1
	context string
}

// punktEndContexts is _match_potential_end_contexts with period_context_re
// (NLTK 3.8): [.?!] followed by a non-word character or by whitespace and
// a token.
func punktEndContexts(text string) []endContext {
	type match struct {
		start, end, nextTok int
		after               string
	}
	var out []endContext
	prevStart, prevStop := 0, 0
	var prev *match
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '.' && c != '?' && c != '!' {
			continue
		}
		m := match{start: i, end: i + 1, nextTok: -1}
		j := i + 1
		switch {
		case j < len(text) && isNonWord(text[j]):
			m.after = text[j : j+1]
		default:
			k := j
			for k < len(text) {
				r, n := utf8.DecodeRuneInString(text[k:])
				if !isPySpaceRune(r) {
					break
				}
				k += n
			}
			if k == j || k == len(text) {
				continue
			}
			e := k
			for e < len(text) {
				r, n := utf8.DecodeRuneInString(text[e:])
				if isPySpaceRune(r) {
					break
				}
				e += n
			}
			m.after, m.nextTok = text[j:e], k
		}
		before := text[prevStop:m.start]
		idx := lastASCIISpace(before)
		var wordStart int
		if idx != 0 {
			wordStart = idx + prevStop + 1
		} else {
			wordStart = prevStart
		}
		if prev != nil && prevStop <= wordStart {
			out = append(out, endContext{prev.end, prev.nextTok, text[prevStart:prevStop] + text[prev.start:prev.end] + prev.after})
		}
		mm := m
		prev = &mm
		prevStart, prevStop = wordStart, m.start
	}
	if prev != nil {
		out = append(out, endContext{prev.end, prev.nextTok, text[prevStart:prevStop] + text[prev.start:prev.end] + prev.after})
	}
	return out
}

// lastASCIISpace is _get_last_whitespace_index: the index of the last
// string.whitespace character, 0 when none (or when it is at 0).
func lastASCIISpace(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if strings.IndexByte(" \t\n\r\v\f", s[i]) >= 0 {
			return i
		}
	}
	return 0
}

// isNonWord is Punkt's _re_non_word_chars: [?!)";}\]*:@'({[].
func isNonWord(c byte) bool { return strings.IndexByte(`?!)";}]*:@'({[`, c) >= 0 }

func isPySpaceRune(r rune) bool { return score.IsPySpace(r) }

// punktToken is a Punkt token with its annotations.
type punktToken struct {
	tok                        string
	typ                        string
	periodFinal                bool
	sentbreak, abbr, ellipsis  bool
	firstUpper, firstLower     bool
	isInitial, isEllipsisToken bool
}

var (
	punktNumberRe   = regexp.MustCompile(`^-?[\.,]?[0-9][0-9,\.-]*\.?$`)
	punktEllipsisRe = regexp.MustCompile(`^\.\.+$`)
)

func newPunktToken(tok string) *punktToken {
	t := &punktToken{tok: tok, periodFinal: strings.HasSuffix(tok, ".")}
	low := strings.ToLower(tok)
	if punktNumberRe.MatchString(low) {
		t.typ = "##number##"
	} else {
		t.typ = low
	}
	r, n := utf8.DecodeRuneInString(tok)
	t.firstUpper = unicode.IsUpper(r)
	t.firstLower = unicode.IsLower(r)
	t.isEllipsisToken = punktEllipsisRe.MatchString(tok)
	// [^\W\d]\.$ from the start: one letter, then the period.
	t.isInitial = len(tok) == n+1 && tok[n] == '.' && (unicode.IsLetter(r) || r == '_')
	return t
}

func (t *punktToken) typeNoPeriod() string {
	if len(t.typ) > 1 && strings.HasSuffix(t.typ, ".") {
		return t.typ[:len(t.typ)-1]
	}
	return t.typ
}

func (t *punktToken) typeNoSentPeriod() string {
	if t.sentbreak {
		return t.typeNoPeriod()
	}
	return t.typ
}

// punktContainsBreak is text_contains_sentbreak: some token other than the
// last is a sentence break after both annotation passes.
func punktContainsBreak(text string) bool {
	toks := punktWords(text)
	ts := make([]*punktToken, len(toks))
	for i, w := range toks {
		ts[i] = newPunktToken(w)
		punktFirstPass(ts[i])
	}
	for i := range ts {
		if i+1 < len(ts) {
			punktSecondPass(ts[i], ts[i+1])
		}
	}
	for i, t := range ts {
		if t.sentbreak && i+1 < len(ts) {
			return true
		}
	}
	return false
}

func punktFirstPass(t *punktToken) {
	switch {
	case t.tok == "." || t.tok == "?" || t.tok == "!":
		t.sentbreak = true
	case t.isEllipsisToken:
		t.ellipsis = true
	case t.periodFinal && !strings.HasSuffix(t.tok, ".."):
		w := strings.ToLower(t.tok[:len(t.tok)-1])
		parts := strings.Split(w, "-")
		if punktAbbrevs[w] || punktAbbrevs[parts[len(parts)-1]] {
			t.abbr = true
		} else {
			t.sentbreak = true
		}
	}
}

// Orthographic context flags (PunktParameters).
const (
	orthoBegUC = 1 << 1
	orthoMidUC = 1 << 2
	orthoUnkUC = 1 << 3
	orthoBegLC = 1 << 4
	orthoMidLC = 1 << 5
	orthoUnkLC = 1 << 6
	orthoUC    = orthoBegUC | orthoMidUC | orthoUnkUC
	orthoLC    = orthoBegLC | orthoMidLC | orthoUnkLC
)

// punktOrtho approximates the English model's ortho_context: common
// English words (seen both capitalised, at sentence starts and in
// headlines, and lowercase mid-sentence) get that mix; any other word is
// unseen (0). The consequence, as in the model for unseen words: after an
// initial or a number a lowercase word continues the sentence and a
// capitalised one starts a new sentence only after a number or when it is
// a common word.
func punktOrtho(typ string) int {
	if punktCommon[typ] {
		return orthoUC | orthoMidLC | orthoUnkLC
	}
	return 0
}

// punktOrthoHeuristic returns 1 (sentence starter), 0 (not) or -1
// (unknown).
func punktOrthoHeuristic(t *punktToken) int {
	if strings.Contains(";:,.!?", t.tok) && t.tok != "" {
		return 0
	}
	oc := punktOrtho(t.typeNoSentPeriod())
	if t.firstUpper && oc&orthoLC != 0 && oc&orthoMidUC == 0 {
		return 1
	}
	if t.firstLower && (oc&orthoUC != 0 || oc&orthoBegLC == 0) {
		return 0
	}
	return -1
}

func punktSecondPass(t1, t2 *punktToken) {
	if !t1.periodFinal {
		return
	}
	typ := t1.typeNoPeriod()
	next := t2.typeNoSentPeriod()
	if punktCollocations[typ+","+next] {
		t1.sentbreak, t1.abbr = false, true
		return
	}
	if (t1.abbr || t1.ellipsis) && !t1.isInitial {
		if punktOrthoHeuristic(t2) == 1 {
			t1.sentbreak = true
			return
		}
		if t2.firstUpper && punktStarters[next] {
			t1.sentbreak = true
		}
		return
	}
	if t1.isInitial || typ == "##number##" {
		h := punktOrthoHeuristic(t2)
		if h == 0 {
			t1.sentbreak, t1.abbr = false, true
			return
		}
		if h == -1 && t1.isInitial && t2.firstUpper && punktOrtho(next)&orthoLC == 0 {
			t1.sentbreak, t1.abbr = false, true
		}
	}
}

// punktWords is PunktLanguageVars.word_tokenize: multi-character
// punctuation, words (ending before whitespace, non-word punctuation,
// multi-character punctuation or a word-final comma), or single non-space
// characters.
func punktWords(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if isPySpaceRune(r) {
			i += n
			continue
		}
		if m := multiChar(s[i:]); m > 0 {
			out = append(out, s[i:i+m])
			i += m
			continue
		}
		if strings.ContainsRune("(\"`{[:;&#*@)}]-,", r) {
			out = append(out, s[i:i+n])
			i += n
			continue
		}
		j := i + n
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if isPySpaceRune(r2) || isNonWord(s[j]) || multiChar(s[j:]) > 0 {
				break
			}
			if r2 == ',' {
				k := j + 1
				if k == len(s) || isNonWord(s[k]) || multiChar(s[k:]) > 0 {
					break
				}
				if r3, _ := utf8.DecodeRuneInString(s[k:]); isPySpaceRune(r3) {
					break
				}
			}
			j += n2
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// multiChar is the length of _re_multi_char_punct at the start of s:
// -{2,}, \.{2,} or (?:\.\s){2,}\. — 0 when none.
func multiChar(s string) int {
	if strings.HasPrefix(s, "--") {
		n := 0
		for n < len(s) && s[n] == '-' {
			n++
		}
		return n
	}
	if strings.HasPrefix(s, "..") {
		n := 0
		for n < len(s) && s[n] == '.' {
			n++
		}
		return n
	}
	// (?:\.\s){2,}\.
	i, reps := 0, 0
	for i < len(s) && s[i] == '.' {
		r, n := utf8.DecodeRuneInString(s[i+1:])
		if n == 0 || !isPySpaceRune(r) {
			break
		}
		i += 1 + n
		reps++
	}
	for reps >= 2 {
		if i < len(s) && s[i] == '.' {
			return i + 1
		}
		// Back off one repetition (the regex would backtrack).
		reps--
		i = backOne(s, i)
	}
	return 0
}

// backOne steps back over one ". " repetition ending at i.
func backOne(s string, i int) int {
	_, n := utf8.DecodeLastRuneInString(s[:i])
	return i - n - 1
}
