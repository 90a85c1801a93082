package intercept

import (
	"context"
	"fmt"
	"strings"
)

// requestEdit is a link that only edits requests.
type requestEdit func(req *Request) error

func (f requestEdit) Wrap(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		if req.Body != nil {
			if err := f(req); err != nil {
				return nil, err
			}
		}
		return next(ctx, req)
	}
}

// objects returns the elements of the JSON list v that are objects (none
// when v is not a list).
func objects(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// messagesOf returns the body's chat messages that are objects; the body's
// list itself is req.Body["messages"].
func messagesOf(req *Request) []map[string]any { return objects(req.Body["messages"]) }

func setMessages(req *Request, msgs []map[string]any) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = m
	}
	req.Body["messages"] = list
}

// systemMessage is NeMo's system_message: one system message added before
// (prepend, the default) or after (append) the conversation, or in place
// of every system message there is (replace).
type systemMessageConfig struct {
	SystemMessage *string `json:"system_message"`
	Strategy      string  `json:"strategy"`
}

func newSystemMessage(raw []byte) (Interceptor, error) {
	var c systemMessageConfig
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	if c.SystemMessage == nil {
		return nil, fmt.Errorf("config.system_message is required")
	}
	if err := oneOf("strategy", &c.Strategy, "prepend", "append", "replace"); err != nil {
		return nil, err
	}
	return requestEdit(func(req *Request) error {
		sys := map[string]any{"role": "system", "content": *c.SystemMessage}
		msgs := messagesOf(req)
		switch c.Strategy {
		case "replace":
			kept := []map[string]any{sys}
			for _, m := range msgs {
				if m["role"] != "system" {
					kept = append(kept, m)
				}
			}
			msgs = kept
		case "append":
			msgs = append(msgs, sys)
		default:
			msgs = append([]map[string]any{sys}, msgs...)
		}
		setMessages(req, msgs)
		return nil
	}), nil
}

// dropParams is NeMo's drop_params: top-level body keys removed.
func newDropParams(raw []byte) (Interceptor, error) {
	var c struct {
		Params []string `json:"params"`
	}
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	if c.Params == nil {
		return nil, fmt.Errorf("config.params is required")
	}
	return requestEdit(func(req *Request) error {
		for _, p := range c.Params {
			delete(req.Body, p)
		}
		return nil
	}), nil
}

// consolidateSystem is NeMo's consolidate_system: every system message
// merged, in order, into one at the start (some chat templates accept only
// one, and only first).
func newConsolidateSystem(raw []byte) (Interceptor, error) {
	c := struct {
		Separator *string `json:"separator"`
	}{}
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	sep := "\n\n"
	if c.Separator != nil {
		sep = *c.Separator
	}
	return requestEdit(func(req *Request) error {
		msgs := messagesOf(req)
		var texts []string
		var rest []map[string]any
		nsys, firstSys := 0, -1
		for i, m := range msgs {
			if m["role"] != "system" {
				rest = append(rest, m)
				continue
			}
			nsys++
			if firstSys < 0 {
				firstSys = i
			}
			if t := contentText(m["content"]); t != "" {
				texts = append(texts, t)
			}
		}
		if nsys == 0 || (nsys == 1 && firstSys == 0) {
			return nil // already one system message, first
		}
		sys := map[string]any{"role": "system", "content": strings.Join(texts, sep)}
		setMessages(req, append([]map[string]any{sys}, rest...))
		return nil
	}), nil
}

// contentText is a message content as text: a string, or the text parts of
// a list of content parts.
func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			switch pv := p.(type) {
			case map[string]any:
				t, _ := pv["text"].(string)
				parts = append(parts, t)
			case string:
				parts = append(parts, pv)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
