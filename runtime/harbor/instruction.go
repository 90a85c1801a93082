package harbor

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// An instruction template (a benchmark's instruction_template, NeMo
// Evaluator's Jinja2 .md files) replaces a task's instruction.md as the
// prompt. nel renders the part of Jinja2 such templates use: text with
// {{ expression }} substitutions, where an expression is a name with
// dotted fields, a string literal, `a ~ b` (concatenation as text),
// `not x`, parentheses and the inline `x if cond else y`. A statement
// ({% … %}), a filter or any other syntax is refused when the template is
// parsed (the compiler parses it, so a recipe learns at compile time),
// never rendered as text. Output is not HTML-escaped (NeMo's environment
// escapes only .html/.xml templates) and is trimmed, as NeMo trims it.

// WorkspacePath is the template's workspace_path: nel's sessions hold a
// task's files at /app, whatever the task's Dockerfile says (a WORKDIR
// elsewhere is refused: Task.Image).
const WorkspacePath = "/app"

// Instruction is a parsed instruction template.
type Instruction struct {
	parts []tmplPart
}

// tmplPart is literal text, or an expression (expr non-nil) whose value
// is written as text.
type tmplPart struct {
	text string
	expr tmplExpr
}

// ParseInstruction parses a template's text; an error says where
// (line:col in the template) and what nel does not render.
func ParseInstruction(src string) (*Instruction, error) {
	t := &Instruction{}
	rest, off := src, 0
	for {
		i := openTag(rest)
		if i < 0 {
			t.parts = append(t.parts, tmplPart{text: rest})
			return t, nil
		}
		if rest[i+1] != '{' {
			return nil, posErr(src, off+i, "not supported yet: Jinja %s in an instruction template (nel renders {{ expressions }} only)", map[byte]string{'%': "statements ({% … %})", '#': "comments ({# … #})"}[rest[i+1]])
		}
		end := strings.Index(rest[i:], "}}")
		if end < 0 {
			return nil, posErr(src, off+i, "{{ is never closed by }}")
		}
		inner := rest[i+2 : i+end]
		text := rest[:i]
		if strings.HasPrefix(inner, "-") { // {{- trims the whitespace before it
			inner, text = inner[1:], strings.TrimRightFunc(text, unicode.IsSpace)
		}
		trimAfter := strings.HasSuffix(inner, "-")
		inner = strings.TrimSuffix(inner, "-")
		e, err := parseTmplExpr(inner)
		if err != nil {
			return nil, posErr(src, off+i, "{{%s}}: %v", rest[i+2:i+end], err)
		}
		t.parts = append(t.parts, tmplPart{text: text}, tmplPart{expr: e})
		off += i + end + 2
		rest = rest[i+end+2:]
		if trimAfter {
			trimmed := strings.TrimLeftFunc(rest, unicode.IsSpace)
			off += len(rest) - len(trimmed)
			rest = trimmed
		}
	}
}

// openTag is where the first {{, {% or {# of s is; -1 if none.
func openTag(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '{' && strings.IndexByte("{%#", s[i+1]) >= 0 {
			return i
		}
	}
	return -1
}

// ReadInstruction reads and parses a template file; errors name the file.
func ReadInstruction(path string) (*Instruction, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("instruction_template: %w", err)
	}
	t, err := ParseInstruction(string(b))
	if err != nil {
		return nil, "", fmt.Errorf("%s:%w", path, err)
	}
	return t, string(b), nil
}

// posErr is an error at byte offset off of src, as "LINE:COL: msg" (the
// caller puts the file before it).
func posErr(src string, off int, format string, args ...any) error {
	line := 1 + strings.Count(src[:off], "\n")
	col := off - strings.LastIndex(src[:off], "\n")
	return fmt.Errorf("%d:%d: %s", line, col, fmt.Sprintf(format, args...))
}

// Render renders t with vars; a value with no text form nel writes as
// Python would (a list, a table) is an error naming it.
func (t *Instruction) Render(vars map[string]any) (string, error) {
	var sb strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			sb.WriteString(p.text)
			continue
		}
		v, err := p.expr.eval(vars)
		if err != nil {
			return "", err
		}
		s, err := tmplText(v)
		if err != nil {
			return "", err
		}
		sb.WriteString(s)
	}
	return strings.TrimSpace(sb.String()), nil
}

// Vars are the template's variables for task, as NeMo Evaluator gives
// them: the task's metadata at the top level (source, task_id, the agent
// and verifier timeouts, [metadata] over them, repo_language inferred
// when [metadata] has none), workspace_path, original_prompt (the task's
// instruction), and instance: the metadata with problem_statement (the
// instruction). NeMo's task_dir, the task's folder on the host, is left
// out: a prompt naming it would change with the machine
// (ParseInstruction's names refuse it).
func (t *Task) Vars() map[string]any {
	meta := map[string]any{"source": "harbor", "task_id": t.Name}
	if t.Config.AgentTimeout > 0 {
		meta["agent_timeout_sec"] = seconds(t.Config.AgentTimeout.Seconds())
	}
	meta["verifier_timeout_sec"] = seconds(t.Config.VerifierTimeout.Seconds())
	maps.Copy(meta, t.Config.Metadata)
	if _, ok := meta["repo_language"]; !ok {
		if lang := repoLanguage(t.Dir, meta["tags"]); lang != "" {
			meta["repo_language"] = lang
		}
	}
	return promptVars(meta, t.Instruction)
}

// ItemVars are the template's variables for a byob record run as a task,
// as NeMo Evaluator's byob environment gives them: source "byob", the
// benchmark's name and the record's fields at the top level, with
// workspace_path, original_prompt (the prompt byob.prompt made) and
// instance (the same with problem_statement, the prompt).
func ItemVars(benchmark string, rec map[string]any, prompt string) map[string]any {
	meta := map[string]any{"source": "byob", "benchmark": benchmark}
	maps.Copy(meta, rec)
	return promptVars(meta, prompt)
}

// promptVars are a template's variables from a task's metadata (taken,
// not copied) and its prompt: the metadata at the top level with
// workspace_path, original_prompt (the prompt), and instance, the
// metadata with problem_statement (the prompt).
func promptVars(meta map[string]any, prompt string) map[string]any {
	instance := maps.Clone(meta)
	instance["problem_statement"] = prompt
	meta["workspace_path"] = WorkspacePath
	meta["original_prompt"] = prompt
	meta["instance"] = instance
	return meta
}

// seconds is a timeout as TOML most likely wrote it: a whole number as an
// integer (600), else a float.
func seconds(s float64) any {
	if s == math.Trunc(s) {
		return int64(s)
	}
	return s
}

// programmingLanguages are the [metadata].tags NeMo Evaluator reads as a
// task's repo_language.
var programmingLanguages = map[string]bool{
	"python": true, "java": true, "javascript": true, "typescript": true, "go": true,
	"rust": true, "c": true, "cpp": true, "php": true, "ruby": true, "scala": true,
	"kotlin": true, "swift": true,
}

// repoLanguage infers a task's repo_language as NeMo Evaluator does:
// tests/config.json's repo_language or language (SWE-bench Pro's tasks),
// else the last tag that names a programming language (Multilingual's).
func repoLanguage(dir string, tags any) string {
	if b, err := os.ReadFile(filepath.Join(dir, "tests", "config.json")); err == nil {
		var c struct {
			RepoLanguage string `json:"repo_language"`
			Language     string `json:"language"`
		}
		if json.Unmarshal(b, &c) == nil {
			if c.RepoLanguage != "" {
				return c.RepoLanguage
			}
			if c.Language != "" {
				return c.Language
			}
		}
	}
	list, _ := tags.([]any)
	for i := len(list) - 1; i >= 0; i-- {
		if s, ok := list[i].(string); ok && programmingLanguages[strings.ToLower(s)] {
			return s
		}
	}
	return ""
}

// tmplText is v as Jinja writes it: Python's str() of the value; an
// undefined name is empty.
func tmplText(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool:
		if v {
			return "True", nil
		}
		return "False", nil
	case json.Number: // a JSON record's number, as the record wrote it
		return string(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float32:
		return tmplText(float64(v))
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e16 {
			return strconv.FormatFloat(v, 'f', 1, 64), nil
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("instruction template: a %T value has no text form nel writes as Jinja would (write one of its fields)", v)
}

// truthy is Python's truth value of v (an undefined name is false).
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return v != ""
	case bool:
		return v
	case int64:
		return v != 0
	case float64:
		return v != 0
	case json.Number:
		f, err := v.Float64()
		return err != nil || f != 0
	case int:
		return v != 0
	case int32:
		return v != 0
	case float32:
		return v != 0
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}
