package sandboxtools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/agent"
)

type bashTool struct{ st *state }

func (t *bashTool) Spec() agent.ToolSpec {
	max := int(t.st.timeout / time.Second)
	return agent.ToolSpec{
		Name: Bash,
		Description: "Run a bash command in the sandbox and return its output (stdout and stderr together) and exit code. " +
			"The working directory starts at /app and carries over from one call to the next (cd persists); files under /app, /tmp and /logs persist, " +
			"the rest of the file system is read-only, there is no network, and no process outlives its call.",
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"command":{"type":"string","description":"The bash command to run."},`+
			`"timeout":{"type":"integer","minimum":1,"maximum":%d,"description":"Seconds before the command and every process it started are killed (default and most: %d)."}},`+
			`"required":["command"],"additionalProperties":false}`, max, max)),
	}
}

// bashWrapper runs as sh with $1 the working directory and $2 the script:
// it enters the directory (or /app, when a command removed it) and runs
// the script with bash, or sh where the image has no bash.
const bashWrapper = `cd -- "$1" 2>/dev/null || cd /app || exit 125
if command -v bash >/dev/null 2>&1; then exec bash -c "$2"; fi
exec sh -c "$2"`

func (t *bashTool) Call(ctx context.Context, raw json.RawMessage) (agent.ToolResult, error) {
	var args struct {
		Command *string `json:"command"`
		Timeout *int    `json:"timeout"`
	}
	if msg := decode(Bash, raw, &args); msg != "" {
		return failed("%s", msg)
	}
	if args.Command == nil || strings.TrimSpace(*args.Command) == "" {
		return failed("bash: command is required")
	}
	if strings.IndexByte(*args.Command, 0) >= 0 {
		return failed("bash: command holds a NUL byte")
	}
	timeout := t.st.timeout
	if args.Timeout != nil {
		max := int(t.st.timeout / time.Second)
		if *args.Timeout < 1 || *args.Timeout > max {
			return failed("bash: timeout must be between 1 and %d seconds, found %d", max, *args.Timeout)
		}
		timeout = time.Duration(*args.Timeout) * time.Second
	}
	t.st.mu.Lock()
	cwd := t.st.cwd
	t.st.mu.Unlock()
	// stderr joins stdout so that the model reads them interleaved, as in
	// a terminal; on exit the shell reports its directory on a line of its
	// own for the next call.
	script := "exec 2>&1\ntrap 'printf \"\\n%s%s\\n\" " + t.st.marker + " \"$PWD\"' EXIT\n" + *args.Command
	res, err := t.st.exec(ctx, Bash, []string{"sh", "-c", bashWrapper, "sh", cwd, script}, nil, timeout)
	if err != nil {
		return agent.ToolResult{}, err
	}
	out, dir := t.st.splitMarker(text(res.Stdout))
	if dir != "" {
		t.st.mu.Lock()
		t.st.cwd = dir
		t.st.mu.Unlock()
	}
	var b strings.Builder
	b.WriteString(out)
	if len(res.Stderr) > 0 {
		note(&b, text(res.Stderr))
	}
	if b.Len() == 0 {
		b.WriteString("(no output)")
	}
	if res.Truncated {
		note(&b, "[output cut: the sandbox keeps only the first part of a command's output]")
	}
	isErr := res.ExitCode != 0 || res.Signal != ""
	if why := stopped(res, timeout); why != "" {
		note(&b, "[command stopped: "+why+"]")
		isErr = true
	} else if isErr {
		note(&b, fmt.Sprintf("[exit code %d%s]", res.ExitCode, signalNote(res.Signal)))
	}
	return agent.ToolResult{Output: b.String(), IsError: isErr}, nil
}

// note adds a line of the tool's own after the command's output.
func note(b *strings.Builder, line string) {
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(line)
}

func signalNote(sig string) string {
	if sig == "" {
		return ""
	}
	return ", killed by " + sig
}

// splitMarker removes the directory report from a command's output and
// returns it. The report is the last marker line; the newline printed
// before it is the wrapper's too.
func (st *state) splitMarker(out string) (string, string) {
	i := strings.LastIndex(out, "\n"+st.marker)
	if i < 0 {
		return out, ""
	}
	rest := out[i+1+len(st.marker):]
	dir, after, _ := strings.Cut(rest, "\n")
	return out[:i] + after, dir
}
