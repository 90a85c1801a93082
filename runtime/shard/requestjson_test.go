package shard

import (
	"encoding/json"
	"testing"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/plan"
)

// TestRequestJSONMatchesMarshal holds requestJSON, written by hand, to
// the json.Marshal it replaces, for chat (with and without the recipe's
// system prompt, and without messages) and completions, on text with
// every kind of escape.
func TestRequestJSONMatchesMarshal(t *testing.T) {
	texts := []string{"", "Solve: 2<3 & 4>1?\n\"quoted\" \\ tab\t", "é中😀\u2028\xff\x01"}
	sp := "You are <terse>."
	for _, proto := range []string{"chat_completions", "completions"} {
		for _, system := range []*string{nil, &sp} {
			for _, text := range texts {
				r := &runner{svc: &plan.Service{Protocol: proto}, b: &plan.Benchmark{Solver: plan.Solver{SystemPrompt: system}}}
				items := []*bench.Item{
					{Prompt: text, Messages: []bench.Message{{Role: "user", Content: text}}},
					{Prompt: text, Messages: []bench.Message{{Role: "system", Content: "s&"}, {Role: "user", Content: text}}},
					{Prompt: text},
				}
				for _, it := range items {
					var want []byte
					if proto == "completions" {
						want, _ = json.Marshal(map[string]string{"prompt": it.Prompt})
					} else {
						want, _ = json.Marshal(r.messages(it))
					}
					if got := r.requestJSON(it); string(got) != string(want) {
						t.Fatalf("%s, system %v: requestJSON = %s, json.Marshal %s", proto, system != nil, got, want)
					}
				}
			}
		}
	}
}
