package templates

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/shelltest"
)

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
	for _, s := range shelltest.Corpus() {
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
	for _, s := range shelltest.Corpus() {
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
	for _, s := range shelltest.Corpus() {
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
	sh := shelltest.Shells(t)[0]
	for _, body := range bodies {
		d := HeredocDelimiter(body, "D")
		if slices.Contains(strings.Split(body, "\n"), d) {
			t.Errorf("HeredocDelimiter(%q, \"D\") = %q, which is a line of the body", body, d)
			continue
		}
		script := "cat <<'" + d + "'\n" + body + "\n" + d + "\n"
		for _, locale := range shelltest.Locales() {
			got := string(shelltest.Run(t, sh, locale, script))
			if want := body + "\n"; got != want {
				t.Errorf("LC_ALL=%s: heredoc with delimiter %q:\ngot  %q\nwant %q", locale, d, got, want)
			}
		}
	}
}
