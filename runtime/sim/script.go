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
	dec := json.NewDecoder(bytes.NewReader(data))
	var top struct {
		Scripts []json.RawMessage `json:"scripts"`
	}
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("%s: %w", jsonPos(path, data, err), err)
	}
	if len(top.Scripts) == 0 {
		return nil, fmt.Errorf("%s:1:1: scripts: want at least one script", path)
	}
	out := make([]Script, len(top.Scripts))
	for i, raw := range top.Scripts {
		// The element's offset: RawMessage keeps the bytes, which occur
		// in data at the first place after the previous element.
		off := offsetOf(data, raw, i, top.Scripts)
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("%s: scripts[%d]: %w", position(path, data, off), i, err)
		}
		if err := out[i].check(); err != nil {
			return nil, fmt.Errorf("%s: scripts[%d]%w", position(path, data, off), i, err)
		}
	}
	return out, nil
}

// offsetOf finds scripts[i]'s bytes in data, searching after scripts[i-1].
func offsetOf(data, raw []byte, i int, all []json.RawMessage) int {
	from := 0
	for j := 0; j < i; j++ {
		if k := bytes.Index(data[from:], all[j]); k >= 0 {
			from += k + len(all[j])
		}
	}
	if k := bytes.Index(data[from:], raw); k >= 0 {
		return from + k
	}
	return 0
}

// jsonPos is the position of a decoding error in data.
func jsonPos(path string, data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return position(path, data, int(se.Offset))
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

// check says what is wrong with a script, as ".field: reason".
func (s Script) check() error {
	switch {
	case strings.TrimSpace(s.Match) == "":
		return errors.New(".match: empty (it is matched against the first user message)")
	case len(s.Turns) > 0 && len(s.Endless) > 0:
		return errors.New(": turns and endless both given (want one)")
	case len(s.Turns) == 0 && len(s.Endless) == 0:
		return errors.New(": neither turns nor endless given")
	case s.ContextChars < 0:
		return errors.New(".context_chars: negative")
	}
	for j, c := range s.Endless {
		if err := c.check(); err != nil {
			return fmt.Errorf(".endless[%d]%w", j, err)
		}
	}
	for j, t := range s.Turns {
		if (len(t.Calls) > 0) == (t.Answer != nil) {
			return fmt.Errorf(".turns[%d]: want calls or an answer, one of them", j)
		}
		if t.Answer != nil && j != len(s.Turns)-1 {
			return fmt.Errorf(".turns[%d]: an answer ends the conversation, but turns follow it", j)
		}
		for k, c := range t.Calls {
			if err := c.check(); err != nil {
				return fmt.Errorf(".turns[%d].calls[%d]%w", j, k, err)
			}
		}
	}
	return nil
}

func (c ScriptCall) check() error {
	switch {
	case c.Name == "":
		return errors.New(".name: empty")
	case len(c.Arguments) > 0 && c.RawArguments != nil:
		return errors.New(": arguments and raw_arguments both given (want one)")
	case len(c.Arguments) > 0 && !json.Valid(c.Arguments):
		return errors.New(".arguments: not JSON (use raw_arguments for malformed arguments on purpose)")
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
			if id := callID(turn, k); c.ID != id || c.Function.Name != want.Calls[k].Name || c.Type != "function" {
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

// scriptBody is the response of turn t.
func (s *Server) scriptBody(t int, turn ScriptTurn, promptChars int) []byte {
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	msg := struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []call  `json:"tool_calls,omitempty"`
	}{Role: "assistant"}
	finish, n := "tool_calls", 0
	if turn.Answer != nil {
		finish, msg.Content, n = "stop", turn.Answer, len(*turn.Answer)
	} else if turn.Content != "" {
		msg.Content, n = &turn.Content, len(turn.Content)
	}
	for k, c := range turn.Calls {
		var tc call
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
