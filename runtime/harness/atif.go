package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/failure"
)

// The part of an ATIF trajectory (Harbor's agent/trajectory.json,
// harbor-format.md) that becomes turns. analysis/atif writes the format;
// nel-run links no analysis package, so the node reads it with its own
// types. Message and content may be a string or, from v1.6, a list of
// parts; only their text is kept.
type (
	atifTrajectory struct {
		Steps []atifStep `json:"steps"`
	}
	atifStep struct {
		Source           string          `json:"source"`
		Message          json.RawMessage `json:"message"`
		ReasoningContent string          `json:"reasoning_content"`
		ToolCalls        []struct {
			ID        string          `json:"tool_call_id"`
			Name      string          `json:"function_name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
		Observation *struct {
			Results []struct {
				SourceCallID string          `json:"source_call_id"`
				Content      json.RawMessage `json:"content"`
			} `json:"results"`
		} `json:"observation"`
		Metrics *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"metrics"`
	}
)

// readATIF reads a trial's trajectory as the agent's turns: each agent
// step an assistant turn (its message, reasoning, tool calls and tokens),
// then one tool turn per result of its observation. System and user
// steps (the prompt) are not turns. A trial without a trajectory (the
// agent writes none, or the trial failed first) has no turns.
func readATIF(path string) ([]agent.Turn, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var tr atifTrajectory
	if err := json.Unmarshal(raw, &tr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var turns []agent.Turn
	for _, st := range tr.Steps {
		if st.Source != "agent" {
			continue
		}
		t := agent.Turn{Index: len(turns), Role: "assistant", Content: agent.ContentText(st.Message), Reasoning: st.ReasoningContent}
		names := map[string]string{}
		for _, c := range st.ToolCalls {
			t.ToolCalls = append(t.ToolCalls, agent.ToolCall{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)})
			names[c.ID] = c.Name
		}
		if st.Metrics != nil {
			t.PromptTokens, t.CompletionTokens = st.Metrics.PromptTokens, st.Metrics.CompletionTokens
		}
		turns = append(turns, t)
		if st.Observation == nil {
			continue
		}
		for _, r := range st.Observation.Results {
			out := agent.ContentText(r.Content)
			turns = append(turns, agent.Turn{Index: len(turns), Role: "tool", Content: out, OutputChars: len(out),
				ToolCallID: r.SourceCallID, ToolName: names[r.SourceCallID]})
		}
	}
	return turns, nil
}

// harborOutcome is how a trial's agent run ended, in the terms of nel's
// own loop (turns.parquet's outcome): by the verifier when it ran, else
// by the failure.
func harborOutcome(s Sample) agent.Outcome {
	switch s.Error {
	case failure.None:
		if s.Correct != nil && *s.Correct {
			return agent.Solved
		}
		return agent.FailedVerifier
	case failure.Timeout:
		return agent.TimeBudget
	case failure.ContextLength:
		return agent.ContextOverflow
	}
	return agent.InfraError
}
