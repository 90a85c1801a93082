// Package agent is nel's own multi-turn, tool-using solver (the recipe's
// `tool_calling`): the model is offered tools, each tool call it makes is
// executed and answered, until it answers without a call or a budget ends.
//
// This file is the contract the loop, the tools and the trajectory writer
// share: what a tool is, what one step of a trajectory records, and how a
// sample ended.
package agent

import (
	"context"
	"encoding/json"
)

// ToolSpec is a tool as the model is offered it (OpenAI's function tool:
// name, description, JSON Schema of the arguments).
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolResult is a tool call's answer to the model. IsError marks an answer
// that reports the call failed (bad arguments, a non-zero exit, a path that
// does not exist): the model is told and goes on; it is not an
// infrastructure failure.
type ToolResult struct {
	Output  string
	IsError bool
}

// Tool is one tool. Call's error means the tool could not run at all (the
// sandbox is gone, the resource server does not answer): the sample ends as
// an infrastructure failure, never as a wrong answer.
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, args json.RawMessage) (ToolResult, error)
}

// Outcome is how a sample's agent run ended.
type Outcome string

// The outcomes. Solved and FailedVerifier are decided after the loop, by the
// benchmark's verifier or scorer; the loop itself ends with Answered or one
// of the budget, breaker and error outcomes.
const (
	Answered        Outcome = "answered"         // the model answered without a tool call
	Solved          Outcome = "solved"           // the verifier passed
	FailedVerifier  Outcome = "failed_verifier"  // the verifier ran and did not pass
	TurnBudget      Outcome = "turn_budget"      // max_turns reached
	TimeBudget      Outcome = "time_budget"      // the sample's time budget ended
	RepeatedCall    Outcome = "repeated_call"    // the same tool call, identical, too many times in a row
	ContextOverflow Outcome = "context_overflow" // the conversation outgrew the model's window
	ToolFailure     Outcome = "tool_error"       // a tool failed in a way the run cannot go on from
	ModelError      Outcome = "model_error"      // the model's answer was unusable (refused, malformed beyond repair)
	InfraError      Outcome = "infra_error"      // the endpoint or the sandbox failed
)

// Turn is one step of a trajectory: an assistant message (possibly with
// tool calls) or one tool's answer. Its fields follow the Agent Trajectory
// Interchange Format's step (harbor-format.md) so that trajectories can be
// exported to it.
type Turn struct {
	Index int    `json:"index"` // 0-based, in order of the conversation
	Role  string `json:"role"`  // "assistant" or "tool"
	// Content is the message text (the tool's output for a tool turn),
	// after truncation to max_output_chars for tool output.
	Content string `json:"content"`
	// Reasoning is the assistant's reasoning text, when the endpoint
	// returns it separately.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are an assistant turn's calls, in the order the model
	// made them.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID, ToolName and IsError describe a tool turn.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	// OutputChars is a tool output's length before truncation; Truncated
	// says it was cut (head and tail kept).
	OutputChars int  `json:"output_chars,omitempty"`
	Truncated   bool `json:"truncated,omitempty"`
	// LatencyMS is the model request's (assistant turn) or the tool call's
	// (tool turn) wall-clock time.
	LatencyMS        float64 `json:"latency_ms"`
	PromptTokens     int     `json:"prompt_tokens,omitempty"`
	CompletionTokens int     `json:"completion_tokens,omitempty"`
	FinishReason     string  `json:"finish_reason,omitempty"`
}

// ToolCall is one call an assistant turn makes. Arguments is the JSON text
// the model sent, as sent (it may be malformed: the tool answers with an
// error then).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}
