package ifeval

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CountCapitalWords counts the tokens of nltk.word_tokenize(s) that are
// str.isupper().
//
// Only token boundaries inside runs of letters change that count, so this
// is a Treebank tokenizer reduced to them: whitespace; the punctuation
// NLTKWordTokenizer pads (brackets, quotes, ; @ # $ % & ? !, "..." and
// "--", and ',' or ':' not before a digit); the contractions it splits
// ("n't", "'s", "'m", "'d", "'ll", "'re", "'ve" at a word's end; cannot,
// gonna, gotta, wanna, gimme, lemme, 'tis, 'twas). Periods inside a word
// stay, as they do in Treebank except at a sentence's end, where a split
// period is not a capital word anyway.
func CountCapitalWords(s string) int {
	n := 0
	for _, t := range treebankTokens(s) {
		if pyIsUpper(t) {
			n++
		}
	}
	return n
}

// treebankTokens splits s as described at CountCapitalWords.
func treebankTokens(s string) []string {
	var out []string
	for _, chunk := range pySplit(s) {
		for _, piece := range splitPunct(chunk) {
			out = append(out, splitContractions(piece)...)
		}
	}
	return out
}

// splitPunct separates the characters Treebank pads with spaces.
func splitPunct(w string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if end > start {
			out = append(out, w[start:end])
		}
	}
	for i := 0; i < len(w); {
		r, n := utf8.DecodeRuneInString(w[i:])
		sep := 0
		switch {
		case strings.HasPrefix(w[i:], "..."):
			sep = 3
		case strings.HasPrefix(w[i:], "--"):
			sep = 2
		case strings.ContainsRune("()[]{}<>\";@#$%&?!`“”", r):
			sep = n
		case r == ',' || r == ':':
			next, _ := utf8.DecodeRuneInString(w[i+n:])
			if i+n == len(w) || !unicode.IsDigit(next) {
				sep = n
			}
		}
		if sep > 0 {
			flush(i)
			out = append(out, w[i:i+sep])
			i += sep
			start = i
			continue
		}
		i += n
	}
	flush(len(w))
	return out
}

// splitContractions splits Treebank's contractions off a word.
func splitContractions(w string) []string {
	low := strings.ToLower(w)
	for _, pair := range [][2]string{{"can", "not"}, {"gon", "na"}, {"got", "ta"}, {"wan", "na"}, {"gim", "me"}, {"lem", "me"}, {"'t", "is"}, {"'t", "was"}} {
		if low == pair[0]+pair[1] {
			return []string{w[:len(pair[0])], w[len(pair[0]):]}
		}
	}
	for _, suf := range []string{"n't", "'ll", "'re", "'ve", "'s", "'m", "'d"} {
		if len(low) > len(suf) && strings.HasSuffix(low, suf) && low[len(low)-len(suf)-1] != '\'' {
			k := len(w) - len(suf)
			return []string{w[:k], w[k:]}
		}
	}
	// A word-final quote ("dogs'") is its own token.
	if len(w) > 1 && strings.HasSuffix(w, "'") && w[len(w)-2] != '\'' {
		return []string{w[:len(w)-1], "'"}
	}
	return []string{w}
}
