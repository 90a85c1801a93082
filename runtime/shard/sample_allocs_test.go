package shard

import (
	"context"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
)

// The per-sample work after the answer, counted in allocations (wall
// time is noise on a shared machine): a gsm8k answer scored, its row and
// trajectory made (conclude) and its journal record written (AppendJSON).
// With encoding/json for the trajectory's request, its scoring details
// and the journal record, the gsm8k scorer's regexp and a judge recorder
// per sample it was 25 (issue 23; measured with this test at e5aaed0,
// json.Marshal in AppendJSON's place); now 14. The bound catches a return
// to reflection or to the regexp engine on this path.
func TestConcludeAllocs(t *testing.T) {
	const maxAllocs = 16
	def, ok := bench.Lookup("gsm8k")
	if !ok {
		t.Fatal("no gsm8k")
	}
	r := &runner{
		p:   &plan.Plan{RecipeHash: "sha256:" + "ab12"},
		b:   &plan.Benchmark{Key: "gsm8k"},
		svc: &plan.Service{Model: "nel-sim", Protocol: "chat_completions"},
		def: def, binary: true,
	}
	it := &bench.Item{ID: "0123456789abcdef", Index: 7, Expected: "18",
		Messages: []bench.Message{{Role: "user", Content: "Solve the following math problem step by step.\n\nProblem: Janet's ducks lay 16 eggs per day."}}}
	for _, c := range []struct {
		content string
		correct bool
	}{
		{"Janet sells 16 - 3 - 4 = 9 eggs.\nShe makes 9 * 2 = 18 dollars.\nThe answer is 18.", true},
		{"Janet sells 16 - 3 - 4 = 9 eggs.\nShe makes 9 * 3 = 27 dollars.\nThe answer is 27.", false},
	} {
		a := answer{it: it, repeat: 1, attempt: 1, seed: 42, latency: 12 * time.Millisecond,
			resp: &model.Response{Content: c.content, FinishReason: "stop", Model: "nel-sim", PromptTokens: 40, CompletionTokens: 30, Attempts: 1}}
		rec, _ := r.conclude(context.Background(), a)
		if rec == nil || rec.Row.Correct == nil || *rec.Row.Correct != c.correct {
			t.Fatalf("%q: record %+v", c.content, rec)
		}
		n := testing.AllocsPerRun(200, func() {
			rec, _ := r.conclude(context.Background(), a)
			if _, ok := rec.AppendJSON(make([]byte, 0, rec.SizeJSON())); !ok {
				t.Fatal("AppendJSON declined")
			}
		})
		t.Logf("correct %v: %.0f allocations", c.correct, n)
		if n > maxAllocs {
			t.Errorf("correct %v: %.0f allocations per sample, want at most %d", c.correct, n, maxAllocs)
		}
	}
}
