// Package templates renders evaluation recipes into bash and sbatch scripts.
//
// Every value that comes from a user recipe and lands on a shell line must go
// through the template function sh (or shargs), which is runtime/shellquote's
// Quote (or Join); values on #SBATCH lines must go through [SbatchValue];
// names used to build variable names must go through [EnvName]; and text
// embedded in a heredoc needs a delimiter from [HeredocDelimiter]. Keeping the escaping rules in these few functions is
// what lets the rest of the renderer treat recipe values as opaque data.
//
// The sprig helpers that text/template users usually reach for are not safe
// here, and [Parse] removes them: squote wraps a value in single quotes
// without escaping the single quotes inside it, so "it's" renders as 'it's'
// and anything after the embedded quote is parsed as shell code; quote
// produces a Go-syntax double-quoted string, inside which bash still expands
// $VAR, $(...) and backticks.
package templates

import (
	"fmt"
	"strings"
)

// SbatchValue returns s encoded as the VALUE of an "#SBATCH --flag=VALUE"
// line.
//
// Such lines are comments to bash; sbatch reads them with its own small
// tokenizer (_get_argument in src/sbatch/opt.c), so shell quoting is wrong
// here. That tokenizer
//   - treats an unescaped # as the start of a comment and drops the rest of
//     the line (older releases do so even inside double quotes), so # is
//     always written as \#;
//   - ends a value at unquoted whitespace, but keeps whitespace inside double
//     quotes, so values containing whitespace or quotes are wrapped in "...";
//   - lets a backslash escape any following character, in or out of quotes,
//     and (since 17.11) also opens quotes with ', so \, " and ' are always
//     written with a backslash;
//   - reads one line only, so values with a newline or carriage return cannot
//     be represented and are rejected, as are NUL bytes;
//   - blanks out the first "hetjob" (or, in 17.11 to 19.05, "packjob") on the
//     line, case-insensitively, because that word separates the components
//     of a heterogeneous job. A backslash is inserted before the j of such a
//     word so that the substring no longer matches; the tokenizer removes it
//     again.
//
// Values made only of characters with no meaning to that tokenizer are
// returned unchanged, so --time=01:00:00 or --gres=gpu:8 stay as written.
func SbatchValue(s string) (string, error) {
	if i := strings.IndexAny(s, "\n\r\x00"); i >= 0 {
		what := "a newline"
		switch s[i] {
		case '\r':
			what = "a carriage return"
		case 0:
			what = "a NUL byte"
		}
		return "", fmt.Errorf("sbatch value %q: contains %s; #SBATCH values must be one line", s, what)
	}
	if s == "" {
		return `""`, nil
	}
	var b strings.Builder
	wrap := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\v', '\f':
			wrap = true
		case '"', '\'':
			wrap = true
			b.WriteByte('\\')
		case '\\', '#':
			b.WriteByte('\\')
		case 'j', 'J':
			if endsHetjobSeparator(s, i) {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
	}
	if wrap {
		return `"` + b.String() + `"`, nil
	}
	return b.String(), nil
}

// endsHetjobSeparator reports whether the j at s[i] is the j of "hetjob" or
// "packjob", compared case-insensitively as sbatch does.
func endsHetjobSeparator(s string, i int) bool {
	if !hasPrefixFoldASCII(s[i+1:], "ob") {
		return false
	}
	return (i >= 3 && hasPrefixFoldASCII(s[i-3:], "het")) ||
		(i >= 4 && hasPrefixFoldASCII(s[i-4:], "pack"))
}

// hasPrefixFoldASCII is strings.HasPrefix with ASCII case folding. It works on
// bytes so that it is well defined for values that are not valid UTF-8.
func hasPrefixFoldASCII(s, lowerPrefix string) bool {
	if len(s) < len(lowerPrefix) {
		return false
	}
	for i := 0; i < len(lowerPrefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lowerPrefix[i] {
			return false
		}
	}
	return true
}

// EnvName maps a service or benchmark name to a fragment of a shell variable
// name, for building names such as NEL_SERVICE_<EnvName(name)>_URL. Every
// character outside [A-Za-z0-9_] (including each non-ASCII character and each
// byte of invalid UTF-8) becomes _, letters are upper-cased, and a leading
// digit gets a _ prefix so that the fragment is also a valid identifier on
// its own: "my-model.v2" gives "MY_MODEL_V2", "7b" gives "_7B".
//
// The mapping is not injective ("a-b" and "a.b" both give "A_B"); callers
// that derive several variables from user-chosen names must detect such
// collisions themselves.
func EnvName(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 1)
	if s != "" && '0' <= s[0] && s[0] <= '9' {
		b.WriteByte('_')
	}
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z':
			b.WriteRune(r - ('a' - 'A'))
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// HeredocDelimiter returns a delimiter for a quoted heredoc (<<'DELIM')
// containing body: base itself if no line of body equals it, otherwise the
// first of base_1, base_2, ... that no line equals. Bash ends a heredoc at the
// first line that is exactly the delimiter, so a body line equal to it would
// end the heredoc early and run the rest of the body as commands.
//
// Lines are split on \n only, because bash compares the whole line: "EOF\r"
// does not end a heredoc delimited by EOF. The result is meant for the
// quoted form <<'DELIM', in which the body is not expanded; with <<- leading
// tabs would also be stripped before the comparison, which is not accounted
// for here. base must itself be a plain word such as EOF or NEL_BODY.
func HeredocDelimiter(body, base string) string {
	lines := make(map[string]bool)
	for line := range strings.SplitSeq(body, "\n") {
		lines[line] = true
	}
	delim := base
	for n := 1; lines[delim]; n++ {
		delim = fmt.Sprintf("%s_%d", base, n)
	}
	return delim
}
