package shellquote

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/shelltest"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "''"},
		{"abc", "abc"},
		{"/data/run-1/model.v2", "/data/run-1/model.v2"},
		{"--tp=8", "--tp=8"},
		{"-n", "-n"},
		{"user@host:22", "user@host:22"},
		{"50%", "50%"},
		{"a,b+c_d", "a,b+c_d"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{`"`, `'"'`},
		{`\`, `'\'`},
		{"$HOME", "'$HOME'"},
		{"$(touch PWNED)", "'$(touch PWNED)'"},
		{"`id`", "'`id`'"},
		{"~", "'~'"},
		{"*", "'*'"},
		{"{a,b}", "'{a,b}'"},
		{"!", "'!'"},
		{"#", "'#'"},
		{"a\nb", "'a\nb'"},
		{"\t", "'\t'"},
		{"é", "'é'"},
		{"\xff", "'\xff'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJoin(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{}, ""},
		{[]string{""}, "''"},
		{[]string{"", ""}, "'' ''"},
		{[]string{"python", "-m", "eval"}, "python -m eval"},
		{[]string{"a", "b c"}, "a 'b c'"},
		{[]string{"it's", "$x"}, `'it'\''s' '$x'`},
	}
	for _, tt := range tests {
		if got := Join(tt.in); got != tt.want {
			t.Errorf("Join(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, s := range shelltest.Corpus() {
		if err := Check(s); err != nil {
			t.Errorf("Check(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range []string{"\x00", "a\x00b", "abc\x00"} {
		err := Check(s)
		if err == nil {
			t.Errorf("Check(%q) = nil, want an error", s)
			continue
		}
		if !strings.Contains(err.Error(), "NUL") {
			t.Errorf("Check(%q) = %q, want an error that names NUL", s, err)
		}
	}
}

// TestQuoteRoundTrip runs Quote's output through real shells, both as an
// argument and as the value of an assignment, and checks that every value
// comes back byte for byte and that nothing was executed.
func TestQuoteRoundTrip(t *testing.T) {
	corpus := shelltest.Corpus()
	var script strings.Builder
	for _, s := range corpus {
		fmt.Fprintf(&script, "printf '%%s\\0' %s\n", Quote(s))
	}
	var assign strings.Builder
	for _, s := range corpus {
		fmt.Fprintf(&assign, "v=%s\nprintf '%%s\\0' \"$v\"\n", Quote(s))
	}
	for _, sh := range shelltest.Shells(t) {
		for _, locale := range shelltest.Locales() {
			ctx := fmt.Sprintf("%s LC_ALL=%s", sh.Name, locale)
			shelltest.CompareArgs(t, ctx+" argument", shelltest.SplitNUL(shelltest.Run(t, sh, locale, script.String())), corpus)
			shelltest.CompareArgs(t, ctx+" assignment", shelltest.SplitNUL(shelltest.Run(t, sh, locale, assign.String())), corpus)
		}
	}
}

// TestJoinRoundTrip checks that Join keeps word boundaries: the
// whole corpus passed as one command line arrives as the same argument list.
func TestJoinRoundTrip(t *testing.T) {
	corpus := shelltest.Corpus()
	script := `printf '%s\0' ` + Join(corpus)
	for _, sh := range shelltest.Shells(t) {
		for _, locale := range shelltest.Locales() {
			got := shelltest.SplitNUL(shelltest.Run(t, sh, locale, script))
			shelltest.CompareArgs(t, fmt.Sprintf("%s LC_ALL=%s", sh.Name, locale), got, corpus)
		}
	}
}

// FuzzQuote checks the bash round trip for arbitrary strings, quoted alone
// (as an argument and as an assignment) and joined with an empty word
// between two copies. Without -fuzz it runs only the seed corpus (the
// hostile strings), one bash process per seed.
func FuzzQuote(f *testing.F) {
	for _, s := range shelltest.Corpus() {
		f.Add(s)
	}
	sh := shelltest.Shells(f)[0]
	f.Fuzz(func(t *testing.T, s string) {
		if Check(s) != nil {
			t.Skip("NUL bytes cannot pass through a shell")
		}
		if len(s) > 16<<10 {
			t.Skip("too long for a -c script")
		}
		q := Quote(s)
		script := "printf '%s\\0' " + q + "\nv=" + q + "\nprintf '%s\\0' \"$v\"\n" +
			"printf '%s\\0' " + Join([]string{s, "", s}) + "\n"
		got := shelltest.SplitNUL(shelltest.Run(t, sh, "C.UTF-8", script))
		shelltest.CompareArgs(t, fmt.Sprintf("Quote(%q) = %q", s, q), got, []string{s, s, s, "", s})
	})
}
