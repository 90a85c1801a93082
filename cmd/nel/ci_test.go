package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/exitcode"
	"go.yaml.in/yaml/v3"
)

// The CI templates users copy (deploy/ci): what they run must be nel's
// commands with nel's flags, and what they make of nel gate's exit status
// must be the table's.

func readCIYAML(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ci", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// githubScripts are the run: texts of every step, by job.
func githubScripts(t *testing.T, doc map[string]any) map[string][]string {
	t.Helper()
	jobs, _ := doc["jobs"].(map[string]any)
	out := map[string][]string{}
	for name, j := range jobs {
		steps, _ := j.(map[string]any)["steps"].([]any)
		for _, s := range steps {
			if run, ok := s.(map[string]any)["run"].(string); ok {
				out[name] = append(out[name], run)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no job has a run: step")
	}
	return out
}

// gitlabScripts are the before_script and script lines of every job.
func gitlabScripts(t *testing.T, doc map[string]any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for name, j := range doc {
		m, ok := j.(map[string]any)
		if !ok {
			continue
		}
		for _, key := range []string{"before_script", "script"} {
			lines, _ := m[key].([]any)
			for _, l := range lines {
				out[name] = append(out[name], l.(string))
			}
		}
	}
	return out
}

var shellSep = regexp.MustCompile(`\|\||&&|[|;]`)

// nelCommands returns each nel command line of a shell text as words,
// and the next command of its pipe ("" if none). It knows only the
// shell the templates use: one command per line, "double" quotes, >>.
func nelCommands(script string) (cmds [][]string, piped []string) {
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		segs := shellSep.Split(line, -1)
		for i, seg := range segs {
			words := strings.Fields(strings.ReplaceAll(seg, `"`, ""))
			if k := slices.IndexFunc(words, func(w string) bool { return w == ">>" || w == ">" }); k >= 0 {
				words = words[:k]
			}
			if len(words) == 0 || words[0] != "nel" {
				continue
			}
			next := ""
			if i+1 < len(segs) {
				next = strings.Fields(segs[i+1])[0]
			}
			cmds, piped = append(cmds, words[1:]), append(piped, next)
		}
	}
	return cmds, piped
}

// checkNelCommand: args name a nel command whose flags parse.
func checkNelCommand(t *testing.T, where string, args []string) string {
	t.Helper()
	root := newRoot(&env{io.Discard, io.Discard})
	c, rest, err := root.Find(args)
	if err != nil || c == root && !strings.HasPrefix(args[0], "-") {
		t.Errorf("%s: nel %s: no such command (%v)", where, strings.Join(args, " "), err)
		return ""
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Errorf("%s: nel %s: %v", where, strings.Join(args, " "), err)
	}
	return c.Name()
}

// TestCITemplates: every nel command the templates run exists with the
// flags they give it; each template evaluates (nel run, or nel compile
// piped into sbatch) and gates.
func TestCITemplates(t *testing.T) {
	for file, scripts := range map[string]func(*testing.T, map[string]any) map[string][]string{
		"github-actions.yml": githubScripts, "gitlab-ci.yml": gitlabScripts,
	} {
		used := map[string]bool{}
		for job, texts := range scripts(t, readCIYAML(t, file)) {
			for _, text := range texts {
				cmds, piped := nelCommands(text)
				for i, args := range cmds {
					name := checkNelCommand(t, file+": "+job, args)
					used[name] = true
					if name == "compile" && piped[i] != "sbatch" {
						t.Errorf("%s: %s: nel compile is piped into %q, want sbatch", file, job, piped[i])
					}
				}
			}
		}
		for _, want := range []string{"validate", "run", "compile", "fetch", "gate"} {
			if !used[want] {
				t.Errorf("%s runs no nel %s (ran %v)", file, want, used)
			}
		}
	}
}

var caseArm = regexp.MustCompile(`(?m)^\s*(\d+)\) (.*)$`)

// TestCIGateStatuses: the GitHub template's gate steps name each status of
// nel gate as the exit-code table does, and the GitLab template lets only
// INCONCLUSIVE fail softly.
func TestCIGateStatuses(t *testing.T) {
	gates := 0
	for job, texts := range githubScripts(t, readCIYAML(t, "github-actions.yml")) {
		for _, text := range texts {
			if !strings.Contains(text, "nel gate ") {
				continue
			}
			gates++
			arms := map[string]string{}
			for _, m := range caseArm.FindAllStringSubmatch(text, -1) {
				arms[m[1]] = m[2]
			}
			for _, r := range exitcode.Rows("gate") {
				code := strconv.Itoa(r.Code)
				if !strings.Contains(arms[code], r.Outcome) {
					t.Errorf("%s: gate status %s is %q in the table, the template says %q", job, code, r.Outcome, arms[code])
				}
			}
			if !strings.Contains(text, `exit "$status"`) {
				t.Errorf("%s: the gate step does not exit with nel gate's status", job)
			}
		}
	}
	if gates != 2 {
		t.Errorf("found %d gate steps in github-actions.yml, want 2", gates)
	}
	gate, _ := readCIYAML(t, "gitlab-ci.yml")["gate"].(map[string]any)
	af, _ := gate["allow_failure"].(map[string]any)
	codes, _ := af["exit_codes"].([]any)
	if want := exitcode.For("gate", "INCONCLUSIVE", false); len(codes) != 1 || codes[0] != want {
		t.Errorf("gitlab gate: allow_failure.exit_codes %v, want [%d] (INCONCLUSIVE)", codes, want)
	}
}
