package score

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the few fixed patterns every sample of a
// benchmark runs through (issue 23: Go's backtracker on them was about a
// tenth of a shard's CPU). Each matches what its pattern compiled by Go's
// regexp matches, Unicode case folding and invalid UTF-8 included; the
// tests hold each to its regexp on real and random text.

// MatchFoldAt reports whether lit, as the pattern (?i)lit, matches s at
// byte offset i, and where the match ends. lit is lower-case ASCII; a
// letter matches every rune of its case-folding orbit (k also matches the
// Kelvin sign, s the long s), any other byte only itself.
func MatchFoldAt(s string, i int, lit string) (end int, ok bool) {
	for k := 0; k < len(lit); k++ {
		if i >= len(s) {
			return 0, false
		}
		c := lit[k]
		b := s[i]
		if b < utf8.RuneSelf {
			if b != c && (c < 'a' || c > 'z' || b != c-('a'-'A')) {
				return 0, false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !foldsTo(r, rune(c)) {
			return 0, false
		}
		i += n
	}
	return i, true
}

// foldsTo reports whether r is in c's simple case-folding orbit, as
// regexp's (?i) compares runes.
func foldsTo(r, c rune) bool {
	for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
		if f == r {
			return true
		}
	}
	return r == c
}

// ContainsAnyFold reports whether (?i)lits[0]|lits[1]|… matches somewhere
// in s (regexp's MatchString). Each lit is lower-case ASCII and starts
// with a letter whose folding orbit is ASCII (not k or s): a match then
// starts at an ASCII byte, which is always a position the regexp tries.
func ContainsAnyFold(s string, lits []string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		for _, lit := range lits {
			if lit[0] != c {
				continue
			}
			if _, ok := MatchFoldAt(s, i, lit); ok {
				return true
			}
		}
	}
	return false
}

// RestOfLine is what `\s*([^\n]+)` (\s as Python's, IsPySpace) captures
// when it starts at byte offset i of s, and whether it matches: the spaces
// are taken greedily and the group is the rest of that line; where only
// spaces are left, the regexp gives spaces back from the end until the
// group can take one that is not a newline (and then just that one).
func RestOfLine(s string, i int) (string, bool) {
	last := -1 // the start of the last space rune that is not '\n'
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !IsPySpace(r) {
			break
		}
		if r != '\n' {
			last = i
		}
		i += n
	}
	if i == len(s) {
		if last < 0 {
			return "", false
		}
		i = last
	}
	if nl := strings.IndexByte(s[i:], '\n'); nl >= 0 {
		return s[i : i+nl], true
	}
	return s[i:], true
}

// SkipPySpace returns the offset of the first rune at or after i in s
// that is not a Python space.
func SkipPySpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !IsPySpace(r) {
			return i
		}
		i += n
	}
	return i
}
