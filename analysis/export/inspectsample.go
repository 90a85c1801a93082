package export

import (
	"encoding/json"
	"strconv"

	"github.com/nel-eval/nel/runtime/results"
)

// inspectSample is one (item, repeat): Inspect's EvalSample, epoch =
// repeat + 1.
type inspectSample struct {
	ID           string                  `json:"id"`
	Epoch        int64                   `json:"epoch"`
	Input        any                     `json:"input"`
	Choices      []string                `json:"choices"`
	Target       string                  `json:"target"`
	Sandbox      any                     `json:"sandbox"`
	Files        []string                `json:"files"`
	Setup        *string                 `json:"setup"`
	Messages     []inspectMessage        `json:"messages"`
	Output       inspectOutput           `json:"output"`
	Scores       map[string]inspectScore `json:"scores"`
	Metadata     map[string]any          `json:"metadata"`
	Store        map[string]any          `json:"store"`
	Events       []any                   `json:"events"`
	ModelUsage   map[string]inspectUsage `json:"model_usage"`
	StartedAt    *string                 `json:"started_at"`
	CompletedAt  *string                 `json:"completed_at"`
	TotalTime    *float64                `json:"total_time"`
	WorkingTime  *float64                `json:"working_time"`
	UUID         string                  `json:"uuid"`
	Invalidation any                     `json:"invalidation"`
	Error        *inspectError           `json:"error"`
	ErrorRetries []inspectError          `json:"error_retries"`
	Attachments  map[string]string       `json:"attachments"`
	Limit        any                     `json:"limit"`
}

// inspectMessage is a system, user or assistant chat message. Inspect's
// schema wants every field of its role and none of another's, so it
// marshals by role.
type inspectMessage struct {
	Role    string
	Content string
	// Model is the assistant's model ("" writes null), ToolCalls the
	// calls it made.
	Model     string
	ToolCalls []inspectToolCall
	// ToolCallID, Function and Error are a tool message's.
	ToolCallID, Function string
	Error                *toolError
}

func (m inspectMessage) MarshalJSON() ([]byte, error) {
	out := map[string]any{"id": nil, "content": m.Content, "source": nil, "metadata": nil, "role": m.Role}
	switch m.Role {
	case "user":
		out["tool_call_id"] = nil
	case "assistant":
		out["tool_calls"], out["model"] = nil, nil
		if m.ToolCalls != nil {
			out["tool_calls"] = m.ToolCalls
		}
		if m.Model != "" {
			out["model"] = m.Model
		}
	case "tool":
		out["tool_call_id"], out["function"], out["error"] = nilIfEmpty(m.ToolCallID), nilIfEmpty(m.Function), nil
		if m.Error != nil {
			out["error"] = m.Error
		}
	}
	return json.Marshal(out)
}

type inspectOutput struct {
	Model      string          `json:"model"`
	Choices    []inspectChoice `json:"choices"`
	Completion string          `json:"completion"`
	Usage      *inspectUsage   `json:"usage"`
	Time       *float64        `json:"time"`
	Metadata   map[string]any  `json:"metadata"`
	Error      *string         `json:"error"`
}

type inspectChoice struct {
	Message    inspectMessage `json:"message"`
	StopReason string         `json:"stop_reason"`
	Logprobs   any            `json:"logprobs"`
}

type inspectScore struct {
	Value       float64        `json:"value"`
	Answer      string         `json:"answer"`
	Explanation *string        `json:"explanation"`
	Metadata    map[string]any `json:"metadata"`
	History     []any          `json:"history"`
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// inspectSampleOf is one sample; turns are its agent's turns (nil for a
// benchmark whose solver takes none).
func inspectSampleOf(r results.Row, t results.Trajectory, turns []results.Turn, model string) inspectSample {
	input := requestMessages(t.Request)
	served := r.Model
	if served == "" {
		served = model
	}
	reply := inspectMessage{Role: "assistant", Content: t.Response, Model: served}
	answer := []inspectMessage{reply}
	if len(turns) > 0 {
		answer = turnMessages(turns, served)
	}
	conversation := append(append([]inspectMessage{}, input...), answer...)
	u := usage(r.PromptTokens, r.CompletionTokens, r.ReasoningTokens)
	secs := r.LatencyMS / 1000
	s := inspectSample{
		ID: r.ItemID, Epoch: r.Repeat + 1, Input: inputOf(input), Target: r.Expected,
		Messages: conversation,
		Output: inspectOutput{
			Model: served, Completion: t.Response, Usage: &u, Time: &secs,
			Choices: []inspectChoice{{Message: reply, StopReason: stopReason(r.FinishReason)}},
		},
		Scores: map[string]inspectScore{inspectScorerName: {
			Value: r.Reward, Answer: r.Extracted, History: []any{},
			Metadata: map[string]any{"outcome": r.Outcome, "error_category": r.ErrorCategory, "scores": r.Scores},
		}},
		Metadata: map[string]any{
			"item_idx": r.ItemIdx, "category": r.Category, "outcome": r.Outcome, "seed": r.Seed,
			"attempts": r.Attempts, "finish_reason": r.FinishReason,
		},
		Store: map[string]any{}, Events: []any{}, TotalTime: &secs,
		ModelUsage:  map[string]inspectUsage{model: u},
		UUID:        id(22, r.RecipeHash, r.Benchmark, r.ItemID, strconv.FormatInt(r.Repeat, 10)),
		Attachments: map[string]string{},
	}
	if r.Outcome == "infra_error" {
		// Not scored: nel's statistics leave it out, and so does Inspect
		// with a sample that errored.
		s.Error = &inspectError{Message: r.ErrorCategory + ": " + r.ErrorMessage}
		s.Scores = nil
	}
	return s
}

// requestMessages reads a trajectory's request: chat messages, or a
// completions prompt ({"prompt": …}) as one user message.
func requestMessages(req string) []inspectMessage {
	var chat []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal([]byte(req), &chat) == nil {
		out := make([]inspectMessage, 0, len(chat))
		for _, m := range chat {
			var text string
			if json.Unmarshal(m.Content, &text) != nil {
				text = string(m.Content) // multimodal parts, kept as their JSON
			}
			role := m.Role
			if role != "system" && role != "assistant" {
				role = "user" // tool results too: Inspect's tool message needs the call it answers
			}
			out = append(out, inspectMessage{Role: role, Content: text})
		}
		return out
	}
	var prompt struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal([]byte(req), &prompt)
	return []inspectMessage{{Role: "user", Content: prompt.Prompt}}
}

// inputOf is Inspect's sample input: the user's text when the request was
// one user message, as Inspect writes a plain-string input, else the
// messages.
func inputOf(msgs []inspectMessage) any {
	if len(msgs) == 1 && msgs[0].Role == "user" {
		return msgs[0].Content
	}
	return msgs
}

// stopReason maps an OpenAI finish_reason to Inspect's stop reasons.
func stopReason(finish string) string {
	switch finish {
	case "stop", "tool_calls", "content_filter":
		return finish
	case "length":
		return "max_tokens"
	}
	return "unknown"
}
