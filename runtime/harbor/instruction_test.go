package harbor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInstructionRender: the Jinja2 subset NeMo Evaluator's instruction
// templates use, each expected output worked out by hand from Jinja's
// rules (undefined is empty and false, ~ writes both sides as text, the
// result is trimmed, nothing is HTML-escaped).
func TestInstructionRender(t *testing.T) {
	vars := map[string]any{
		"workspace_path":  "/app",
		"original_prompt": "A & B < C",
		"base_commit":     "abc123",
		"instance":        map[string]any{"problem_statement": "broken", "repo_language": "Go"},
		"n":               int64(3),
		"ratio":           1.0,
		"flag":            true,
	}
	for src, want := range map[string]string{
		"Hello {{ workspace_path }}, prompt={{ original_prompt }}":                   "Hello /app, prompt=A & B < C",
		"<dir>{{workspace_path}}</dir>":                                              "<dir>/app</dir>",
		"\n\n  {{ instance.problem_statement }}  \n\n":                               "broken",
		"a {{ instance.repo_language ~ ' ' if instance.repo_language else '' }}repo": "a Go repo",
		"a {{ instance.missing ~ ' ' if instance.missing else '' }}repo":             "a repo",
		"[{{ nothing }}][{{ instance.nothing.deeper }}]":                             "[][]",
		"{{ 'x' if not nothing else 'y' }}":                                          "x",
		"{{ 'x' if nothing }}.":                                                      ".",
		"{{ n ~ '/' ~ ratio ~ '/' ~ flag }}":                                         "3/1.0/True",
		"{{ ('a' ~ 'b') if flag else 'c' }}":                                         "ab",
		"x {{- ' y ' -}} z":                                                          "x y z",
		"{ not a tag } {{ base_commit }}":                                            "{ not a tag } abc123",
	} {
		tmpl, err := ParseInstruction(src)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		got, err := tmpl.Render(vars)
		if err != nil || got != want {
			t.Errorf("%q renders %q, %v; want %q", src, got, err, want)
		}
	}
}

// TestInstructionRefused: what nel does not render is refused when the
// template is parsed, at its line and column, never written as text.
func TestInstructionRefused(t *testing.T) {
	for src, want := range map[string]string{
		"ok\n  {% if x %}y{% endif %}": "2:3: not supported yet: Jinja statements ({% … %})",
		"{# note #}":                   "1:1: not supported yet: Jinja comments ({# … #})",
		"a {{ x | upper }}":            `1:3: {{ x | upper }}: not supported yet: "|" here`,
		"{{ x":                         "1:1: {{ is never closed by }}",
		"{{ }}":                        "1:1: {{ }}: an empty expression",
		"{{ instance.task_dir }}":      "1:1: {{ instance.task_dir }}: not supported yet: task_dir",
		"{{ x and y }}":                `not supported yet: "and" here`,
		`{{ 'a\'b' }}`:                 `not supported yet: \ escapes`,
	} {
		_, err := ParseInstruction(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", src, err, want)
		}
	}
	tmpl, err := ParseInstruction("{{ tags }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(map[string]any{"tags": []any{"go"}}); err == nil || !strings.Contains(err.Error(), "[]interface {} value has no text form") {
		t.Errorf("a list rendered: %v", err)
	}
}

// TestTaskVars: the variables of a task as NeMo Evaluator's Harbor
// environment gives them, [metadata] over its own keys, repo_language
// from tests/config.json before the tags.
func TestTaskVars(t *testing.T) {
	dir := t.TempDir()
	task := Task{Name: "psf__requests-1", Dir: dir, Instruction: "Fix it.", Config: Config{
		AgentTimeout: 1800 * time.Second, VerifierTimeout: 1500 * time.Millisecond,
		Metadata: map[string]any{"base_commit": "c0ffee", "tags": []any{"swebench", "rust", "Go", "hard"}, "source": "swe"},
	}}
	v := task.Vars()
	inst, _ := v["instance"].(map[string]any)
	for k, want := range map[string]any{
		"task_id": "psf__requests-1", "source": "swe", "base_commit": "c0ffee", "repo_language": "Go",
		"agent_timeout_sec": int64(1800), "verifier_timeout_sec": 1.5,
		"workspace_path": "/app", "original_prompt": "Fix it.",
	} {
		if v[k] != want {
			t.Errorf("%s = %#v, want %#v", k, v[k], want)
		}
	}
	if inst["problem_statement"] != "Fix it." || inst["base_commit"] != "c0ffee" || inst["workspace_path"] != nil {
		t.Errorf("instance = %#v", inst)
	}
	if _, ok := v["task_dir"]; ok {
		t.Error("task_dir (a host path) is a variable")
	}
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "config.json"), []byte(`{"language": "js", "x": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := task.Vars()["repo_language"]; got != "js" {
		t.Errorf("with tests/config.json: repo_language %v, want js", got)
	}
	task.Config.Metadata["repo_language"] = "C"
	if got := task.Vars()["repo_language"]; got != "C" {
		t.Errorf("[metadata].repo_language: %v, want C", got)
	}
}

// TestItemVars: a byob record's variables as NeMo's byob environment gives
// them; a JSON number renders as the record wrote it.
func TestItemVars(t *testing.T) {
	v := ItemVars("swe-mini", map[string]any{"instance_id": "calc-1", "n": json.Number("7"), "zero": json.Number("0.0")}, "Fix add.sh.")
	tmpl, err := ParseInstruction("{{ source }}/{{ benchmark }}/{{ instance_id }}/{{ n }}/{{ 'z' if zero else 'nz' }}: {{ instance.problem_statement }} in {{ workspace_path }} ({{ original_prompt }})")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(v)
	if want := "byob/swe-mini/calc-1/7/nz: Fix add.sh. in /app (Fix add.sh.)"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}
