package model

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
)

// The tools, the assistant's earlier calls and the tool answers reach the
// server in OpenAI's shape: tools as function tools with their schema as
// given, an assistant message's tool_calls with type "function" and the
// arguments text as the model wrote it (malformed included), and tool
// messages with the id of the call they answer.
func TestWireTools(t *testing.T) {
	var cp capture
	c, _ := server(t, cp.handler(okChat))
	schema := `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`
	req := Request{
		Messages: []Message{
			{Role: "user", Content: "list /app"},
			{Role: "assistant", ToolCalls: []ToolCall{
				{ID: "call_1", Name: "bash", Arguments: `{"command":"ls /app"}`},
				{ID: "call_2", Name: "bash", Arguments: `{"command": "ls`},
			}},
			{Role: "tool", ToolCallID: "call_1", Content: "a.txt"},
			{Role: "tool", ToolCallID: "call_2", Content: "error: arguments are not JSON"},
		},
		Tools: []Tool{{Name: "bash", Description: "Run a command.", Parameters: json.RawMessage(schema)}, {Name: "noargs"}},
		Seed:  1,
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
		Tools    []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(cp.bodies[0], &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 2 || body.Tools[0].Type != "function" || body.Tools[0].Function.Name != "bash" ||
		body.Tools[0].Function.Description != "Run a command." || string(body.Tools[0].Function.Parameters) != schema {
		t.Errorf("tools on the wire: %+v", body.Tools)
	}
	if got := string(body.Tools[1].Function.Parameters); got != `{"type":"object","properties":{}}` {
		t.Errorf("a tool without a schema is offered with parameters %s, want an empty object schema", got)
	}
	if len(body.Messages) != 4 {
		t.Fatalf("%d messages on the wire, want 4: %s", len(body.Messages), cp.bodies[0])
	}
	calls, _ := body.Messages[1]["tool_calls"].([]any)
	if len(calls) != 2 {
		t.Fatalf("assistant message's tool_calls: %v", body.Messages[1])
	}
	second := calls[1].(map[string]any)
	fn := second["function"].(map[string]any)
	if second["id"] != "call_2" || second["type"] != "function" || fn["name"] != "bash" || fn["arguments"] != `{"command": "ls` {
		t.Errorf("second tool call on the wire: %v", second)
	}
	if m := body.Messages[3]; m["role"] != "tool" || m["tool_call_id"] != "call_2" || m["content"] != "error: arguments are not JSON" {
		t.Errorf("tool message on the wire: %v", m)
	}
	if _, ok := body.Messages[0]["tool_calls"]; ok {
		t.Errorf("a user message carries tool_calls: %v", body.Messages[0])
	}
}

// A response with parallel calls and no content (vLLM's shape with a tool
// parser) is an answer, its calls in the model's order, not an empty
// response.
func TestParseToolCalls(t *testing.T) {
	const resp = `{"id":"x","object":"chat.completion","created":1,"model":"m",
"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
 {"id":"chatcmpl-tool-a","type":"function","function":{"name":"file_read","arguments":"{\"path\": \"/app/a\"}"}},
 {"id":"chatcmpl-tool-b","type":"function","function":{"name":"bash","arguments":"{\"command\": \"pwd\"}"}}]},
 "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}`
	var cp capture
	c, _ := server(t, cp.handler(resp))
	r, err := c.Complete(context.Background(), chatReq())
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "chatcmpl-tool-a", Name: "file_read", Arguments: `{"path": "/app/a"}`},
		{ID: "chatcmpl-tool-b", Name: "bash", Arguments: `{"command": "pwd"}`},
	}
	if len(r.ToolCalls) != 2 || r.ToolCalls[0] != want[0] || r.ToolCalls[1] != want[1] {
		t.Errorf("tool calls %+v, want %+v", r.ToolCalls, want)
	}
	if r.FinishReason != "tool_calls" || r.Content != "" || r.PromptTokens != 30 || r.CompletionTokens != 12 {
		t.Errorf("response %+v", r)
	}
}

// The forms in which vLLM, SGLang and OpenAI reject a conversation longer
// than the model's window are all context_length, never retried.
func TestContextLengthForms(t *testing.T) {
	for name, body := range map[string]string{
		// vLLM ≥ 0.6 (error object at the top level, and nested since 0.9).
		"vllm":        `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
		"vllm nested": `{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 2048. This model's maximum context length is 4096 tokens and your request has 3000 input tokens (2048 > 4096 - 3000).","type":"BadRequestError","param":null,"code":400}}`,
		// vLLM's V1 engine, checking the prompt before scheduling.
		"vllm v1": `{"error":{"message":"The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that max_model_len is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}`,
		// SGLang: the prompt alone, and prompt plus max_tokens.
		"sglang max_tokens": `{"object":"error","message":"Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a total of 5000 tokens: 3000 tokens from the input messages and 2000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.","type":"BadRequestError","param":null,"code":400}`,
		"sglang":            `{"object":"error","message":"The input (5000 tokens) is longer than the model's context length (4096 tokens).","type":"BadRequestError","param":null,"code":400}`,
		// OpenAI: the code says it whatever the message.
		"openai": `{"error":{"message":"Your messages resulted in 130000 tokens. Please reduce them.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := server(t, reply(400, body), func(c *Config) { c.MaxRetries = 2 })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := c.Complete(ctx, chatReq())
			var f *failure.Error
			if !errors.As(err, &f) || f.Category != failure.ContextLength || f.Attempts != 1 {
				t.Errorf("got %v, want context_length after 1 attempt", err)
			}
		})
	}
}

// Tools on a protocol that has no function tools here are refused before
// anything is sent, not dropped.
func TestToolsNeedChat(t *testing.T) {
	var cp capture
	c, _ := server(t, cp.handler(okChat), func(c *Config) { c.Protocol = Completions })
	_, err := c.Complete(context.Background(), Request{Prompt: "x", Tools: []Tool{{Name: "bash"}}})
	if err == nil || len(cp.bodies) != 0 {
		t.Fatalf("err %v, %d requests sent; want a refusal and none", err, len(cp.bodies))
	}
}
