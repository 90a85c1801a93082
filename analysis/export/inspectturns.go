package export

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
)

// inspectToolCall is Inspect's ToolCall: a call an assistant message made.
type inspectToolCall struct {
	ID         string         `json:"id"`
	Function   string         `json:"function"`
	Arguments  map[string]any `json:"arguments"`
	ParseError *string        `json:"parse_error"`
	View       any            `json:"view"`
	Type       string         `json:"type"`
}

// toolError is Inspect's ToolCallError for a tool turn that failed:
// nel's turns say that it failed, not how, so its type is unknown.
type toolError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// turnsBySample groups an agentic benchmark's turns by sample, each in
// conversation order, leaving out the rows of samples that ended before
// their first turn.
func turnsBySample(turns []results.Turn) map[metrics.RowKey][]results.Turn {
	out := map[metrics.RowKey][]results.Turn{}
	for _, t := range turns {
		if t.Role == results.RoleNone {
			continue
		}
		k := metrics.RowKey{ItemID: t.ItemID, Repeat: t.Repeat}
		out[k] = append(out[k], t)
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b results.Turn) int { return int(a.TurnIndex - b.TurnIndex) })
	}
	return out
}

// turnMessages is a sample's turns as Inspect messages: the assistant's,
// with their tool calls, and each tool's answer.
func turnMessages(turns []results.Turn, model string) []inspectMessage {
	out := make([]inspectMessage, 0, len(turns))
	for _, t := range turns {
		content := t.Content
		if content == "" && t.ContentSHA256 != "" {
			content = fmt.Sprintf("[%d bytes, sha256 %s: longer than nel keeps inline]", t.ContentBytes, t.ContentSHA256)
		}
		m := inspectMessage{Role: t.Role, Content: content}
		switch t.Role {
		case "assistant":
			m.Model = model
			m.ToolCalls = toolCalls(t.ToolCalls)
		case "tool":
			m.ToolCallID, m.Function = t.ToolCallID, t.ToolName
			if t.IsError {
				m.Error = &toolError{Type: "unknown", Message: content}
			}
		default:
			m.Role = "user"
		}
		out = append(out, m)
	}
	return out
}

// toolCalls reads an assistant turn's calls (a JSON list of id, name and
// the arguments as the model wrote them); arguments that are not a JSON
// object become Inspect's parse error, as Inspect records them.
func toolCalls(list string) []inspectToolCall {
	if list == "" {
		return nil
	}
	var calls []struct{ ID, Name, Arguments string }
	if json.Unmarshal([]byte(list), &calls) != nil {
		return nil
	}
	out := make([]inspectToolCall, len(calls))
	for i, c := range calls {
		out[i] = inspectToolCall{ID: c.ID, Function: c.Name, Arguments: map[string]any{}, Type: "function"}
		if err := json.Unmarshal([]byte(c.Arguments), &out[i].Arguments); err != nil || out[i].Arguments == nil {
			msg := fmt.Sprintf("arguments are not a JSON object: %s", c.Arguments)
			out[i].Arguments, out[i].ParseError = map[string]any{}, &msg
		}
	}
	return out
}
