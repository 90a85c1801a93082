package templates

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// hostileCorpus returns strings that break naive quoting: shell
// metacharacters, command substitutions that would create a file named PWNED
// in the working directory, whitespace and control characters, tricky
// Unicode, invalid UTF-8 and long values. None contains a NUL byte.
func hostileCorpus() []string {
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

// A shell is an interpreter the round-trip tests run generated scripts with.
type shell struct {
	name string
	args []string // arguments before the script
}

// testShells returns the shells to run round trips in. bash is what the
// product generates scripts for and must be present; sh (often dash) checks
// that the quoting is plain POSIX and is used when available.
func testShells(t testing.TB) []shell {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found on PATH")
	}
	shells := []shell{{name: "bash", args: []string{"--norc", "--noprofile", "-c"}}}
	if _, err := exec.LookPath("sh"); err == nil {
		shells = append(shells, shell{name: "sh", args: []string{"-c"}})
	}
	return shells
}

// sentinelName is a file placed in every scratch directory so that an
// unquoted glob such as * would expand to it and show up in the output.
const sentinelName = "sentinel"

// runScript runs script with sh in a fresh directory under locale and returns
// its standard output. It fails the test if the script fails or leaves any
// file other than the sentinel behind (such as PWNED).
func runScript(t testing.TB, sh shell, locale, script string) []byte {
	t.Helper()
	// Linux limits one argument, and so a -c script, to 128 KiB.
	if len(script) > 120<<10 {
		t.Fatalf("script is %d bytes, too long to pass with -c", len(script))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, sentinelName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh.name, append(slices.Clone(sh.args), script)...)
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
			t.Errorf("%s (LC_ALL=%s): script created %q in its working directory", sh.name, locale, e.Name())
		}
	}
	if runErr != nil {
		t.Fatalf("%s (LC_ALL=%s): %v\nstderr:\n%s", sh.name, locale, runErr, stderr.String())
	}
	return stdout.Bytes()
}

// splitNUL splits the output of printf '%s\0' ... into its arguments.
func splitNUL(out []byte) []string {
	if len(out) == 0 {
		return nil
	}
	parts := strings.Split(string(out), "\x00")
	if parts[len(parts)-1] != "" {
		return append(parts, "<missing final NUL>")
	}
	return parts[:len(parts)-1]
}

// compareArgs reports every argument that did not survive the round trip.
func compareArgs(t testing.TB, context string, got, want []string) {
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

// testLocales returns the locales scripts are run under: the byte-oriented C
// locale and a UTF-8 one, in which bash decodes multibyte characters.
func testLocales() []string { return []string{"C", "C.UTF-8"} }

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

func TestQuoteArgs(t *testing.T) {
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
		if got := QuoteArgs(tt.in); got != tt.want {
			t.Errorf("QuoteArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheckShellSafe(t *testing.T) {
	for _, s := range hostileCorpus() {
		if err := CheckShellSafe(s); err != nil {
			t.Errorf("CheckShellSafe(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range []string{"\x00", "a\x00b", "abc\x00"} {
		err := CheckShellSafe(s)
		if err == nil {
			t.Errorf("CheckShellSafe(%q) = nil, want an error", s)
			continue
		}
		if !strings.Contains(err.Error(), "NUL") {
			t.Errorf("CheckShellSafe(%q) = %q, want an error that names NUL", s, err)
		}
	}
}

// TestQuoteRoundTrip runs Quote's output through real shells, both as an
// argument and as the value of an assignment, and checks that every value
// comes back byte for byte and that nothing was executed.
func TestQuoteRoundTrip(t *testing.T) {
	corpus := hostileCorpus()
	var script strings.Builder
	for _, s := range corpus {
		fmt.Fprintf(&script, "printf '%%s\\0' %s\n", Quote(s))
	}
	var assign strings.Builder
	for _, s := range corpus {
		fmt.Fprintf(&assign, "v=%s\nprintf '%%s\\0' \"$v\"\n", Quote(s))
	}
	for _, sh := range testShells(t) {
		for _, locale := range testLocales() {
			ctx := fmt.Sprintf("%s LC_ALL=%s", sh.name, locale)
			compareArgs(t, ctx+" argument", splitNUL(runScript(t, sh, locale, script.String())), corpus)
			compareArgs(t, ctx+" assignment", splitNUL(runScript(t, sh, locale, assign.String())), corpus)
		}
	}
}

// TestQuoteArgsRoundTrip checks that QuoteArgs keeps word boundaries: the
// whole corpus passed as one command line arrives as the same argument list.
func TestQuoteArgsRoundTrip(t *testing.T) {
	corpus := hostileCorpus()
	script := `printf '%s\0' ` + QuoteArgs(corpus)
	for _, sh := range testShells(t) {
		for _, locale := range testLocales() {
			got := splitNUL(runScript(t, sh, locale, script))
			compareArgs(t, fmt.Sprintf("%s LC_ALL=%s", sh.name, locale), got, corpus)
		}
	}
}

// FuzzQuote checks the bash round trip for arbitrary strings. Without -fuzz
// it runs only the seed corpus, one bash process per seed.
func FuzzQuote(f *testing.F) {
	for _, s := range hostileCorpus() {
		f.Add(s)
	}
	sh := testShells(f)[0]
	f.Fuzz(func(t *testing.T, s string) {
		if CheckShellSafe(s) != nil {
			t.Skip("NUL bytes cannot pass through a shell")
		}
		if len(s) > 16<<10 {
			t.Skip("too long for a -c script")
		}
		q := Quote(s)
		script := "printf '%s\\0' " + q + "\nv=" + q + "\nprintf '%s\\0' \"$v\"\n"
		got := splitNUL(runScript(t, sh, "C.UTF-8", script))
		compareArgs(t, fmt.Sprintf("Quote(%q) = %q", s, q), got, []string{s, s})
	})
}

func TestSbatchValue(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", `""`},
		{"gpu:8", "gpu:8"},
		{"01:00:00", "01:00:00"},
		{"/scratch/logs/%x-%j.out", "/scratch/logs/%x-%j.out"},
		{"a#b", `a\#b`},
		{"#1", `\#1`},
		{"# x", `"\# x"`},
		{"my job", `"my job"`},
		{"a\tb", "\"a\tb\""},
		{`say "hi"`, `"say \"hi\""`},
		{`"`, `"\""`},
		{"it's", `"it\'s"`},
		{`C:\dir`, `C:\\dir`},
		{`a\#b`, `a\\\#b`},
		{"run-hetjob-1", `run-het\job-1`},
		{"PackJob", `Pack\Job`},
		{"HETJOBS hetjob", `"HET\JOBS het\job"`},
		{"jobjob", "jobjob"},
		{"é🙂", "é🙂"},
	}
	for _, tt := range tests {
		got, err := SbatchValue(tt.in)
		if err != nil {
			t.Errorf("SbatchValue(%q) error: %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("SbatchValue(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}

	for _, in := range []string{"a\nb", "\n", "a\rb", "trailing\r", "a\x00b"} {
		got, err := SbatchValue(in)
		if err == nil {
			t.Errorf("SbatchValue(%q) = %q, want an error", in, got)
			continue
		}
		if !strings.Contains(err.Error(), "#SBATCH values must be one line") {
			t.Errorf("SbatchValue(%q) error %q does not say why", in, err)
		}
	}
	if _, err := SbatchValue("a\nb"); err == nil || !strings.Contains(err.Error(), "contains a newline") {
		t.Errorf("SbatchValue with a newline: error %v, want one that says it contains a newline", err)
	}
}

// TestSbatchValueParses feeds SbatchValue's output to models of sbatch's
// #SBATCH tokenizer and checks that each value comes back as exactly one
// argument, unchanged, with a trailing comment ignored. sbatch itself is
// rarely installed where tests run; the models follow _get_argument in
// src/sbatch/opt.c.
func TestSbatchValueParses(t *testing.T) {
	var values []string
	for _, s := range hostileCorpus() {
		if !strings.ContainsAny(s, "\n\r") {
			values = append(values, s)
		}
	}
	values = append(values, "hetjob", "a packjob b", "HetJob#1", `"quoted"`, `'single'`, `\"`, "a\\", "\v\f")
	for _, d := range []sbatchDialect{legacySbatch, modernSbatch} {
		for _, s := range values {
			v, err := SbatchValue(s)
			if err != nil {
				t.Errorf("SbatchValue(%q): %v", s, err)
				continue
			}
			line := " --job-name=" + v + "  # trailing comment\n"
			got, err := parseSbatchLine(line, d)
			if err != nil {
				t.Errorf("%v: #SBATCH%s: %v", d, strings.TrimSuffix(line, "\n"), err)
				continue
			}
			if want := []string{"--job-name=" + s}; !slices.Equal(got, want) {
				t.Errorf("%v: #SBATCH%s parses as %q, want %q", d, strings.TrimSuffix(line, "\n"), got, want)
			}
		}
	}
}

// sbatchDialect selects which generation of sbatch's tokenizer to model.
type sbatchDialect int

const (
	// legacySbatch is the tokenizer before Slurm 17.11: only " quotes, and an
	// unescaped # starts a comment even inside quotes.
	legacySbatch sbatchDialect = iota
	// modernSbatch is the tokenizer from Slurm 17.11 on: " and ' quote, # is
	// literal inside quotes, an unmatched quote is fatal, and the first
	// hetjob/packjob on the line is blanked out before tokenizing.
	modernSbatch
)

func (d sbatchDialect) String() string {
	if d == legacySbatch {
		return "legacy sbatch"
	}
	return "modern sbatch"
}

// cIsSpace is isspace(3) in the C locale.
func cIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// parseSbatchLine models how sbatch splits the text after "#SBATCH" into
// arguments.
func parseSbatchLine(line string, d sbatchDialect) ([]string, error) {
	b := []byte(line)
	if d == modernSbatch {
		for _, word := range []string{"hetjob", "packjob"} {
			if i := indexFoldASCII(string(b), word); i >= 0 {
				copy(b[i:], strings.Repeat(" ", len(word)))
			}
		}
	}
	var args []string
	for pos := 0; ; {
		arg, n, err := sbatchArgument(b[pos:], d)
		if err != nil {
			return args, err
		}
		if arg == nil {
			return args, nil
		}
		args = append(args, string(arg))
		pos += n
	}
}

// sbatchArgument models one call of _get_argument: it returns the next
// argument (nil when there is none, which ends the line) and the number of
// bytes consumed.
func sbatchArgument(b []byte, d sbatchDialect) (arg []byte, n int, err error) {
	i := 0
	for i < len(b) && cIsSpace(b[i]) {
		i++
	}
	if i == len(b) {
		return nil, i, nil
	}
	if d == modernSbatch && b[i] == ':' {
		return nil, i, fmt.Errorf("unexpected ':' at offset %d", i)
	}
	escape, quoted := false, false
	var q byte
scan:
	for i < len(b) && (quoted || !cIsSpace(b[i])) && b[i] != '\n' && b[i] != 0 {
		c := b[i]
		switch {
		case escape:
			escape = false
		case c == '\\':
			escape = true
			i++
			continue
		case d == legacySbatch && c == '"':
			quoted = !quoted
			i++
			continue
		case d == modernSbatch && quoted:
			if c == q {
				quoted = false
				i++
				continue
			}
		case d == modernSbatch && (c == '"' || c == '\''):
			quoted, q = true, c
			i++
			continue
		case c == '#':
			// An unescaped # starts a comment. In the legacy tokenizer this
			// case is reached even inside quotes.
			i = len(b)
			break scan
		}
		arg = append(arg, c)
		i++
	}
	if d == modernSbatch && quoted {
		return nil, i, fmt.Errorf("unmatched %c", q)
	}
	return arg, i, nil
}

// indexFoldASCII is strings.Index with ASCII case folding, as strcasestr(3).
func indexFoldASCII(s, lowerSub string) int {
	for i := 0; i+len(lowerSub) <= len(s); i++ {
		if hasPrefixFoldASCII(s[i:], lowerSub) {
			return i
		}
	}
	return -1
}

func TestEnvName(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"my-model.v2", "MY_MODEL_V2"},
		{"", ""},
		{"ABC", "ABC"},
		{"llama3_70b", "LLAMA3_70B"},
		{"7b", "_7B"},
		{"9", "_9"},
		{"_x", "_X"},
		{"a b", "A_B"},
		{"$(x)", "__X_"},
		{"é", "_"},
		{"🙂", "_"},
		{"\xff\xfe", "__"},
		{"mmlu-pro/chat", "MMLU_PRO_CHAT"},
	}
	for _, tt := range tests {
		if got := EnvName(tt.in); got != tt.want {
			t.Errorf("EnvName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	ident := regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	for _, s := range hostileCorpus() {
		if got := EnvName(s); s != "" && !ident.MatchString(got) {
			t.Errorf("EnvName(%q) = %q, not an upper-case shell identifier", s, got)
		}
	}
}

func TestHeredocDelimiter(t *testing.T) {
	tests := []struct {
		body, base, want string
	}{
		{"", "EOF", "EOF"},
		{"hello\nworld", "EOF", "EOF"},
		{"EOF", "EOF", "EOF_1"},
		{"a\nEOF\nb", "EOF", "EOF_1"},
		{"a\nEOF\n", "EOF", "EOF_1"},
		{"EOF\nEOF_1", "EOF", "EOF_2"},
		{"EOF_2\nEOF\nEOF_1", "EOF", "EOF_3"},
		{"EOF_1", "EOF", "EOF"},
		{" EOF", "EOF", "EOF"},
		{"EOF ", "EOF", "EOF"},
		{"EOF\r", "EOF", "EOF"},
		{"xEOF", "EOF", "EOF"},
	}
	for _, tt := range tests {
		if got := HeredocDelimiter(tt.body, tt.base); got != tt.want {
			t.Errorf("HeredocDelimiter(%q, %q) = %q, want %q", tt.body, tt.base, got, tt.want)
		}
	}
}

// TestHeredocRoundTrip checks in bash that a quoted heredoc with the chosen
// delimiter reproduces its body exactly, including bodies containing the base
// delimiter, near misses of it and hostile text.
func TestHeredocRoundTrip(t *testing.T) {
	var hostile []string
	for _, s := range hostileCorpus() {
		if len(s) < 1000 {
			hostile = append(hostile, s)
		}
	}
	bodies := []string{
		"",
		"plain text",
		"D",
		"before\nD\nafter $(touch PWNED)",
		"D\nD_1\nD_2",
		"D \n D\nD\r\n\tD",
		"$(touch PWNED)\n`touch PWNED`\n$HOME\n\\\n'\n\"",
		strings.Join(hostile, "\n") + "\nD\n",
	}
	sh := testShells(t)[0]
	for _, body := range bodies {
		d := HeredocDelimiter(body, "D")
		if slices.Contains(strings.Split(body, "\n"), d) {
			t.Errorf("HeredocDelimiter(%q, \"D\") = %q, which is a line of the body", body, d)
			continue
		}
		script := "cat <<'" + d + "'\n" + body + "\n" + d + "\n"
		for _, locale := range testLocales() {
			got := string(runScript(t, sh, locale, script))
			if want := body + "\n"; got != want {
				t.Errorf("LC_ALL=%s: heredoc with delimiter %q:\ngot  %q\nwant %q", locale, d, got, want)
			}
		}
	}
}
