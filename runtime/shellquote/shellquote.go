// Package shellquote writes strings as words of a POSIX shell (bash, dash,
// sh): the one quoter of nel. The compiler's scripts (through the sh and
// shargs template functions), the commands a report prints for pasting and
// the hints nel-run prints all go through it, so the escaping rule is
// written once.
//
// Quoting is POSIX single quotes; an embedded quote closes the quote,
// adds an escaped quote and reopens (see [Quote]). sprig's squote must
// never be used for shell (DESIGN §5): it does not escape embedded quotes,
// so "it's" renders as 'it's' and anything after the embedded quote is
// parsed as shell code. Double quotes are no better: inside them bash still
// expands $VAR, $(...) and backticks.
//
// The package imports nothing of nel's: nel-run links it, and so does
// every tool that prints a command line.
package shellquote

import (
	"fmt"
	"strings"
)

// isPlain reports whether c may appear in an unquoted shell word without
// any special meaning. The set is deliberately small: it keeps paths
// (/data/run-1/model.v2), flags (--tp=8) and host:port pairs readable while
// excluding everything bash treats specially in any position, including ~
// (tilde expansion), * ? [ (globbing), { (brace expansion) and ! (history
// expansion in interactive shells).
func isPlain(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_@%+=:,./-", c) >= 0
}

// Quote returns s quoted for use as a single word in a POSIX shell, so that
// the shell passes it on byte for byte and expands nothing in it.
//
// Single quotes are used because they are the only POSIX quoting in which
// every byte is literal: there is no escape character inside them, so an
// embedded single quote is written by closing the quote, adding an escaped
// quote and reopening:
//
//	it's    ->  'it'\''s'
//	(empty) ->  ''
//
// A non-empty s made only of [A-Za-z0-9_@%+=:,./-] is returned unchanged, so
// that generated scripts and printed commands stay readable. The empty
// string is quoted so that it remains an (empty) argument instead of
// disappearing. An unquoted word such as FOO=bar is still an assignment
// when it appears in command position; Quote makes a value safe as an
// argument or as the right-hand side of an assignment, not as a command
// name.
//
// The shell cannot represent NUL bytes in arguments at all; Quote assumes s
// has none. Callers that accept arbitrary input must check it with [Check]
// first.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		if !isPlain(s[i]) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// Join quotes each element of args with [Quote] and joins the results with
// single spaces, giving a command-line fragment whose words are exactly
// args. A nil or empty args gives the empty string.
func Join(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = Quote(a)
	}
	return strings.Join(quoted, " ")
}

// Check reports whether s can be passed through a shell at all. It returns
// an error if s contains a NUL byte: the kernel passes arguments and
// environment entries as C strings, and bash silently drops NULs from
// script text and heredocs, so such a value would be truncated or altered
// however it is quoted.
func Check(s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("value %q contains a NUL byte at offset %d; NUL cannot be passed through a shell", s, i)
	}
	return nil
}
