package main

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

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/testenv"
)

// TestREADME keeps the README true to the tool: its quick start runs as
// written and prints exactly what it shows, its command list names real
// commands and flags, and its table of NeMo Evaluator configs says what
// nel does with each of them.
func TestREADME(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	root, err = filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("quick start", func(t *testing.T) { checkQuickStart(t, root, section(t, readme, "Quick start")) })
	t.Run("commands", func(t *testing.T) { checkCommands(t, section(t, readme, "Commands")) })
	t.Run("own endpoint", func(t *testing.T) { checkOwnEndpoint(t, section(t, readme, "Your own endpoint, no recipe")) })
	t.Run("troubleshooting", func(t *testing.T) { checkTroubleshooting(t, root, section(t, readme, "Troubleshooting")) })
	t.Run("nemo configs", func(t *testing.T) {
		checkNemoTable(t, root, section(t, readme, "What works today, and what does not yet"))
	})
}

// section returns the text under "## title" up to the next "## ".
func section(t *testing.T, readme, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README has no section %q", title)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

var fenceRE = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```$")

// fences returns the bodies of a section's fenced code blocks, in order.
func fences(s string) []string {
	var out []string
	for _, m := range fenceRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[2])
	}
	return out
}

// makeRecipe returns the recipe lines and prerequisites of a Makefile
// target.
func makeRecipe(t *testing.T, makefile, target string) (prereqs string, lines []string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:(.*)\n((?:\t.*\n)*)`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile has no target %q", target)
	}
	for _, l := range strings.Split(strings.TrimRight(m[2], "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	return strings.TrimSpace(m[1]), lines
}

var headlineCounts = regexp.MustCompile(`\((\d+)/(\d+) correct\)`)

// checkQuickStart: the two commands are the Makefile targets the README
// says they are; the evaluation they run prints the README's output block
// byte for byte (the simulated endpoint answers deterministically); the
// DuckDB query and the report command the section shows work on its
// results.
func checkQuickStart(t *testing.T, root, qs string) {
	blocks := fences(qs)
	if len(blocks) < 2 {
		t.Fatalf("the quick start has %d code blocks, want the commands and the output", len(blocks))
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(blocks[0]), "\n") {
		c, _, _ := strings.Cut(l, "#")
		cmds = append(cmds, strings.TrimSpace(c))
	}
	if !slices.Equal(cmds, []string{"make example", "make test"}) {
		t.Fatalf("the quick start's commands are %q, want exactly make example and make test", cmds)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`make example` runs `([^`]+)`").FindStringSubmatch(qs)
	if m == nil {
		t.Fatal("the quick start does not say what `make example` runs")
	}
	example := m[1]
	if _, lines := makeRecipe(t, string(mk), "example"); !slices.Equal(lines, []string{example}) {
		t.Errorf("make example runs %q, the README says %q", lines, example)
	}
	if prereqs, lines := makeRecipe(t, string(mk), "test"); !strings.Contains(" "+prereqs+" ", " testdeps ") || len(lines) != 1 || !strings.Contains(lines[0], "./...") {
		t.Errorf("make test is %q: %q; the README says it installs (testdeps) and runs the whole suite", prereqs, lines)
	}
	if _, lines := makeRecipe(t, string(mk), "testdeps"); !slices.Equal(lines, []string{".ci/testdeps"}) {
		t.Errorf("make testdeps runs %q, the README says .ci/testdeps", lines)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^make test$`).Match(ci) {
		t.Error(".ci/run does not run `make test`, the README's test command")
	}

	// The example, run as `make example` runs it, in a copy of the
	// files it reads (it writes examples/eval_results/, beside the recipe).
	args := strings.Fields(example)
	if args[0] != "bin/nel" {
		t.Fatalf("make example runs %q, want bin/nel …", example)
	}
	work := t.TempDir()
	copyTree(t, filepath.Join(root, "examples", "quickstart.cue"), filepath.Join(work, "examples", "quickstart.cue"))
	copyTree(t, filepath.Join(root, "examples", "data"), filepath.Join(work, "examples", "data"))
	bin := realNelRun(t) // built from this directory, before Chdir
	// The commands run in work (a subtest, so that the working directory
	// is restored for what follows).
	t.Run("make example", func(t *testing.T) {
		t.Chdir(work)
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stdout, stderr bytes.Buffer
		if code := run(args[1:], &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", example, code, stdout.String(), stderr.String())
		}
		if got, want := stdout.String(), blocks[1]; got != want {
			if !*update {
				t.Fatalf("%s printed\n%s\nthe README shows\n%s(go test ./cmd/nel -run TestREADME -update rewrites the README's block)", example, got, want)
			}
			rewriteREADMEBlock(t, filepath.Join(root, "README.md"), want, got)
		}
		// The report says which scorer the headline is and why
		// scorer:numeric_match reads below it, beside the figure.
		md, err := os.ReadFile(filepath.Join("examples", "eval_results", "quickstart", "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"| `scorer:numeric_match` |", "- The headline pass@1 is scored by gsm8k's own scorer, answer\\_line;",
			`- scorer:numeric\_match is NeMo Evaluator's numeric\_match, kept as it is so that its numbers match NeMo's:`} {
			if !strings.Contains(string(md), want) {
				t.Errorf("report.md does not say %q", want)
			}
		}

		// The HTML report command.
		r := regexp.MustCompile("`bin/nel (report [^`]+)`").FindStringSubmatch(qs)
		if r == nil {
			t.Fatal("the quick start shows no report command")
		}
		stdout.Reset()
		stderr.Reset()
		if code := run(strings.Fields(r[1]), &stdout, &stderr); code != 0 {
			t.Fatalf("nel %s: exit %d\n%s", r[1], code, stderr.String())
		}
		out := strings.Fields(r[1])
		page, err := os.ReadFile(out[len(out)-1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || !bytes.Contains(page, []byte("gsm8k")) {
			t.Errorf("nel %s wrote no HTML report of gsm8k:\n%.300s", r[1], page)
		}
		if !bytes.Contains(page, []byte("<li>scorer:numeric_match is NeMo Evaluator&#39;s numeric_match, kept as it is")) {
			t.Errorf("nel %s: the HTML report does not explain scorer:numeric_match beside it", r[1])
		}
	})
	if t.Failed() {
		return
	}

	// The DuckDB query, and the same rows counted: DuckDB sees the
	// samples and the correct ones the headline counts.
	q := regexp.MustCompile("`(SELECT [^`]+)`").FindStringSubmatch(qs)
	if q == nil {
		t.Fatal("the quick start shows no DuckDB query")
	}
	rows := testenv.DuckDBQuery(t, work, q[1])
	if len(rows) == 0 {
		t.Errorf("%s: no rows", q[1])
	}
	for _, r := range rows {
		if avg, ok := r["avg(reward)"].(float64); !ok || avg < 0 || avg > 1 {
			t.Errorf("%s: row %v has no avg(reward) in [0, 1]", q[1], r)
		}
	}
	src := regexp.MustCompile(`FROM ('[^']+')`).FindStringSubmatch(q[1])
	if src == nil {
		t.Fatalf("%s: no FROM 'glob'", q[1])
	}
	counts := testenv.DuckDBQuery(t, work, "SELECT count(*) AS n, sum(reward) AS s FROM "+src[1]+" WHERE outcome != 'infra_error'")
	h := headlineCounts.FindStringSubmatch(blocks[1])
	if h == nil || len(counts) != 1 || fmt.Sprint(counts[0]["n"]) != h[2] || fmt.Sprint(counts[0]["s"]) != h[1] {
		t.Errorf("DuckDB counts %v over %s; the headline says %v", counts, src[1], h)
	}
	// What the README and the report say of numeric_match is what
	// happens: it disagrees with pass@1 on some samples, each a correct
	// answer whose target ends in 0.
	gap := testenv.DuckDBQuery(t, work, "SELECT count(*) AS n, count(*) FILTER (WHERE reward = 1 AND expected LIKE '%0') AS zero FROM "+src[1]+
		" WHERE reward != scores['scorer:numeric_match']")
	if len(gap) != 1 || fmt.Sprint(gap[0]["n"]) == "0" || fmt.Sprint(gap[0]["n"]) != fmt.Sprint(gap[0]["zero"]) {
		t.Errorf("samples where pass@1 and scorer:numeric_match disagree: %v; want some, each a correct answer to a target ending in 0", gap)
	}
}

var flagRE = regexp.MustCompile(`(?:^|[\s\[|])(--?[a-zA-Z][a-zA-Z-]*)`)

// checkFlags: every flag the README shows in usage for command (nel
// run) is one its -h (help) lists.
func checkFlags(t *testing.T, command, usage, help string) {
	t.Helper()
	for _, m := range flagRE.FindAllStringSubmatch(usage, -1) {
		name := strings.TrimLeft(m[1], "-")
		if !regexp.MustCompile(`(?m)^\s+(-[a-zA-Z], )?--?` + regexp.QuoteMeta(name) + `\b`).MatchString(help) {
			t.Errorf("the README shows %s for %s, which its -h does not list:\n%s", m[1], command, help)
		}
	}
}

// checkOwnEndpoint: the section's commands are nel's, with flags their
// -h lists, and the quick recipe's name it gives is the one quick mode
// keeps.
func checkOwnEndpoint(t *testing.T, s string) {
	blocks := fences(s)
	if len(blocks) == 0 {
		t.Fatal("the section has no code block")
	}
	n := 0
	for _, line := range strings.Split(blocks[0], "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "bin/nel" {
			continue
		}
		n++
		var out bytes.Buffer
		run([]string{f[1], "-h"}, &out, &out)
		checkFlags(t, "nel "+f[1], line, out.String())
	}
	if n < 3 {
		t.Errorf("the section shows %d nel commands, want validate, run and list", n)
	}
	m := regexp.MustCompile("`\\.nel/recipe/([^`]+)`").FindStringSubmatch(s)
	if want := (compiler.Quick{Bench: "gsm8k"}).QuickName(); m == nil || m[1] != want {
		t.Errorf("the section names the kept quick recipe %q, quick mode keeps %q", m, want)
	}
}

// checkCommands: every line of the command list names a real command of
// nel or nel-run, and every flag it shows is one that command takes; and
// every command nel's usage lists is in the README.
func checkCommands(t *testing.T, cs string) {
	blocks := fences(cs)
	if len(blocks) == 0 {
		t.Fatal("the Commands section has no code block")
	}
	nelRun := filepath.Join(realNelRun(t), "nel-run")
	listed := map[string]bool{}
	for _, line := range strings.Split(blocks[0], "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		bin, sub := f[0], f[1]
		usage := line
		if i := strings.Index(usage, "  "); i > 0 {
			usage = usage[:i] // the description follows two spaces
		}
		usage, _, _ = strings.Cut(usage, " -- ") // the wrapped command's arguments
		var help string
		switch bin {
		case "nel":
			listed[sub] = true
			var out bytes.Buffer
			if sub == "version" {
				if code := run([]string{"version"}, &out, &out); code != 0 || !strings.HasPrefix(out.String(), "nel ") {
					t.Errorf("nel version: exit %d: %s", code, out.String())
				}
				continue
			}
			run([]string{sub, "-h"}, &out, &out)
			help = out.String()
		case "nel-run":
			out, _ := exec.Command(nelRun, sub, "-h").CombinedOutput()
			help = string(out)
		default:
			t.Errorf("the command list names %q, not nel or nel-run: %s", bin, line)
			continue
		}
		if !strings.Contains(help, bin+" "+sub) {
			t.Errorf("%s %s -h does not show its usage (not a command?):\n%s", bin, sub, help)
			continue
		}
		checkFlags(t, bin+" "+sub, usage, help)
	}
	var out bytes.Buffer
	run([]string{"help"}, &out, &out)
	for _, m := range regexp.MustCompile(`(?m)^  nel ([a-z]+)`).FindAllStringSubmatch(out.String(), -1) {
		if !listed[m[1]] {
			t.Errorf("nel %s is in nel's usage but not in the README's command list", m[1])
		}
	}
	if len(listed) < 10 {
		t.Errorf("the README lists %d nel commands; the list was not read", len(listed))
	}
}

var nemoRowRE = regexp.MustCompile("(?m)^\\| `([^`]+\\.yaml)` \\| (compiles|validates; not yet: `([^`]+)`) \\|$")

// checkNemoTable: each walkthrough config in examples/nemo has a row, and
// the row says what validate and compile do with it, run from that folder.
func checkNemoTable(t *testing.T, root, ww string) {
	dir := filepath.Join(root, "examples", "nemo")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, m := range nemoRowRE.FindAllStringSubmatch(ww, -1) {
		rows[m[1]] = m
	}
	if len(files) == 0 || len(rows) != len(files) {
		t.Errorf("examples/nemo has %d configs, the README's table %d rows", len(files), len(rows))
	}
	t.Chdir(dir)
	fake := filepath.Join(t.TempDir(), "nel-run")
	if err := os.WriteFile(fake, []byte(fakeNelRun), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		row, ok := rows[name]
		if !ok {
			t.Errorf("examples/nemo/%s has no row in the README's table", name)
			continue
		}
		var out bytes.Buffer
		if code := run([]string{"validate", name}, &out, &out); code != 0 {
			t.Errorf("nel validate %s: exit %d; the README says it validates\n%s", name, code, out.String())
		}
		var stdout, stderr bytes.Buffer
		code := run([]string{"compile", "--nel-run", fake, name}, &stdout, &stderr)
		switch {
		case row[2] == "compiles" && code != 0:
			t.Errorf("nel compile %s: exit %d; the README says it compiles\n%s", name, code, stderr.String())
		case row[2] != "compiles" && (code != 2 || !strings.Contains(stderr.String(), "not supported yet: "+row[3])):
			t.Errorf("nel compile %s: exit %d; the README says it stops at %q\n%s", name, code, row[3], stderr.String())
		}
	}
}

var troubleRowRE = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// checkTroubleshooting: every message the troubleshooting table explains
// is still said by nel: it appears in a Go source file outside the tests.
func checkTroubleshooting(t *testing.T, root, ts string) {
	var sources []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sources = append(sources, string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(sources, "\n")
	rows := troubleRowRE.FindAllStringSubmatch(ts, -1)
	if len(rows) < 10 {
		t.Fatalf("the troubleshooting table has %d rows; it was not read", len(rows))
	}
	for _, m := range rows {
		if !strings.Contains(all, m[1]) {
			t.Errorf("the troubleshooting table explains %q, which no Go source says any more", m[1])
		}
	}
}

// rewriteREADMEBlock replaces the one fenced block of the README whose
// body is old with new (-update).
func rewriteREADMEBlock(t *testing.T, path, old, new string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	from, to := "```\n"+old+"```\n", "```\n"+new+"```\n"
	if n := strings.Count(string(raw), from); n != 1 {
		t.Fatalf("the README holds the quick start's output block %d times, want once", n)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the README's quick start output:\n%s", new)
}

// copyTree copies a file or a folder of files.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
