package sandboxtools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// session opens a local (bubblewrap) session whose /app starts with files.
func session(t *testing.T, files map[string]string) sandbox.Session {
	t.Helper()
	app := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(app, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sessionFrom(t, app)
}

// sessionFrom opens a local session whose /app starts as a copy of app.
func sessionFrom(t *testing.T, app string) sandbox.Session {
	t.Helper()
	sb, err := sandbox.Open(context.Background(), sandbox.Config{Type: "local"})
	if errors.Is(err, sandbox.ErrUnavailable) {
		testenv.Missing(t, testenv.LocalSandbox, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	s, err := sandbox.OpenSession(context.Background(), sb, sandbox.SessionSpec{App: app})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// toolset is the four tools by name.
type toolset map[string]agent.Tool

func newTools(s sandbox.Session, timeout time.Duration) toolset {
	ts := toolset{}
	for _, tool := range New(s, Options{Timeout: timeout}) {
		ts[tool.Spec().Name] = tool
	}
	return ts
}

// call makes one call, failing the test on an infrastructure error.
func (ts toolset) call(t *testing.T, name, args string) agent.ToolResult {
	t.Helper()
	res, err := ts[name].Call(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return res
}

// ok makes a call that must succeed and returns its output.
func (ts toolset) ok(t *testing.T, name, args string) string {
	t.Helper()
	res := ts.call(t, name, args)
	if res.IsError {
		t.Fatalf("%s %s: error %q", name, args, res.Output)
	}
	return res.Output
}

// fails makes a call that must answer with an error saying want.
func (ts toolset) fails(t *testing.T, name, args, want string) {
	t.Helper()
	res := ts.call(t, name, args)
	if !res.IsError || !strings.Contains(res.Output, want) {
		t.Errorf("%s %s: got error=%v %q, want an error saying %q", name, args, res.IsError, res.Output, want)
	}
}

func jsonArgs(kv ...any) string {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

const calc = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"

func TestEditorSolvesTask(t *testing.T) {
	ts := newTools(session(t, map[string]string{"calc.py": calc}), 30*time.Second)
	ed := func(kv ...any) string { return ts.ok(t, Editor, jsonArgs(kv...)) }

	if got := ed("command", "view", "path", "/app"); !strings.Contains(got, "\n/app/calc.py") {
		t.Errorf("view /app: %q", got)
	}
	if got, want := ed("command", "view", "path", "calc.py", "view_range", []int{1, 2}),
		"     1\tdef add(a, b):\n     2\t    return a - b"; got != want {
		t.Errorf("view lines 1-2:\n got %q\nwant %q", got, want)
	}
	ts.fails(t, Editor, jsonArgs("command", "str_replace", "path", "calc.py", "old_str", "return a * b", "new_str", "x"), "does not occur verbatim")
	ts.fails(t, Editor, jsonArgs("command", "str_replace", "path", "calc.py", "old_str", "return a - b", "new_str", "x"), "occurs 2 times in /app/calc.py, starting on lines 2, 6")

	got := ed("command", "str_replace", "path", "calc.py", "old_str", "def add(a, b):\n    return a - b", "new_str", "def add(a, b):\n    return a + b")
	if !strings.Contains(got, "     2\t    return a + b") {
		t.Errorf("str_replace answer lacks the edited line: %q", got)
	}
	if out := ts.ok(t, Bash, `{"command": "python3 -c 'import calc; print(calc.add(2, 3), calc.sub(2, 3))'"}`); out != "5 -1\n" {
		t.Errorf("the fixed module prints %q", out)
	}
	ed("command", "insert", "path", "calc.py", "insert_line", 0, "new_str", "# fixed")
	if got, want := ed("command", "view", "path", "/app/calc.py", "view_range", []int{1, 2}), "     1\t# fixed\n     2\tdef add(a, b):"; got != want {
		t.Errorf("after insert:\n got %q\nwant %q", got, want)
	}
	ts.fails(t, Editor, jsonArgs("command", "insert", "path", "calc.py", "insert_line", 99, "new_str", "x"), "insert_line 99 is outside 0 to 7")

	// undo_edit walks back one edit at a time, then has nothing left.
	ed("command", "undo_edit", "path", "calc.py")
	if got := ts.ok(t, FileRead, `{"path": "calc.py"}`); got != strings.Replace(calc, "a - b", "a + b", 1) {
		t.Errorf("after one undo: %q", got)
	}
	ed("command", "undo_edit", "path", "/app/calc.py")
	if got := ts.ok(t, FileRead, `{"path": "calc.py"}`); got != calc {
		t.Errorf("after two undos: %q", got)
	}
	ts.fails(t, Editor, `{"command": "undo_edit", "path": "calc.py"}`, "no edit of /app/calc.py to undo")

	// create makes parents, never overwrites, and its undo removes the file.
	if got := ed("command", "create", "path", "pkg/util.py", "file_text", "X = 1\n"); got != "created /app/pkg/util.py (1 line)" {
		t.Errorf("create: %q", got)
	}
	ts.fails(t, Editor, jsonArgs("command", "create", "path", "pkg/util.py", "file_text", "X = 2\n"), "already exists")
	if got := ts.ok(t, FileRead, `{"path": "/app/pkg/util.py"}`); got != "X = 1\n" {
		t.Errorf("create overwrote: %q", got)
	}
	ed("command", "undo_edit", "path", "pkg/util.py")
	ts.fails(t, FileRead, `{"path": "pkg/util.py"}`, "/app/pkg/util.py does not exist")
	ts.fails(t, Editor, `{"command": "view", "path": "/app", "view_range": [1, 2]}`, "is a directory")
}

func TestBash(t *testing.T) {
	ts := newTools(session(t, nil), 20*time.Second)

	// Files and the working directory carry over from call to call.
	ts.ok(t, Bash, `{"command": "mkdir -p sub && cd sub && echo hi > f"}`)
	if got := ts.ok(t, Bash, `{"command": "pwd; cat f"}`); got != "/app/sub\nhi\n" {
		t.Errorf("second call: %q", got)
	}
	// A removed working directory falls back to /app.
	ts.ok(t, Bash, `{"command": "mkdir /app/gone && cd /app/gone"}`)
	ts.ok(t, Bash, `{"command": "rmdir /app/gone"}`)
	if got := ts.ok(t, Bash, `{"command": "pwd"}`); got != "/app\n" {
		t.Errorf("after removing the directory: %q", got)
	}
	// stderr is interleaved with stdout; a failure says its exit code.
	res := ts.call(t, Bash, `{"command": "echo out; echo err >&2; exit 3"}`)
	if !res.IsError || res.Output != "out\nerr\n[exit code 3]" {
		t.Errorf("failing command: error=%v %q", res.IsError, res.Output)
	}
	if got := ts.ok(t, Bash, `{"command": "true"}`); got != "(no output)" {
		t.Errorf("silent command: %q", got)
	}
	// The call's timeout kills the command.
	start := time.Now()
	res = ts.call(t, Bash, `{"command": "echo begun; sleep 30", "timeout": 1}`)
	if !res.IsError || !strings.Contains(res.Output, "begun") || !strings.Contains(res.Output, "ran past its 1s timeout and its processes were killed") {
		t.Errorf("timed-out command: error=%v %q", res.IsError, res.Output)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 1 s timeout took %s", d)
	}
	ts.fails(t, Bash, `{"command": "true", "timeout": 21}`, "timeout must be between 1 and 20 seconds, found 21")
	// Output past the sandbox's capture limit (1 MiB) stops the command.
	res = ts.call(t, Bash, `{"command": "yes | head -c 3000000; echo never"}`)
	if !res.IsError || strings.Contains(res.Output, "never") || !strings.Contains(res.Output, "[output cut: ") || !strings.Contains(res.Output, "the sandbox's output limit stopped it") {
		t.Errorf("flooding command: error=%v, ends %q", res.IsError, res.Output[max(0, len(res.Output)-200):])
	}
}

func TestFileReadWrite(t *testing.T) {
	ts := newTools(session(t, nil), 20*time.Second)
	if got := ts.ok(t, FileWrite, `{"path": "a/b/c.txt", "content": "one\ntwo\nthree\n"}`); got != "wrote 14 bytes to /app/a/b/c.txt" {
		t.Errorf("file_write: %q", got)
	}
	if got := ts.ok(t, FileRead, `{"path": "/app/a/b/c.txt", "start_line": 2, "end_line": 3}`); got != "two\nthree\n" {
		t.Errorf("lines 2-3: %q", got)
	}
	if got := ts.ok(t, FileRead, `{"path": "a/b/c.txt", "start_line": 3}`); got != "three\n" {
		t.Errorf("from line 3: %q", got)
	}
	ts.fails(t, FileRead, `{"path": "a/b/c.txt", "start_line": 9}`, "has no lines from 9 on")
	ts.fails(t, FileRead, `{"path": "a/b"}`, "/app/a/b is a directory")
	ts.fails(t, FileWrite, `{"path": "a/b", "content": "x"}`, "/app/a/b is a directory")
	ts.fails(t, FileWrite, `{"path": "/usr/nel-test", "content": "x"}`, "Read-only file system")
	// A file past what the sandbox returns at once is read in parts.
	ts.ok(t, Bash, `{"command": "yes line | head -n 300000 > big.txt"}`)
	ts.fails(t, Editor, `{"command": "str_replace", "path": "big.txt", "old_str": "line", "new_str": "x"}`, "/app/big.txt is larger than the sandbox returns at once")
	if got := ts.ok(t, FileRead, `{"path": "big.txt", "start_line": 299999}`); got != "line\nline\n" {
		t.Errorf("the end of big.txt: %q", got)
	}
	// The empty file is a file.
	ts.ok(t, FileWrite, `{"path": "empty", "content": ""}`)
	if got := ts.ok(t, FileRead, `{"path": "empty"}`); got != "" {
		t.Errorf("empty file reads %q", got)
	}
}

func TestEscapesLeaveHostUntouched(t *testing.T) {
	hostDir := t.TempDir()
	hostFile := filepath.Join(hostDir, "host.txt")
	if err := os.WriteFile(hostFile, []byte("host"), 0o666); err != nil {
		t.Fatal(err)
	}
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(hostFile, past, past); err != nil {
		t.Fatal(err)
	}
	// The task's own files may hold a link to a host path.
	app := t.TempDir()
	if err := os.Symlink(hostFile, filepath.Join(app, "applink")); err != nil {
		t.Fatal(err)
	}
	ts := newTools(sessionFrom(t, app), 20*time.Second)
	// The way up from /app, as many levels as it takes to reach the root.
	up := strings.Repeat("../", 8) + strings.TrimPrefix(hostFile, "/")

	// Each attempt either fails or writes inside the sandbox; which one
	// it is depends on what the sandbox shows at that path, so only the
	// host is checked.
	attempts := []struct{ tool, args string }{
		{FileWrite, jsonArgs("path", "applink", "content", "pwned")},
		{Bash, jsonArgs("command", "echo pwned >> /app/applink")},
		{FileWrite, jsonArgs("path", hostFile, "content", "pwned")},
		{FileWrite, jsonArgs("path", up, "content", "pwned")},
		{Editor, jsonArgs("command", "create", "path", up+".new", "file_text", "pwned")},
		{Bash, jsonArgs("command", "echo pwned > "+up)},
		{Bash, jsonArgs("command", "echo pwned > "+hostFile+"; echo pwned > "+filepath.Join(hostDir, "new.txt"))},
		{Bash, jsonArgs("command", "ln -s "+hostFile+" /app/link && ln -s "+hostDir+" /app/dirlink")},
		{FileWrite, jsonArgs("path", "link", "content", "pwned")},
		{Bash, jsonArgs("command", "echo pwned > /app/link; echo pwned > /app/dirlink/host.txt; echo pwned > /app/dirlink/new.txt")},
		{Editor, jsonArgs("command", "create", "path", "/app/dirlink/made.txt", "file_text", "pwned")},
		{Editor, jsonArgs("command", "str_replace", "path", "/app/link", "old_str", "pwned", "new_str", "again")},
	}
	for _, a := range attempts {
		if _, err := ts[a.tool].Call(context.Background(), json.RawMessage(a.args)); err != nil {
			t.Fatalf("%s %s: %v", a.tool, a.args, err)
		}
	}
	// Inside, the writes landed on the sandbox's own /tmp, which is not
	// the host's: the host path seen from inside holds what was written.
	if got := ts.ok(t, FileRead, jsonArgs("path", hostFile)); got != "again\n" {
		t.Errorf("inside the sandbox %s holds %q", hostFile, got)
	}
	if data, err := os.ReadFile(hostFile); err != nil || string(data) != "host" {
		t.Errorf("host file: %q, %v", data, err)
	}
	if fi, err := os.Stat(hostFile); err != nil || !fi.ModTime().Equal(past) {
		t.Errorf("host file's mtime changed: %v %v", fi.ModTime(), err)
	}
	entries, _ := os.ReadDir(hostDir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"host.txt"}) {
		t.Errorf("host dir holds %v, want only host.txt", names)
	}
}

func TestMalformedArguments(t *testing.T) {
	ts := newTools(session(t, nil), 20*time.Second)
	for _, c := range []struct{ tool, args, want string }{
		{Bash, `{"command": `, "the arguments are not valid: the JSON text ends early"},
		{Bash, `{}`, "command is required"},
		{Bash, ``, "command is required"},
		{Bash, `{"command": 5}`, "command: want a string, found a number"},
		{Bash, `{"command": "true", "timeout": 1.5}`, "timeout: want an integer, found a number 1.5"},
		{FileRead, `{"path": "x", "start_line": "3"}`, "start_line: want an integer, found a string"},
		{Bash, `{"comand": "ls"}`, `unknown field "comand"`},
		{Bash, `{"command": "ls"} {}`, "text after the JSON object"},
		{Bash, `{"command": "true", "timeout": 0}`, "timeout must be between 1 and 20 seconds"},
		{FileRead, `{"path": ""}`, "path is required"},
		{FileRead, `{"path": "x", "start_line": 0}`, "start_line must be 1 or more"},
		{FileRead, `{"path": "x", "start_line": 3, "end_line": 2}`, "end_line 2 is before start_line 3"},
		{FileRead, `{"path": "missing.txt"}`, "/app/missing.txt does not exist"},
		{FileWrite, `{"path": "x"}`, "content is required"},
		{FileWrite, `["x", "y"]`, "want a JSON object, found an array"},
		{Editor, `{"path": "x"}`, "command is required"},
		{Editor, `{"command": "frobnicate", "path": "x"}`, `unknown command "frobnicate"`},
		{Editor, `{"command": "create", "path": "x"}`, "create needs file_text"},
		{Editor, `{"command": "str_replace", "path": "x"}`, "str_replace needs old_str"},
		{Editor, `{"command": "insert", "path": "x", "new_str": "y"}`, "insert needs insert_line and new_str"},
		{Editor, `{"command": "view", "path": "x", "view_range": "1-2"}`, "view_range: want an array of integers, found a string"},
		{Editor, `{"command": "view", "path": "/nel\u0000x"}`, "NUL byte"},
	} {
		ts.fails(t, c.tool, c.args, c.want)
	}
}

func TestSpecs(t *testing.T) {
	tools := New(nil, Options{})
	var names []string
	for _, tool := range tools {
		s := tool.Spec()
		names = append(names, s.Name)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(s.Parameters, &schema); err != nil {
			t.Fatalf("%s: parameters are not JSON: %v", s.Name, err)
		}
		if schema.Type != "object" || s.Description == "" {
			t.Errorf("%s: type %q, description %q", s.Name, schema.Type, s.Description)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", s.Name, r)
			}
		}
	}
	if want := []string{"bash", "file_read", "file_write", "str_replace_editor"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if got := string(tools[0].Spec().Parameters); !strings.Contains(got, `"maximum":180`) {
		t.Errorf("bash's timeout maximum is not the default tool timeout: %s", got)
	}
}

func TestClosedSessionIsInfrastructure(t *testing.T) {
	s := session(t, nil)
	ts := newTools(s, 20*time.Second)
	s.Close()
	for name, args := range map[string]string{Bash: `{"command": "true"}`, FileRead: `{"path": "x"}`, Editor: `{"command": "view", "path": "x"}`} {
		if res, err := ts[name].Call(context.Background(), json.RawMessage(args)); err == nil {
			t.Errorf("%s on a closed session: no error, answer %+v", name, res)
		}
	}
}
