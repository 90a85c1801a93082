package intercept

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// coalesceStream is NeMo's streaming interceptor: a text/event-stream
// answer (an agent asked with "stream": true) coalesced into one chat
// completion, so the links after it and the caller see one JSON body; a
// JSON answer only has a null content made "".
func coalesceStream(resp *Response, body map[string]any) bool {
	if body != nil {
		return nullContentToEmpty(body)
	}
	if !strings.Contains(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		return false
	}
	out, errBody := coalesceSSE(resp.Body)
	if out == nil {
		return false
	}
	b, err := encodeJSON(out)
	if err != nil {
		return false
	}
	resp.Body = b
	resp.Header.Set("Content-Type", "application/json")
	if errBody && resp.OK() {
		// An error event in a 200 stream is the server failing.
		resp.Status = 502
	}
	return false // resp.Body is already the new body
}

func nullContentToEmpty(body map[string]any) bool {
	changed := false
	for _, ch := range choicesOf(body) {
		if msg, ok := ch["message"].(map[string]any); ok {
			if c, has := msg["content"]; has && c == nil {
				msg["content"] = ""
				changed = true
			}
		}
	}
	return changed
}

// streamChoice gathers one choice's deltas.
type streamChoice struct {
	role, content, reasoning string
	finish                   any
	calls                    map[int]map[string]any
}

// coalesceSSE merges the stream's chunks; errBody says the stream carried
// an error event, which is then the body. nil: no chunk said anything.
func coalesceSSE(stream []byte) (out map[string]any, errBody bool) {
	var first, usage map[string]any
	choices := map[int]*streamChoice{}
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		chunk := decodeBody([]byte(data))
		if chunk == nil {
			continue
		}
		if _, bad := chunk["error"]; bad {
			return chunk, true
		}
		if first == nil {
			first = chunk
		}
		if u, ok := chunk["usage"].(map[string]any); ok {
			usage = u
		}
		mergeChunk(chunk, choices)
	}
	if len(choices) == 0 {
		return nil, false
	}
	out = map[string]any{"id": first["id"], "object": "chat.completion", "created": first["created"],
		"model": first["model"], "choices": buildChoices(choices)}
	if usage != nil {
		out["usage"] = usage
	}
	return out, false
}

func mergeChunk(chunk map[string]any, choices map[int]*streamChoice) {
	for _, ch := range choicesOf(chunk) {
		i64, _ := intOf(ch["index"])
		i := int(i64)
		c := choices[i]
		if c == nil {
			c = &streamChoice{calls: map[int]map[string]any{}}
			choices[i] = c
		}
		if f, ok := ch["finish_reason"]; ok && f != nil {
			c.finish = f
		}
		delta, _ := ch["delta"].(map[string]any)
		if r, ok := delta["role"].(string); ok {
			c.role = r
		}
		s, _ := delta["content"].(string)
		c.content += s
		for _, k := range []string{"reasoning_content", "reasoning"} {
			s, _ := delta[k].(string)
			c.reasoning += s
		}
		calls, _ := delta["tool_calls"].([]any)
		for _, tc := range calls {
			mergeCall(c, tc)
		}
	}
}

// mergeCall appends a tool call delta: id, type and name arrive once, the
// arguments in pieces.
func mergeCall(c *streamChoice, tc any) {
	d, _ := tc.(map[string]any)
	j64, _ := intOf(d["index"])
	call := c.calls[int(j64)]
	if call == nil {
		call = map[string]any{"type": "function", "function": map[string]any{"name": "", "arguments": ""}}
		c.calls[int(j64)] = call
	}
	if id, ok := d["id"].(string); ok && id != "" {
		call["id"] = id
	}
	fn := call["function"].(map[string]any)
	if f, ok := d["function"].(map[string]any); ok {
		if n, ok := f["name"].(string); ok && n != "" {
			fn["name"] = n
		}
		a, _ := f["arguments"].(string)
		fn["arguments"] = fn["arguments"].(string) + a
	}
}

func buildChoices(choices map[int]*streamChoice) []any {
	out := make([]any, 0, len(choices))
	for _, i := range slices.Sorted(maps.Keys(choices)) {
		c := choices[i]
		role := c.role
		if role == "" {
			role = "assistant"
		}
		msg := map[string]any{"role": role, "content": c.content}
		if c.reasoning != "" {
			msg["reasoning_content"] = c.reasoning
		}
		if len(c.calls) > 0 {
			var calls []any
			for _, j := range slices.Sorted(maps.Keys(c.calls)) {
				calls = append(calls, c.calls[j])
			}
			msg["tool_calls"] = calls
		}
		out = append(out, map[string]any{"index": json.Number(strconv.Itoa(i)), "message": msg, "finish_reason": c.finish})
	}
	return out
}
