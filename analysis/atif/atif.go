// Package atif converts a sample's agent turns to the Agent Trajectory
// Interchange Format (ATIF, Harbor's trajectory format), so that nel's
// trajectories open in the tools that read Harbor's.
//
// nel writes ATIF v1.4, the last version whose documents every later
// reader accepts (session_id is still required there). One sample is one
// trajectory: an optional system step, the user's instruction, then one
// agent step per assistant turn, holding its tool calls and, as its
// observation, the answers of the tool turns that follow it.
package atif

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/results"
)

// SchemaVersion is the ATIF version Convert writes.
const SchemaVersion = "ATIF-v1.4"

// Trajectory is an ATIF document's root.
type Trajectory struct {
	SchemaVersion string         `json:"schema_version"`
	SessionID     string         `json:"session_id"`
	Agent         Agent          `json:"agent"`
	Steps         []Step         `json:"steps"`
	Notes         string         `json:"notes,omitempty"`
	FinalMetrics  *FinalMetrics  `json:"final_metrics,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

// Agent identifies the agent that produced a trajectory.
type Agent struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	ModelName string         `json:"model_name,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

// Step is one step: a system prompt, a user message, or an agent turn with
// its tool calls and their results.
type Step struct {
	StepID           int            `json:"step_id"`
	Source           string         `json:"source"` // "system", "user" or "agent"
	ModelName        string         `json:"model_name,omitempty"`
	Message          string         `json:"message"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall     `json:"tool_calls,omitempty"`
	Observation      *Observation   `json:"observation,omitempty"`
	Metrics          *Metrics       `json:"metrics,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

// ToolCall is one call of an agent step. Arguments is a JSON object.
type ToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
}

// Observation holds the results of an agent step's tool calls.
type Observation struct {
	Results []Result `json:"results"`
}

// Result is one tool call's output.
type Result struct {
	SourceCallID string `json:"source_call_id,omitempty"`
	Content      string `json:"content"`
}

// Metrics are an agent step's token counts (0: not reported).
type Metrics struct {
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
}

// FinalMetrics are the trajectory's totals.
type FinalMetrics struct {
	TotalPromptTokens     int `json:"total_prompt_tokens"`
	TotalCompletionTokens int `json:"total_completion_tokens"`
	TotalSteps            int `json:"total_steps"`
}

// Sample is what Convert needs of one sample.
type Sample struct {
	// SessionID names the trajectory; nel uses
	// "<recipe hash>/<benchmark>/<item id>/<repeat>", unique across runs
	// of different recipes and stable across re-runs of one.
	SessionID string
	Agent     Agent
	// System and Instruction are the system prompt and the task's prompt;
	// an empty one has no step.
	System, Instruction string
	Turns               []agent.Turn
	// Extra goes to the root's extra (nel puts the benchmark, item,
	// repeat, outcome and reward there).
	Extra map[string]any
}

// Convert returns s as an ATIF trajectory. A tool turn must follow an
// assistant turn that made its call. Arguments that are not a JSON object
// (the model sent malformed JSON) are written as {} and kept, as sent, in
// the step's extra under "raw_arguments" by call id; the details ATIF has
// no field for (latency, finish reason, tool errors and truncation) are in
// the step's extra as well.
func Convert(s Sample) (*Trajectory, error) {
	t := &Trajectory{SchemaVersion: SchemaVersion, SessionID: s.SessionID, Agent: s.Agent, Steps: []Step{}, Extra: s.Extra}
	add := func(st Step) *Step {
		st.StepID = len(t.Steps) + 1
		t.Steps = append(t.Steps, st)
		return &t.Steps[len(t.Steps)-1]
	}
	if s.System != "" {
		add(Step{Source: "system", Message: s.System})
	}
	if s.Instruction != "" {
		add(Step{Source: "user", Message: s.Instruction})
	}
	fm := &FinalMetrics{}
	var last *Step // the agent step tool turns answer
	for _, turn := range s.Turns {
		switch turn.Role {
		case "assistant":
			last = add(agentStep(turn))
			fm.TotalPromptTokens += turn.PromptTokens
			fm.TotalCompletionTokens += turn.CompletionTokens
		case "tool":
			if last == nil || !calls(last, turn.ToolCallID) {
				return nil, fmt.Errorf("turn %d: tool answer to call %q, which no assistant turn before it made", turn.Index, turn.ToolCallID)
			}
			addResult(last, turn)
		default:
			return nil, fmt.Errorf("turn %d: role %q is neither assistant nor tool", turn.Index, turn.Role)
		}
	}
	fm.TotalSteps = len(t.Steps)
	t.FinalMetrics = fm
	return t, nil
}

// agentStep is an assistant turn's step, without its results.
func agentStep(turn agent.Turn) Step {
	st := Step{Source: "agent", Message: turn.Content, ReasoningContent: turn.Reasoning}
	if turn.PromptTokens != 0 || turn.CompletionTokens != 0 {
		st.Metrics = &Metrics{PromptTokens: turn.PromptTokens, CompletionTokens: turn.CompletionTokens}
	}
	extra := map[string]any{"latency_ms": turn.LatencyMS}
	if turn.FinishReason != "" {
		extra["finish_reason"] = turn.FinishReason
	}
	raw := map[string]string{}
	for _, c := range turn.ToolCalls {
		args := json.RawMessage(c.Arguments)
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) != nil || obj == nil {
			raw[c.ID], args = c.Arguments, json.RawMessage("{}")
		}
		st.ToolCalls = append(st.ToolCalls, ToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: args})
	}
	if len(raw) > 0 {
		extra["raw_arguments"] = raw
	}
	st.Extra = extra
	return st
}

func calls(st *Step, id string) bool {
	for _, c := range st.ToolCalls {
		if c.ToolCallID == id {
			return true
		}
	}
	return false
}

// addResult adds a tool turn's output to st's observation, and what ATIF
// has no field for to st's extra "tool_results", in the same order.
func addResult(st *Step, turn agent.Turn) {
	if st.Observation == nil {
		st.Observation = &Observation{}
	}
	st.Observation.Results = append(st.Observation.Results, Result{SourceCallID: turn.ToolCallID, Content: turn.Content})
	detail := map[string]any{"source_call_id": turn.ToolCallID, "latency_ms": turn.LatencyMS}
	if turn.IsError {
		detail["is_error"] = true
	}
	if turn.Truncated {
		detail["truncated"], detail["output_chars"] = true, turn.OutputChars
	}
	list, _ := st.Extra["tool_results"].([]map[string]any)
	st.Extra["tool_results"] = append(list, detail)
}

// Samples groups turns.parquet rows by sample, in the order samples first
// appear, into Samples for Convert: the session id
// "<recipe hash>/<benchmark>/<item id>/<repeat>", the turns, and the
// benchmark, item, repeat and outcome in Extra. The instruction is not in
// turns.parquet (it is the request in trajectories.parquet): a caller that
// has it sets it.
func Samples(rows []results.Turn, ag Agent) ([]Sample, error) {
	type key struct {
		id     string
		repeat int64
	}
	at := map[key]int{}
	var groups [][]results.Turn
	for _, r := range rows {
		k := key{r.ItemID, r.Repeat}
		i, ok := at[k]
		if !ok {
			i = len(groups)
			at[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	out := make([]Sample, 0, len(groups))
	for _, g := range groups {
		slices.SortStableFunc(g, func(a, b results.Turn) int { return cmp.Compare(a.TurnIndex, b.TurnIndex) })
		turns, err := results.AgentTurns(g)
		if err != nil {
			return nil, err
		}
		r := g[0]
		out = append(out, Sample{
			SessionID: fmt.Sprintf("%s/%s/%s/%d", r.RecipeHash, r.Benchmark, r.ItemID, r.Repeat),
			Agent:     ag, Turns: turns,
			Extra: map[string]any{"benchmark": r.Benchmark, "item_id": r.ItemID, "repeat": r.Repeat, "outcome": r.Outcome},
		})
	}
	return out, nil
}
