// Package shelltest runs generated shell text through real shells, for the
// tests of what nel quotes for a shell (runtime/shellquote) and of what it
// embeds in scripts (templates: heredocs). It holds the hostile strings
// both sets of tests feed in and the harness that catches an injection by
// the file it would create.
package shelltest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Corpus returns strings that break naive quoting: shell
// metacharacters, command substitutions that would create a file named PWNED
// in the working directory, whitespace and control characters, tricky
// Unicode, invalid UTF-8 and long values. None contains a NUL byte.
func Corpus() []string {
	corpus := []string{
		"",
		"plain",
		"/data/run-1/model.v2",
		"--tp=8",
		"'",
		"''",
		"'''",
		`"`,
		`""`,
		`\`,
		`\\`,
		`\'`,
		`'\''`,
		`it's`,
		`say "hi"`,
		"$(touch PWNED)",
		"'$(touch PWNED)'",
		`"$(touch PWNED)"`,
		"x'$(touch PWNED)'y",
		"`touch PWNED`",
		"'`touch PWNED`'",
		"; touch PWNED",
		"'; touch PWNED; '",
		"a && touch PWNED",
		"a || touch PWNED",
		"| touch PWNED",
		"a > PWNED",
		"a >> PWNED",
		"< /etc/passwd",
		"& touch PWNED &",
		"$(",
		")",
		"$((1+1))",
		"<(touch PWNED)",
		"a\nb",
		"\n",
		"\n\n",
		"a\n$(touch PWNED)\n",
		"#",
		"# comment",
		"a #b",
		"$HOME",
		"${HOME}",
		"$IFS",
		"${IFS}",
		"a${IFS}b",
		"$0",
		"$$",
		"$@",
		"$*",
		"$'\\x41'",
		`$"msg"`,
		"*",
		"*.go",
		"?",
		"[a-z]",
		"{a,b}",
		"{1..3}",
		"~",
		"~root",
		"~/x",
		"a=~/x",
		"!",
		"!!",
		"!$",
		"^a^b",
		"-",
		"-n",
		"-e",
		"--",
		"--help",
		"-v x",
		"\t",
		"a\tb",
		" ",
		"  leading and trailing  ",
		"\r",
		"a\r\nb",
		"\v\f",
		"\x01\x02\x1b[31mred\x1b[0m\x7f",
		"FOO=bar",
		"%1",
		"héllo wörld",
		"\u200f",        // right-to-left mark
		"abc\u202edef",  // right-to-left override
		"\u2066x\u2069", // isolates
		"🙂",             // emoji
		"👩‍👩‍👧",         // emoji ZWJ sequence
		"e\u0301",       // combining accent
		"\u00a0",        // no-break space
		"\u2028\u2029",  // Unicode line and paragraph separators
		"＇ＦＵＬＬ＇",        // fullwidth apostrophes
		"\ufeffbom",     // byte order mark
		"\xff",          // invalid UTF-8
		"\xc3\x28",      // invalid UTF-8 sequence
		"a\x80b'\xfe'",  // invalid UTF-8 around quotes
		"\xed\xa0\x80",  // encoded surrogate
		"\xe5\x5c",      // 0x5c (\) as a would-be trail byte
		"\x81\x27",      // 0x27 (') as a would-be trail byte
		"EOF",
		"D",
	}
	corpus = append(corpus,
		strings.Repeat("'", 1000),
		strings.Repeat(`'$(touch PWNED)"\`+"`touch PWNED`;#\n", 300),
		strings.Repeat("a", 8<<10),
		strings.Repeat("🙂'", 1000),
	)
	return corpus
}

// A Shell is an interpreter the round-trip tests run generated scripts with.
type Shell struct {
	Name string
	Args []string // arguments before the script
}

// Shells returns the shells to run round trips in. bash is what the
// product generates scripts for and must be present; sh (often dash) checks
// that the quoting is plain POSIX and is used when available.
func Shells(t testing.TB) []Shell {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found on PATH")
	}
	shells := []Shell{{Name: "bash", Args: []string{"--norc", "--noprofile", "-c"}}}
	if _, err := exec.LookPath("sh"); err == nil {
		shells = append(shells, Shell{Name: "sh", Args: []string{"-c"}})
	}
	return shells
}

// sentinelName is a file placed in every scratch directory so that an
// unquoted glob such as * would expand to it and show up in the output.
const sentinelName = "sentinel"

// Run runs script with sh in a fresh directory under locale and returns
// its standard output. It fails the test if the script fails or leaves any
// file other than the sentinel behind (such as PWNED).
func Run(t testing.TB, sh Shell, locale, script string) []byte {
	t.Helper()
	// Linux limits one argument, and so a -c script, to 128 KiB.
	if len(script) > 120<<10 {
		t.Fatalf("script is %d bytes, too long to pass with -c", len(script))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, sentinelName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh.Name, append(slices.Clone(sh.Args), script)...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/nonexistent/home",
		"LC_ALL=" + locale,
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	// Look for injected side effects first: a quoting bug usually also
	// breaks the script's syntax, and the file is the more telling symptom.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != sentinelName {
			t.Errorf("%s (LC_ALL=%s): script created %q in its working directory", sh.Name, locale, e.Name())
		}
	}
	if runErr != nil {
		t.Fatalf("%s (LC_ALL=%s): %v\nstderr:\n%s", sh.Name, locale, runErr, stderr.String())
	}
	return stdout.Bytes()
}

// SplitNUL splits the output of printf '%s\0' ... into its arguments.
func SplitNUL(out []byte) []string {
	if len(out) == 0 {
		return nil
	}
	parts := strings.Split(string(out), "\x00")
	if parts[len(parts)-1] != "" {
		return append(parts, "<missing final NUL>")
	}
	return parts[:len(parts)-1]
}

// CompareArgs reports every argument that did not survive the round trip.
func CompareArgs(t testing.TB, context string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d arguments, want %d", context, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("%s: argument %d = %q, want %q", context, i, got[i], want[i])
		}
	}
}

// Locales returns the locales scripts are run under: the byte-oriented C
// locale and a UTF-8 one, in which bash decodes multibyte characters.
func Locales() []string { return []string{"C", "C.UTF-8"} }
