package sandboxtools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// The shell programs the file tools run in the sandbox, with the path as
// $1 (never spliced into the script). Their own failures exit with codes a
// file utility does not use.
const (
	exitMissing = 100 // no such file or directory
	exitIsDir   = 101 // a directory where a file was wanted
	exitExists  = 102 // create: the path exists

	readScript = `[ -e "$1" ] || [ -L "$1" ] || exit 100
[ -d "$1" ] && exit 101
if [ "$#" -eq 3 ]; then exec sed -n "$2,$3p" -- "$1"; fi
exec cat -- "$1"`
	writeScript = `[ -d "$1" ] && exit 101
d=$(dirname -- "$1") && mkdir -p -- "$d" && exec cat > "$1"`
	createScript = `{ [ -e "$1" ] || [ -L "$1" ]; } && exit 102
d=$(dirname -- "$1") && mkdir -p -- "$d" && exec cat > "$1"`
	removeScript = `exec rm -f -- "$1"`
)

// fileOp runs one of the scripts on path p. It returns the program's
// stdout, or a message for the model when the program failed, or the
// session's error.
func (st *state) fileOp(ctx context.Context, tool, script, p string, stdin []byte, extra ...string) (string, string, error) {
	argv := append([]string{"sh", "-c", script, "sh", p}, extra...)
	res, err := st.exec(ctx, tool, argv, stdin, 0)
	if err != nil {
		return "", "", err
	}
	// A file past the output cap stops the program; what came back is
	// only its start, which must not be taken for the file.
	if res.Truncated || res.Limit == sandbox.LimitOutput {
		return "", fmt.Sprintf("%s: %s is larger than the sandbox returns at once (%d bytes); read a line range, or look at it with bash (head, sed -n, grep)", tool, p, len(res.Stdout)), nil
	}
	if why := stopped(res, st.timeout); why != "" {
		return "", fmt.Sprintf("%s: %s: %s", tool, p, why), nil
	}
	switch res.ExitCode {
	case 0:
		return string(res.Stdout), "", nil
	case exitMissing:
		return "", fmt.Sprintf("%s: %s does not exist", tool, p), nil
	case exitIsDir:
		return "", fmt.Sprintf("%s: %s is a directory", tool, p), nil
	case exitExists:
		return "", fmt.Sprintf("%s: %s already exists; create does not overwrite: use str_replace to change it, or file_write to replace it", tool, p), nil
	}
	msg := strings.TrimSpace(text(res.Stderr))
	if msg == "" {
		msg = "exit code " + strconv.Itoa(res.ExitCode)
	}
	return "", fmt.Sprintf("%s: %s: %s", tool, p, msg), nil
}

type fileReadTool struct{ st *state }

func (t *fileReadTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        FileRead,
		Description: "Read a file in the sandbox, whole or a range of its lines. A relative path is taken against /app.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"The file's path; relative paths are under /app."},` +
			`"start_line":{"type":"integer","minimum":1,"description":"First line to return (1-based); default the first."},` +
			`"end_line":{"type":"integer","minimum":1,"description":"Last line to return, inclusive; default the last."}},` +
			`"required":["path"],"additionalProperties":false}`),
	}
}

func (t *fileReadTool) Call(ctx context.Context, raw json.RawMessage) (agent.ToolResult, error) {
	var args struct {
		Path      *string `json:"path"`
		StartLine *int    `json:"start_line"`
		EndLine   *int    `json:"end_line"`
	}
	if msg := decode(FileRead, raw, &args); msg != "" {
		return failed("%s", msg)
	}
	p, msg := resolve(FileRead, deref(args.Path))
	if msg != "" {
		return failed("%s", msg)
	}
	var lines []string
	if args.StartLine != nil || args.EndLine != nil {
		start, end := 1, "$"
		if args.StartLine != nil {
			start = *args.StartLine
		}
		if args.EndLine != nil {
			end = strconv.Itoa(*args.EndLine)
			if *args.EndLine < start {
				return failed("file_read: end_line %d is before start_line %d", *args.EndLine, start)
			}
		}
		if start < 1 {
			return failed("file_read: start_line must be 1 or more, found %d", start)
		}
		lines = []string{strconv.Itoa(start), end}
	}
	out, msg, err := t.st.fileOp(ctx, FileRead, readScript, p, nil, lines...)
	if err != nil || msg != "" {
		return fault(msg, err)
	}
	if out == "" && lines != nil {
		return failed("file_read: %s has no lines from %s on", p, lines[0])
	}
	return agent.ToolResult{Output: text([]byte(out))}, nil
}

type fileWriteTool struct{ st *state }

func (t *fileWriteTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        FileWrite,
		Description: "Write a file in the sandbox, replacing it if it exists; missing parent directories are created. A relative path is taken against /app.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"The file's path; relative paths are under /app."},` +
			`"content":{"type":"string","description":"The file's whole new content."}},` +
			`"required":["path","content"],"additionalProperties":false}`),
	}
}

func (t *fileWriteTool) Call(ctx context.Context, raw json.RawMessage) (agent.ToolResult, error) {
	var args struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
	}
	if msg := decode(FileWrite, raw, &args); msg != "" {
		return failed("%s", msg)
	}
	p, msg := resolve(FileWrite, deref(args.Path))
	if msg != "" {
		return failed("%s", msg)
	}
	if args.Content == nil {
		return failed("file_write: content is required (an empty string writes an empty file)")
	}
	_, msg, err := t.st.fileOp(ctx, FileWrite, writeScript, p, []byte(*args.Content))
	if err != nil || msg != "" {
		return fault(msg, err)
	}
	return agent.ToolResult{Output: fmt.Sprintf("wrote %d bytes to %s", len(*args.Content), p)}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
