// Package sandboxtools is the tool_calling solver's sandbox tools — bash,
// file_read, file_write and str_replace_editor — each running its work as
// a command of the sample's sandbox session, so that what a tool can touch
// is exactly what the sandbox lets a program touch.
//
// A call whose arguments are malformed, or whose program fails (a missing
// file, a non-zero exit, a timeout), answers the model with an error it can
// act on; only a session that cannot run a command at all is an error of
// the call (an infrastructure failure).
package sandboxtools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// The tools' names, as the model is offered them.
const (
	Bash      = "bash"
	FileRead  = "file_read"
	FileWrite = "file_write"
	Editor    = "str_replace_editor"
)

// DefaultTimeout is tool_timeout's default (NeMo Evaluator's 180 s).
const DefaultTimeout = 180 * time.Second

// Options configure the tools of one session.
type Options struct {
	// Timeout is the recipe's tool_timeout: the wall-clock limit of every
	// call, and the most a bash call may ask for. 0 is DefaultTimeout.
	Timeout time.Duration
}

// New returns the four sandbox tools on session s, in the order they are
// offered. They share the session's state: bash's working directory and
// the editor's undo history.
func New(s sandbox.Session, opt Options) []agent.Tool {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	var b [8]byte
	rand.Read(b[:])
	st := &state{
		s:       s,
		timeout: opt.Timeout,
		cwd:     sandbox.SessionApp,
		marker:  "__nel_cwd_" + hex.EncodeToString(b[:]) + "=",
		history: map[string][]version{},
	}
	return []agent.Tool{&bashTool{st}, &fileReadTool{st}, &fileWriteTool{st}, &editorTool{st}}
}

// state is what the tools of one session share.
type state struct {
	s       sandbox.Session
	timeout time.Duration

	mu      sync.Mutex
	cwd     string // bash's working directory, carried from call to call
	marker  string // the line prefix bash reports its final directory with
	history map[string][]version
}

// version is a file's content before an editor change, for undo_edit.
type version struct {
	content string
	existed bool
}

// maxHistory is how many earlier versions of a file the editor keeps.
const maxHistory = 10

// failed is a tool answer saying the call failed.
func failed(format string, args ...any) (agent.ToolResult, error) {
	return agent.ToolResult{Output: fmt.Sprintf(format, args...), IsError: true}, nil
}

// fault answers a failed call: the session's error when there is one (the
// call cannot go on), else msg to the model.
func fault(msg string, err error) (agent.ToolResult, error) {
	if err != nil {
		return agent.ToolResult{}, err
	}
	return failed("%s", msg)
}

// decode reads a call's JSON arguments into v (a struct whose required
// fields are pointers). It returns a message for the model when they are
// not a JSON object of v's fields. Unknown fields are refused so that a
// misspelt argument is named rather than silently missing.
func decode(tool string, args json.RawMessage, v any) string {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Sprintf("%s: the arguments are not valid: %s; send a JSON object as the tool's schema describes", tool, jsonProblem(err))
	}
	if dec.More() {
		return fmt.Sprintf("%s: the arguments are not valid: text after the JSON object", tool)
	}
	return ""
}

// jsonProblem says what is wrong with a call's arguments in the schema's
// terms, not Go's.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return "want a JSON object, found " + article(typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Sprintf("%s: want %s, found %s", typeErr.Field, schemaType(typeErr.Type), article(typeErr.Value))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON text ends early"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// schemaType names a Go type of the argument structs as JSON Schema would.
func schemaType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(schemaType(t.Elem()), "a "), "an ") + "s"
	}
	return "a JSON " + t.Kind().String()
}

// article puts a or an before a JSON value's kind ("number", "array").
func article(v string) string {
	if v == "" {
		return "a value"
	}
	if strings.IndexAny(v[:1], "aeiou") == 0 {
		return "an " + v
	}
	return "a " + v
}

// resolve makes a tool's path absolute inside the sandbox: a relative one
// is taken against /app. It returns a message for the model when the path
// is unusable.
func resolve(tool, p string) (string, string) {
	switch {
	case p == "":
		return "", tool + ": path is required"
	case strings.IndexByte(p, 0) >= 0:
		return "", tool + ": path holds a NUL byte"
	case !path.IsAbs(p):
		return path.Join(sandbox.SessionApp, p), ""
	}
	return path.Clean(p), ""
}

// exec runs one command in the session, with the tool timeout unless t is
// set. Its error is the session's: the call cannot go on.
func (st *state) exec(ctx context.Context, tool string, argv []string, stdin []byte, t time.Duration) (*sandbox.Result, error) {
	if t <= 0 {
		t = st.timeout
	}
	res, err := st.s.Exec(ctx, sandbox.Command{Argv: argv, Stdin: stdin, Timeout: t})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return res, nil
}

// stopped says why the sandbox stopped a program, or "" when it ended on
// its own.
func stopped(res *sandbox.Result, t time.Duration) string {
	switch res.Limit {
	case sandbox.LimitNone:
		return ""
	case sandbox.LimitTimeout:
		return fmt.Sprintf("it ran past its %s timeout and its processes were killed", t)
	}
	return fmt.Sprintf("the sandbox's %s limit stopped it", res.Limit)
}

// text is program output as valid UTF-8 for the model.
func text(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }
