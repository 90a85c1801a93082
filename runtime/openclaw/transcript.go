package openclaw

import (
	"encoding/json"
	"fmt"

	"github.com/nel-eval/nel/runtime/agent"
)

// chatRequest is the part of an OpenAI chat request the transcript reads.
type chatRequest struct {
	Messages []struct {
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content"`
		ReasoningContent string          `json:"reasoning_content"`
		ToolCallID       string          `json:"tool_call_id"`
		ToolCalls        []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

// Turns is the run's conversation as nel's turns: the assistant and tool
// messages of OpenClaw's last chat request (what came before the final
// reply), then final, the reply itself. The system prompt and the user's
// messages are not turns (the row has the prompt). Only the final turn
// has a latency and tokens: the earlier ones were answered to OpenClaw.
func Turns(lastRequest []byte, final agent.Turn) ([]agent.Turn, error) {
	var turns []agent.Turn
	if len(lastRequest) > 0 {
		var req chatRequest
		if err := json.Unmarshal(lastRequest, &req); err != nil {
			return nil, fmt.Errorf("openclaw's last chat request: %w", err)
		}
		names := map[string]string{}
		for _, m := range req.Messages {
			switch m.Role {
			case "assistant":
				t := agent.Turn{Role: "assistant", Content: agent.ContentText(m.Content), Reasoning: m.ReasoningContent}
				for _, c := range m.ToolCalls {
					t.ToolCalls = append(t.ToolCalls, agent.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
					names[c.ID] = c.Function.Name
				}
				turns = append(turns, t)
			case "tool":
				out := agent.ContentText(m.Content)
				turns = append(turns, agent.Turn{Role: "tool", Content: out, ToolCallID: m.ToolCallID,
					ToolName: names[m.ToolCallID], OutputChars: len(out)})
			}
		}
	}
	turns = append(turns, final)
	for i := range turns {
		turns[i].Index = i
	}
	return turns, nil
}
