package model

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/plan"
)

// TestMiddlewareChain: an interceptor chain under the client sees the body
// with the generation parameters spliced in, and passes them on exactly
// (temperature 0 sent, 0.7 not 0.699999988) while its links edit the rest.
func TestMiddlewareChain(t *testing.T) {
	var cap capture
	chain, err := intercept.Build([]plan.Interceptor{
		{Name: "system_message", Config: map[string]any{"system_message": "Be brief."}},
		{Name: "drop_params", Config: map[string]any{"params": []any{"seed"}}},
	}, intercept.Env{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := server(t, cap.handler(okChat), func(cfg *Config) { cfg.Middleware = chain.Middleware() })
	req := chatReq()
	req.Generation = plan.Generation{Temperature: ptr(0.0), TopP: ptr(0.7), MaxTokens: ptr(int64(64))}
	ctx := intercept.WithSample(context.Background(), intercept.Sample{Item: "a"})
	resp, err := c.Complete(ctx, req)
	if err != nil || resp.Content != "The answer is 4." {
		t.Fatalf("%+v, %v", resp, err)
	}
	body := cap.last(t)
	if got := fmt.Sprint(body["temperature"]); got != "0" {
		t.Errorf("temperature %s, want 0 sent", got)
	}
	if got := fmt.Sprint(body["top_p"]); got != "0.7" {
		t.Errorf("top_p %s, want 0.7 exactly", got)
	}
	if _, ok := body["seed"]; ok {
		t.Error("seed sent though drop_params removes it")
	}
	msgs := body["messages"].([]any)
	if first := msgs[0].(map[string]any); first["role"] != "system" || first["content"] != "Be brief." || len(msgs) != 2 {
		t.Errorf("messages %v", msgs)
	}
	if !strings.HasPrefix(cap.paths[0], "/v1/chat/completions") {
		t.Errorf("path %s", cap.paths[0])
	}
}
