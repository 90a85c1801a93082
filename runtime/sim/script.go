package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Script is one task's scripted conversation, for testing tool-calling
// loops: which tool calls the model makes turn by turn, then which answer.
// A chat request is the script's when its first user message contains
// Match (the first script in the file that matches wins). The server is
// stateless: the turn a request is at is the number of assistant messages
// in it, and it checks that they are the calls it made and that each call
// was answered by a tool message with its id.
type Script struct {
	Match string       `json:"match"`
	Turns []ScriptTurn `json:"turns,omitempty"`
	// Endless, instead of Turns, makes the model call a tool every turn,
	// never answering: turn t makes call Endless[t mod len(Endless)].
	// One call repeats identically; two or more alternate.
	Endless []ScriptCall `json:"endless,omitempty"`
	// ContextChars, when positive, is the window: a conversation whose
	// messages hold more characters (contents and call arguments) is
	// refused with vLLM's 400 "maximum context length".
	ContextChars int `json:"context_chars,omitempty"`
}

// ScriptTurn is one assistant message: calls (several: parallel calls),
// with optional Content beside them, or a final Answer.
type ScriptTurn struct {
	Calls   []ScriptCall `json:"calls,omitempty"`
	Content string       `json:"content,omitempty"`
	Answer  *string      `json:"answer,omitempty"`
}

// ScriptCall is one tool call. Arguments is a JSON value sent as its
// compact text; RawArguments, instead, is sent as it is, malformed JSON
// included. Neither: "{}".
type ScriptCall struct {
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	RawArguments *string         `json:"raw_arguments,omitempty"`
}

// arguments is the call's arguments text as the model sends it.
func (c ScriptCall) arguments() string {
	switch {
	case c.RawArguments != nil:
		return *c.RawArguments
	case len(c.Arguments) > 0:
		var b bytes.Buffer
		if json.Compact(&b, c.Arguments) == nil {
			return b.String()
		}
		return string(c.Arguments)
	}
	return "{}"
}

// ReadScripts reads a scripts file: {"scripts": [Script, …]}. Its errors
// name the file, the line and column, and the field.
func ReadScripts(path string) ([]Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripts: %w", err)
	}
	var top struct {
		Scripts []json.RawMessage `json:"scripts"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("%s: %w", jsonPos(path, data, err), err)
	}
	at := offsets(data) // the file decoded: every value's offset by field path
	if len(top.Scripts) == 0 {
		return nil, fmt.Errorf("%s: scripts: want at least one script", position(path, data, at["scripts"]))
	}
	out := make([]Script, len(top.Scripts))
	for i, raw := range top.Scripts {
		field := fmt.Sprintf("scripts[%d]", i)
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", position(path, data, at[field]), field, err)
		}
		if fe := out[i].check(); fe != nil {
			f := field + fe.field
			// The deepest field the file has: a missing one is reported
			// at its parent.
			for ; f != field; f = f[:strings.LastIndexAny(f, ".[")] {
				if _, ok := at[f]; ok {
					break
				}
			}
			return nil, fmt.Errorf("%s: %s%s: %s", position(path, data, at[f]), field, fe.field, fe.msg)
		}
	}
	return out, nil
}

// offsets maps the field path of every value in the JSON text data
// ("scripts[0].turns[1]") to the byte offset where it starts.
func offsets(data []byte) map[string]int {
	at := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	// start is where the next value begins: past the previous token, the
	// separators and the white space after it.
	start := func() int {
		off := int(dec.InputOffset())
		for off < len(data) && strings.IndexByte(" \t\r\n:,", data[off]) >= 0 {
			off++
		}
		return off
	}
	var walk func(path string) bool
	walk = func(path string) bool {
		off := start()
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if path != "" {
			at[path] = off
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				key, _ := k.(string)
				if err != nil || !walk(strings.TrimPrefix(path+"."+key, ".")) {
					return false
				}
			}
			_, err = dec.Token()
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if !walk(path + "[" + strconv.Itoa(i) + "]") {
					return false
				}
			}
			_, err = dec.Token()
		}
		return err == nil
	}
	walk("")
	return at
}

// jsonPos is the position of a decoding error in data.
func jsonPos(path string, data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return position(path, data, int(se.Offset)-1) // Offset is past the bad byte
	case errors.As(err, &te):
		return position(path, data, int(te.Offset))
	}
	return path + ":1:1"
}

// position is path:line:column of a byte offset.
func position(path string, data []byte, off int) string {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return path + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
}

// fieldError is what is wrong with a script: the field (".turns[1]", ""
// for the script itself) and why.
type fieldError struct{ field, msg string }

func (s Script) check() *fieldError {
	switch {
	case strings.TrimSpace(s.Match) == "":
		return &fieldError{".match", "empty (it is matched against the first user message)"}
	case len(s.Turns) > 0 && len(s.Endless) > 0:
		return &fieldError{"", "turns and endless both given (want one)"}
	case len(s.Turns) == 0 && len(s.Endless) == 0:
		return &fieldError{"", "neither turns nor endless given"}
	case s.ContextChars < 0:
		return &fieldError{".context_chars", "negative"}
	}
	for j, c := range s.Endless {
		if fe := c.check(); fe != nil {
			return &fieldError{fmt.Sprintf(".endless[%d]%s", j, fe.field), fe.msg}
		}
	}
	for j, t := range s.Turns {
		field := fmt.Sprintf(".turns[%d]", j)
		if (len(t.Calls) > 0) == (t.Answer != nil) {
			return &fieldError{field, "want calls or an answer, one of them"}
		}
		if t.Answer != nil && j != len(s.Turns)-1 {
			return &fieldError{field, "an answer ends the conversation, but turns follow it"}
		}
		for k, c := range t.Calls {
			if fe := c.check(); fe != nil {
				return &fieldError{fmt.Sprintf("%s.calls[%d]%s", field, k, fe.field), fe.msg}
			}
		}
	}
	return nil
}

func (c ScriptCall) check() *fieldError {
	switch {
	case c.Name == "":
		return &fieldError{".name", "empty"}
	case len(c.Arguments) > 0 && c.RawArguments != nil:
		return &fieldError{"", "arguments and raw_arguments both given (want one)"}
	}
	return nil
}

// turn is the script's assistant message at turn t: its calls, or its
// answer; ok is false past the script's end.
func (s *Script) turn(t int) (ScriptTurn, bool) {
	if len(s.Endless) > 0 {
		return ScriptTurn{Calls: []ScriptCall{s.Endless[t%len(s.Endless)]}}, true
	}
	if t >= len(s.Turns) {
		return ScriptTurn{}, false
	}
	return s.Turns[t], true
}

// callID is the id of the k-th call at turn t: the same in every process,
// so a conversation's echo can be checked without state.
func callID(t, k int) string { return "call_" + strconv.Itoa(t) + "_" + strconv.Itoa(k) }

// sameCallID says whether a client sent back the script's call id: as
// given, or with only its letters and digits kept (OpenClaw rewrites
// "call_0_0" as "call00" for providers that take no other characters).
func sameCallID(sent, id string) bool {
	return sent == id || sent == strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, id)
}

// scriptFor is the script whose Match the first user message contains.
func (s *Server) scriptFor(req *request) *Script {
	if len(s.cfg.Scripts) == 0 {
		return nil
	}
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		text := contentText(m.Content)
		for i := range s.cfg.Scripts {
			if strings.Contains(text, s.cfg.Scripts[i].Match) {
				return &s.cfg.Scripts[i]
			}
		}
		return nil
	}
	return nil
}

// scripted answers a request of script sc.
func (s *Server) scripted(w http.ResponseWriter, sc *Script, req *request) {
	s.scriptedN.Add(1)
	t, chars, err := sc.replay(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	if sc.ContextChars > 0 && chars > sc.ContextChars {
		// vLLM's wording, with characters standing in for tokens.
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
			sc.ContextChars, chars))
		return
	}
	turn, ok := sc.turn(t)
	if !ok {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"the script matching %q has %d turns; this conversation is at turn %d", sc.Match, len(sc.Turns), t+1))
		return
	}
	if len(turn.Calls) > 0 && len(req.Tools) == 0 {
		// A model offered no tools makes no calls: the client forgot them.
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"tools: none offered, and the script matching %q calls tools at turn %d", sc.Match, t+1))
		return
	}
	w.Write(s.scriptBody(t, turn, chars))
}

// replay checks the conversation against the script: every assistant
// message makes the calls the script made at its turn, with their ids, and
// the tool messages after it answer each of those calls once. It returns
// the turn the request is at and the conversation's size in characters.
func (sc *Script) replay(req *request) (turn, chars int, err error) {
	msgs := req.Messages
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		chars += len(contentText(m.Content))
		if m.Role == "tool" {
			return 0, 0, fmt.Errorf("messages[%d]: a tool message (tool_call_id %q) answers no call of the assistant message before it", i, m.ToolCallID)
		}
		if m.Role != "assistant" {
			continue
		}
		want, _ := sc.turn(turn)
		if len(m.ToolCalls) != len(want.Calls) {
			return 0, 0, fmt.Errorf("messages[%d]: the assistant message has %d tool calls; the script made %d at turn %d", i, len(m.ToolCalls), len(want.Calls), turn+1)
		}
		at, open := i, map[string]bool{}
		for k, c := range m.ToolCalls {
			chars += len(c.Function.Arguments)
			if id := callID(turn, k); !sameCallID(c.ID, id) || c.Function.Name != want.Calls[k].Name || c.Type != "function" {
				return 0, 0, fmt.Errorf("messages[%d].tool_calls[%d]: %s %q (type %q), the script made %s %q", i, k, c.Function.Name, c.ID, c.Type, want.Calls[k].Name, id)
			}
			open[c.ID] = true
		}
		for ; len(open) > 0; i++ {
			if i+1 >= len(msgs) || msgs[i+1].Role != "tool" || !open[msgs[i+1].ToolCallID] {
				return 0, 0, fmt.Errorf("messages[%d]: the calls of the assistant message at messages[%d] are not each answered by a tool message (%d unanswered)", i+1, at, len(open))
			}
			delete(open, msgs[i+1].ToolCallID)
			chars += len(contentText(msgs[i+1].Content))
		}
		turn++
	}
	return turn, chars, nil
}

// toolCall is a tool call on the wire (OpenAI's chat completions).
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// scriptBody is the response of turn t.
func (s *Server) scriptBody(t int, turn ScriptTurn, promptChars int) []byte {
	msg := struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}{Role: "assistant"}
	finish, n := "tool_calls", 0
	if turn.Answer != nil {
		finish, msg.Content, n = "stop", turn.Answer, len(*turn.Answer)
	} else if turn.Content != "" {
		msg.Content, n = &turn.Content, len(turn.Content)
	}
	for k, c := range turn.Calls {
		var tc toolCall
		tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = callID(t, k), "function", c.Name, c.arguments()
		msg.ToolCalls = append(msg.ToolCalls, tc)
		n += len(tc.Function.Arguments)
	}
	pt, ct := tokens(promptChars), tokens(n)
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-sim-" + strconv.FormatUint(s.ids.Add(1), 16), "object": "chat.completion",
		"created": time.Now().Unix(), "model": s.cfg.Model, "system_fingerprint": s.fp,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
	})
	return append(b, '\n')
}
