package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// The chat completion hot path (issue 23): a request without tools is
// written and its answer read here, without go-openai. go-openai encodes
// its request struct by reflection, the hook then decodes that body into
// a map to splice the generation parameters in and encodes it again, and
// the answer is decoded into go-openai's full response struct through
// http.Client: three reflective passes and a deep call stack per request,
// which at 10,000 in flight is CPU and goroutine stack. Here the body is
// written once, in the bytes the slow path sends (chatBodyMatches in the
// tests holds the two to that), and only the fields nel reads are decoded.

// fastChat sends req as a chat completion unless the slow path must (tools
// offered or called, a redirect); handled is false then, and nothing was
// counted as an attempt.
func (c *Client) fastChat(ctx context.Context, req Request, w *wire) (r *Response, err error, handled bool) {
	if len(req.Tools) > 0 || slices.ContainsFunc(req.Messages, func(m Message) bool { return len(m.ToolCalls) > 0 }) {
		return nil, nil, false
	}
	body := appendChatBody(make([]byte, 0, chatBodySize(c.cfg.Model, req.Messages, w.overlay)), c.cfg.Model, req.Messages, w.overlay)
	endpoint := c.chatURL
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err, true
	}
	if _, own := c.transport.base.(*plainTransport); own {
		hr.Header = c.chatHeader
	} else {
		hr.Header = c.chatHeader.Clone()
	}
	resp, err := c.transport.base.RoundTrip(hr)
	if err != nil {
		// As http.Client says it, so that messages read the same.
		return nil, &url.Error{Op: "Post", URL: endpoint, Err: err}, true
	}
	b, err := readBody(resp.Body, resp.ContentLength)
	resp.Body.Close()
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: endpoint, Err: err}, true
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, nil, false // http.Client follows redirects
	}
	w.got, w.status, w.header = true, resp.StatusCode, resp.Header
	if len(b) > maxBody {
		return nil, &url.Error{Op: "Post", URL: endpoint, Err: fmt.Errorf("response body larger than %d bytes", maxBody)}, true
	}
	w.body = b
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return nil, errorResponse(resp, b), true
	}
	r, err = decodeChat(b)
	return r, err, true
}

// readBody reads body to its end, at most maxBody+1 bytes of it. Where
// the response said its size, that is read into one buffer of the size
// (io.ReadAll grows its own from 512 bytes, copying as it goes).
func readBody(body io.Reader, size int64) ([]byte, error) {
	if size < 0 || size > maxBody {
		return io.ReadAll(io.LimitReader(body, maxBody+1))
	}
	b := make([]byte, 0, size+1) // +1: room for the read that finds the end
	for {
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b): // longer than it said: read the rest as before
			return io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(b), body), maxBody+1))
		}
	}
}

// errorResponse is the error go-openai returns for a failure status: its
// APIError when the body holds {"error": {...}}, else a RequestError.
func errorResponse(resp *http.Response, body []byte) error {
	var er openai.ErrorResponse
	err := json.Unmarshal(body, &er)
	if err != nil || er.Error == nil {
		re := &openai.RequestError{HTTPStatus: resp.Status, HTTPStatusCode: resp.StatusCode, Err: err, Body: body}
		if er.Error != nil {
			re.Err = er.Error
		}
		return re
	}
	er.Error.HTTPStatus, er.Error.HTTPStatusCode = resp.Status, resp.StatusCode
	return er.Error
}

// chatReply is the part of a chat completion nel reads (scanChat fills it;
// the JSON tags say where each field is, and let the tests decode it with
// encoding/json too).
type chatReply struct {
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             struct {
		PromptTokens            int                             `json:"prompt_tokens"`
		CompletionTokens        int                             `json:"completion_tokens"`
		CompletionTokensDetails *openai.CompletionTokensDetails `json:"completion_tokens_details"`
	} `json:"usage"`
}

type chatChoice struct {
	FinishReason string `json:"finish_reason"`
	Message      struct {
		Content          string `json:"content"`
		ReasoningContent string `json:"reasoning_content"`
		// Some servers (vLLM ≥ 0.10 with a reasoning parser,
		// OpenRouter) name the field "reasoning".
		Reasoning string         `json:"reasoning"`
		ToolCalls []chatToolCall `json:"tool_calls"`
	} `json:"message"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func decodeChat(body []byte) (*Response, error) {
	var out chatReply
	if err := scanChat(body, &out); err != nil {
		return nil, err
	}
	if len(out.Choices) == 0 {
		return nil, errEmptyChoices
	}
	ch := out.Choices[0]
	r := &Response{
		Content:      ch.Message.Content,
		Reasoning:    cmpOr(ch.Message.ReasoningContent, ch.Message.Reasoning),
		FinishReason: ch.FinishReason,
		Model:        out.Model,
		Simulated:    strings.HasPrefix(out.SystemFingerprint, SimulatedFingerprint),

		SystemFingerprint: out.SystemFingerprint,
	}
	for _, tc := range ch.Message.ToolCalls {
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	setUsage(r, out.Usage.PromptTokens, out.Usage.CompletionTokens, out.Usage.CompletionTokensDetails)
	return finish(r)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// appendChatBody appends the JSON body of a chat completion: "messages"
// and "model", then the overlay's fields (which win over those two, as
// extra_body can), members in sorted order, values as json.Marshal writes
// them: the bytes mergeFields makes of go-openai's body.
func appendChatBody(dst []byte, model string, msgs []Message, overlay []field) []byte {
	type member struct {
		key string
		val []byte // nil: "messages", written in place
	}
	ms := make([]member, 0, len(overlay)+2)
	ms = append(ms, member{"messages", nil}, member{"model", appendString(nil, model)})
	for _, f := range overlay {
		if i := slices.IndexFunc(ms, func(m member) bool { return m.key == f.key }); i >= 0 {
			ms[i].val = f.val
			if f.val == nil {
				ms[i].val = []byte("null")
			}
			continue
		}
		v := []byte(f.val)
		if v == nil {
			v = []byte("null") // as Marshal writes a nil RawMessage
		}
		ms = append(ms, member{f.key, v})
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		if m.val == nil {
			dst = appendMessages(dst, msgs)
		} else {
			dst = append(dst, m.val...)
		}
	}
	return append(dst, '}')
}

// chatBodySize is about the length of appendChatBody's body: its texts
// and what the syntax and escapes add, so that it is written into one
// buffer.
func chatBodySize(model string, msgs []Message, overlay []field) int {
	n := 64 + len(model)
	for _, m := range msgs {
		n += 40 + len(m.Role) + len(m.Content) + len(m.Content)/8 + len(m.ToolCallID)
	}
	for _, f := range overlay {
		n += 4 + len(f.key) + len(f.val)
	}
	return n
}

// appendMessages writes messages without tool calls as go-openai does:
// role, then content and tool_call_id when not empty.
func appendMessages(dst []byte, msgs []Message) []byte {
	dst = append(dst, '[')
	for i, m := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"role":`...)
		dst = appendString(dst, m.Role)
		if m.Content != "" {
			dst = append(dst, `,"content":`...)
			dst = appendString(dst, m.Content)
		}
		if m.ToolCallID != "" {
			dst = append(dst, `,"tool_call_id":`...)
			dst = appendString(dst, m.ToolCallID)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendString writes s as json.Marshal does (HTML characters escaped,
// invalid UTF-8 replaced): text of printable ASCII with the common escapes
// directly, anything else through json.Marshal.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\t':
			esc = `\t`
		case '\r':
			esc = `\r`
		default:
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, esc...)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
