package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/nel-eval/nel/runtime/jsonany"
)

// A chat completion's answer read without reflection (issue 23). Decoded by
// encoding/json, its nesting took a request worker's stack past 8 KiB: the
// runtime then doubled the stack, copying it, and halved it again at the
// next garbage collection while the worker waited, on every request, and
// 10,000 waiting workers held 16 KiB each. This reader walks the body once,
// shallowly, keeping only chatReply's fields and skipping the rest. It
// reads what encoding/json reads (TestScanChatAsJSON holds the two to the
// same results), except that member names match exactly, where
// encoding/json also takes "Content" for "content".

// scanner reads one JSON document from b.
type scanner struct {
	b []byte
	i int
}

var errSyntax = errors.New("malformed JSON")

func (s *scanner) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", errSyntax, what, s.i)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.fail(fmt.Sprintf("want %q", c))
	}
	s.i++
	return nil
}

// object calls member for each member of an object (or accepts null).
func (s *scanner) object(member func(key []byte) error) error {
	if s.null() {
		return nil
	}
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.rawString()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("want , or }")
		}
	}
}

// array calls elem for each element of an array (or accepts null).
func (s *scanner) array(elem func(i int) error) error {
	if s.null() {
		return nil
	}
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if err := elem(n); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail("want , or ]")
		}
	}
}

func (s *scanner) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// rawString returns a string token, quotes included.
func (s *scanner) rawString() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("want a string")
	}
	start := s.i
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '\\':
			s.i++
		case c == '"':
			s.i++
			return s.b[start:s.i], nil
		case c < 0x20:
			return nil, s.fail("control character in a string")
		}
	}
	return nil, s.fail("unterminated string")
}

// str reads a string (null: "") into dst.
func (s *scanner) str(dst *string) error {
	if s.null() {
		return nil
	}
	tok, err := s.rawString()
	if err != nil {
		return err
	}
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		*dst = string(body)
		return nil
	}
	// Escapes or invalid UTF-8: as encoding/json unquotes them.
	if u, ok := jsonany.Unquote(tok); ok {
		*dst = u
		return nil
	}
	return json.Unmarshal(tok, dst)
}

// integer reads a number that fits an int (null: unchanged) into dst.
func (s *scanner) integer(dst *int) error {
	if s.null() {
		return nil
	}
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || s.b[s.i] >= '0' && s.b[s.i] <= '9') {
		s.i++
	}
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil || (s.i < len(s.b) && bytes.IndexByte([]byte(".eE"), s.b[s.i]) >= 0) {
		return s.fail("want an integer")
	}
	*dst = n
	return nil
}

// skip passes over any value, checking its syntax.
func (s *scanner) skip() error {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.skip() })
	case c == '[':
		return s.array(func(int) error { return s.skip() })
	case c == '"':
		_, err := s.rawString()
		return err
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				return nil
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		start := s.i
		for s.i < len(s.b) && bytes.IndexByte([]byte("+-.eE0123456789"), s.b[s.i]) >= 0 {
			s.i++
		}
		if !json.Valid(s.b[start:s.i]) {
			return s.fail("bad number")
		}
		return nil
	}
	return s.fail("want a value")
}

// scanChat reads a chat completion's body into out.
func scanChat(body []byte, out *chatReply) error {
	s := &scanner{b: body}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case `"model"`:
			return s.str(&out.Model)
		case `"system_fingerprint"`:
			return s.str(&out.SystemFingerprint)
		case `"choices"`:
			if s.null() {
				out.Choices = nil
				return nil
			}
			out.Choices = make([]chatChoice, 0, 1)
			return s.array(func(int) error {
				out.Choices = append(out.Choices, chatChoice{})
				return s.choice(&out.Choices[len(out.Choices)-1])
			})
		case `"usage"`:
			return s.usage(out)
		}
		return s.skip()
	})
	if err == nil && s.peek() != 0 {
		err = s.fail("data after the document")
	}
	return err
}

func (s *scanner) choice(c *chatChoice) error {
	return s.object(func(key []byte) error {
		switch string(key) {
		case `"finish_reason"`:
			return s.str(&c.FinishReason)
		case `"message"`:
			return s.message(c)
		}
		return s.skip()
	})
}

func (s *scanner) message(c *chatChoice) error {
	m := &c.Message
	return s.object(func(key []byte) error {
		switch string(key) {
		case `"content"`:
			return s.str(&m.Content)
		case `"reasoning_content"`:
			return s.str(&m.ReasoningContent)
		case `"reasoning"`:
			return s.str(&m.Reasoning)
		case `"tool_calls"`:
			if s.null() {
				m.ToolCalls = nil
				return nil
			}
			m.ToolCalls = []chatToolCall{}
			return s.array(func(int) error {
				m.ToolCalls = append(m.ToolCalls, chatToolCall{})
				return s.toolCall(&m.ToolCalls[len(m.ToolCalls)-1])
			})
		}
		return s.skip()
	})
}

func (s *scanner) toolCall(tc *chatToolCall) error {
	return s.object(func(key []byte) error {
		switch string(key) {
		case `"id"`:
			return s.str(&tc.ID)
		case `"function"`:
			return s.object(func(key []byte) error {
				switch string(key) {
				case `"name"`:
					return s.str(&tc.Function.Name)
				case `"arguments"`:
					return s.str(&tc.Function.Arguments)
				}
				return s.skip()
			})
		}
		return s.skip()
	})
}

func (s *scanner) usage(out *chatReply) error {
	u := &out.Usage
	return s.object(func(key []byte) error {
		switch string(key) {
		case `"prompt_tokens"`:
			return s.integer(&u.PromptTokens)
		case `"completion_tokens"`:
			return s.integer(&u.CompletionTokens)
		case `"completion_tokens_details"`:
			if s.null() {
				u.CompletionTokensDetails = nil
				return nil
			}
			if u.CompletionTokensDetails == nil {
				u.CompletionTokensDetails = new(openai.CompletionTokensDetails)
			}
			d := u.CompletionTokensDetails
			return s.object(func(key []byte) error {
				if string(key) == `"reasoning_tokens"` {
					return s.integer(&d.ReasoningTokens)
				}
				return s.skip()
			})
		}
		return s.skip()
	})
}
