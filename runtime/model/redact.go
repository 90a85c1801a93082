package model

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinRedactableKey is the shortest API key (in bytes) that is redacted
// wherever it occurs. A shorter key is likely to be part of ordinary
// words ("x" is in "exist"), so only its occurrences that stand alone as
// a token are redacted, and New warns that it cannot be redacted
// reliably.
const MinRedactableKey = 8

// Redacted replaces a key in text.
const Redacted = "[redacted]"

// Redact replaces key in s with [redacted]. A key of MinRedactableKey
// bytes or more is replaced wherever it occurs: a secret that long does
// not occur in ordinary text by chance, and one glued to other characters
// (URL-encoded, "Bearer%20<key>") is still the secret. A shorter key is
// replaced only where it is a whole token: bounded on both sides by the
// start or end of s or by a character that is not a letter, digit, '_'
// or '-' (so "api_key=x&" and "Bearer x" lose it, "exist" keeps its x).
func Redact(s, key string) string {
	if key == "" || !strings.Contains(s, key) {
		return s
	}
	if len(key) >= MinRedactableKey {
		return strings.ReplaceAll(s, key, Redacted)
	}
	var b strings.Builder
	done := 0 // s[:done] is in b
	for from := 0; ; {
		i := strings.Index(s[from:], key)
		if i < 0 {
			b.WriteString(s[done:])
			return b.String()
		}
		start, end := from+i, from+i+len(key)
		if boundaryBefore(s[:start]) && boundaryAfter(s[end:]) {
			b.WriteString(s[done:start])
			b.WriteString(Redacted)
			done = end
		}
		// A match inside a longer token is kept; a later one that
		// overlaps it may still be whole, so look again from the next byte.
		from = start + 1
		if done > from {
			from = done
		}
	}
}

// tokenRune reports whether r may be part of a key-like token.
func tokenRune(r rune) bool {
	return r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func boundaryBefore(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n == 0 || !tokenRune(r)
}

func boundaryAfter(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n == 0 || !tokenRune(r)
}
