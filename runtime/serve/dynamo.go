package serve

import (
	"encoding/json"
	"fmt"
)

// DynamoReady judges the /health answer of a dynamo frontend. The frontend
// answers 200 as soon as it listens, before any worker has registered, and
// a request it gets then fails; it is ready when at least prefill workers
// of component "prefill" and decode workers of component "decode" (or
// "backend", as an aggregated worker calls itself, or "tensorrt_llm") list
// their "generate" endpoint among the body's instances. This is the rule
// NeMo Evaluator's generated scripts apply.
func DynamoReady(prefill, decode int) func(body []byte) (bool, string) {
	return func(body []byte) (bool, string) {
		var h struct {
			Instances []struct {
				Component string `json:"component"`
				Endpoint  string `json:"endpoint"`
			} `json:"instances"`
		}
		if err := json.Unmarshal(body, &h); err != nil {
			return false, "dynamo /health answered 200 without a JSON body: " + err.Error()
		}
		p, d := 0, 0
		for _, in := range h.Instances {
			if in.Endpoint != "generate" {
				continue
			}
			switch in.Component {
			case "prefill":
				p++
			case "decode", "backend", "tensorrt_llm":
				d++
			}
		}
		if p >= prefill && d >= decode {
			return true, ""
		}
		return false, fmt.Sprintf("%d of %d prefill and %d of %d decode workers registered", p, prefill, d, decode)
	}
}
