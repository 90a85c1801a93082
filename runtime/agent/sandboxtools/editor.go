package sandboxtools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/agent"
)

// The editor follows the SWE-agent / Anthropic text editor tool: view
// lists a directory or numbers a file's lines, create makes a new file,
// str_replace changes one exact, unique occurrence, insert adds lines
// after a line, and undo_edit restores the file as it was before the
// editor's last change to it.
type editorTool struct{ st *state }

func (t *editorTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: Editor,
		Description: "View, create and edit files in the sandbox. A relative path is taken against /app.\n" +
			"* view: a file's lines, numbered (view_range [start, end] picks lines; end -1 is the last), or a directory's files and directories two levels deep, hidden ones left out.\n" +
			"* create: a new file with file_text; an existing path is not overwritten.\n" +
			"* str_replace: replace old_str, which must occur exactly once in the file, verbatim (whitespace included), with new_str (empty or absent deletes it).\n" +
			"* insert: insert new_str after line insert_line (0 inserts at the top).\n" +
			"* undo_edit: restore the file as it was before this tool's last change to it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","enum":["view","create","str_replace","insert","undo_edit"],"description":"The operation."},` +
			`"path":{"type":"string","description":"The file or directory; relative paths are under /app."},` +
			`"file_text":{"type":"string","description":"create: the new file's content."},` +
			`"old_str":{"type":"string","description":"str_replace: the exact text to replace; it must occur once."},` +
			`"new_str":{"type":"string","description":"str_replace: the replacement; insert: the text to insert."},` +
			`"insert_line":{"type":"integer","minimum":0,"description":"insert: the line after which new_str goes (0: before the first line)."},` +
			`"view_range":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2,"description":"view: [start, end] lines, 1-based, inclusive; end -1 is the last line."}},` +
			`"required":["command","path"],"additionalProperties":false}`),
	}
}

type editorArgs struct {
	Command    *string `json:"command"`
	Path       *string `json:"path"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	ViewRange  []int   `json:"view_range"`
}

func (t *editorTool) Call(ctx context.Context, raw json.RawMessage) (agent.ToolResult, error) {
	var a editorArgs
	if msg := decode(Editor, raw, &a); msg != "" {
		return failed("%s", msg)
	}
	p, msg := resolve(Editor, deref(a.Path))
	if msg != "" {
		return failed("%s", msg)
	}
	switch cmd := deref(a.Command); cmd {
	case "view":
		return t.view(ctx, p, a.ViewRange)
	case "create":
		if a.FileText == nil {
			return failed("str_replace_editor: create needs file_text, the new file's content")
		}
		return t.create(ctx, p, *a.FileText)
	case "str_replace":
		if a.OldStr == nil || *a.OldStr == "" {
			return failed("str_replace_editor: str_replace needs old_str, the exact text to replace")
		}
		return t.replace(ctx, p, *a.OldStr, deref(a.NewStr))
	case "insert":
		if a.InsertLine == nil || a.NewStr == nil {
			return failed("str_replace_editor: insert needs insert_line and new_str")
		}
		return t.insert(ctx, p, *a.InsertLine, *a.NewStr)
	case "undo_edit":
		return t.undo(ctx, p)
	case "":
		return failed("str_replace_editor: command is required: one of view, create, str_replace, insert, undo_edit")
	default:
		return failed("str_replace_editor: unknown command %q: want one of view, create, str_replace, insert, undo_edit", cmd)
	}
}

// viewScript prints D and a directory's entries two levels deep (hidden
// ones pruned), or F and a file's content.
const viewScript = `[ -e "$1" ] || [ -L "$1" ] || exit 100
if [ -d "$1" ]; then echo D; exec find "$1" -mindepth 1 -maxdepth 2 \( -name '.*' -prune \) -o -print; fi
echo F; exec cat -- "$1"`

func (t *editorTool) view(ctx context.Context, p string, vr []int) (agent.ToolResult, error) {
	out, msg, err := t.st.fileOp(ctx, Editor, viewScript, p, nil)
	if err != nil || msg != "" {
		return fault(msg, err)
	}
	kind, body, _ := strings.Cut(out, "\n")
	if kind == "D" {
		if vr != nil {
			return failed("str_replace_editor: view_range applies to a file, and %s is a directory", p)
		}
		entries := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		slices.Sort(entries)
		return agent.ToolResult{Output: fmt.Sprintf("Files and directories in %s, two levels deep, hidden ones left out:\n%s", p, text([]byte(strings.Join(entries, "\n"))))}, nil
	}
	lines, _ := splitLines(body)
	first, last := 1, len(lines)
	if vr != nil {
		if len(vr) != 2 {
			return failed("str_replace_editor: view_range must be two integers [start, end], found %d", len(vr))
		}
		if vr[0] < 1 || vr[0] > len(lines) {
			return failed("str_replace_editor: view_range start %d is outside %s's lines 1 to %d", vr[0], p, len(lines))
		}
		first = vr[0]
		if vr[1] != -1 {
			if vr[1] < first {
				return failed("str_replace_editor: view_range end %d is before its start %d (use -1 for the last line)", vr[1], first)
			}
			last = min(vr[1], len(lines))
		}
	}
	if len(lines) == 0 {
		return agent.ToolResult{Output: p + " is empty"}, nil
	}
	return agent.ToolResult{Output: text([]byte(number(lines, first, last)))}, nil
}

func (t *editorTool) create(ctx context.Context, p, content string) (agent.ToolResult, error) {
	_, msg, err := t.st.fileOp(ctx, Editor, createScript, p, []byte(content))
	if err != nil || msg != "" {
		return fault(msg, err)
	}
	t.st.remember(p, version{})
	lines, _ := splitLines(content)
	unit := "lines"
	if len(lines) == 1 {
		unit = "line"
	}
	return agent.ToolResult{Output: fmt.Sprintf("created %s (%d %s)", p, len(lines), unit)}, nil
}

func (t *editorTool) replace(ctx context.Context, p, old, repl string) (agent.ToolResult, error) {
	content, msg, err := t.st.fileOp(ctx, Editor, readScript, p, nil)
	if err != nil || msg != "" {
		return fault(msg, err)
	}
	switch n := strings.Count(content, old); n {
	case 0:
		return failed("str_replace_editor: no replacement: old_str does not occur verbatim in %s (whitespace and indentation must match exactly; view the file to copy the text)", p)
	case 1:
	default:
		return failed("str_replace_editor: no replacement: old_str occurs %d times in %s, starting on lines %s; include more of the surrounding text so that it occurs once", n, p, occurrenceLines(content, old))
	}
	at := strings.Index(content, old)
	updated := content[:at] + repl + content[at+len(old):]
	if msg, err := t.write(ctx, p, content, updated); err != nil || msg != "" {
		return fault(msg, err)
	}
	start := strings.Count(content[:at], "\n") + 1
	return t.edited(p, updated, start, start+strings.Count(repl, "\n")), nil
}

func (t *editorTool) insert(ctx context.Context, p string, after int, s string) (agent.ToolResult, error) {
	content, msg, err := t.st.fileOp(ctx, Editor, readScript, p, nil)
	if err != nil || msg != "" {
		return fault(msg, err)
	}
	lines, trailing := splitLines(content)
	if after < 0 || after > len(lines) {
		return failed("str_replace_editor: insert_line %d is outside 0 to %d, the lines of %s", after, len(lines), p)
	}
	added, _ := splitLines(s)
	if len(added) == 0 {
		added = []string{""}
	}
	out := slices.Concat(lines[:after], added, lines[after:])
	updated := strings.Join(out, "\n")
	if trailing || len(lines) == 0 {
		updated += "\n"
	}
	if msg, err := t.write(ctx, p, content, updated); err != nil || msg != "" {
		return fault(msg, err)
	}
	return t.edited(p, updated, after+1, after+len(added)), nil
}

func (t *editorTool) undo(ctx context.Context, p string) (agent.ToolResult, error) {
	v, ok := t.st.previous(p)
	if !ok {
		return failed("str_replace_editor: no edit of %s to undo (undo_edit restores the editor's own changes, the last %d per file)", p, maxHistory)
	}
	script, stdin, what := writeScript, []byte(v.content), "restored "+p+" as it was before the last edit"
	if !v.existed {
		script, stdin, what = removeScript, nil, "removed "+p+", which the undone create made"
	}
	if _, msg, err := t.st.fileOp(ctx, Editor, script, p, stdin); err != nil || msg != "" {
		t.st.remember(p, v) // still the version to go back to
		return fault(msg, err)
	}
	return agent.ToolResult{Output: what}, nil
}

// write replaces p's content, keeping the old one for undo_edit; it
// returns what fileOp does when the write failed.
func (t *editorTool) write(ctx context.Context, p, old, updated string) (string, error) {
	_, msg, err := t.st.fileOp(ctx, Editor, writeScript, p, []byte(updated))
	if err == nil && msg == "" {
		t.st.remember(p, version{content: old, existed: true})
	}
	return msg, err
}

// edited is the answer to a successful edit: the changed lines (from
// first to last) with four lines of context on each side.
func (t *editorTool) edited(p, content string, first, last int) agent.ToolResult {
	lines, _ := splitLines(content)
	from, to := max(1, first-4), min(len(lines), last+4)
	return agent.ToolResult{Output: fmt.Sprintf("edited %s; lines %d to %d now read:\n%s\nCheck the change; undo_edit reverts it.", p, from, to, text([]byte(number(lines, from, to))))}
}

// remember records p's version before an edit.
func (st *state) remember(p string, v version) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := append(st.history[p], v)
	if len(h) > maxHistory {
		h = h[len(h)-maxHistory:]
	}
	st.history[p] = h
}

// previous takes p's last remembered version.
func (st *state) previous(p string) (version, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := st.history[p]
	if len(h) == 0 {
		return version{}, false
	}
	st.history[p] = h[:len(h)-1]
	return h[len(h)-1], true
}

// splitLines splits a file's text into lines and says whether it ended
// with a newline; an empty text has no lines.
func splitLines(s string) ([]string, bool) {
	if s == "" {
		return nil, false
	}
	trailing := strings.HasSuffix(s, "\n")
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n"), trailing
}

// number formats lines first to last (1-based, inclusive) as cat -n does.
func number(lines []string, first, last int) string {
	var b strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// occurrenceLines lists the lines on which each occurrence of s starts.
func occurrenceLines(content, s string) string {
	var at []string
	for off := 0; ; {
		i := strings.Index(content[off:], s)
		if i < 0 {
			break
		}
		at = append(at, fmt.Sprint(strings.Count(content[:off+i], "\n")+1))
		off += i + len(s)
	}
	return strings.Join(at, ", ")
}
