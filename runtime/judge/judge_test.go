package judge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
)

// fake answers from a script, one answer per call, and keeps the requests.
type fake struct {
	mu      sync.Mutex
	answers []string
	errs    []error
	block   bool // wait for the ctx to end
	reqs    []model.Request
}

func (f *fake) Complete(ctx context.Context, req model.Request) (*model.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	i := len(f.reqs) - 1
	f.mu.Unlock()
	if f.block {
		<-ctx.Done()
		return nil, &failure.Error{Category: failure.Timeout, Err: ctx.Err()}
	}
	if i < len(f.errs) && f.errs[i] != nil {
		return nil, f.errs[i]
	}
	return &model.Response{Content: f.answers[min(i, len(f.answers)-1)], Attempts: 1}, nil
}

func TestPrompt(t *testing.T) {
	j := New(Config{Name: "q"}, &fake{})
	msgs := j.Prompt("What is 2+2?", "It is 4.", "4")
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[0].Content != DefaultSystem {
		t.Fatalf("messages %+v: want the default system message first", msgs)
	}
	u := msgs[1].Content
	for _, want := range []string{"Instruction:\nWhat is 2+2?", "Response:\nIt is 4.", "Reference answer:\n4", `{"score": <1-5>, "reasoning": "..."}`} {
		if !strings.Contains(u, want) {
			t.Errorf("default rubric lacks %q:\n%s", want, u)
		}
	}
	if strings.Contains(u, "{{") {
		t.Errorf("a placeholder is left in the prompt:\n%s", u)
	}
	if u := j.Prompt("Q", "R", "")[1].Content; strings.Contains(u, "Reference answer") {
		t.Errorf("no reference, yet a reference section:\n%s", u)
	}
	free := New(Config{ReferenceFree: true}, &fake{})
	if u := free.Prompt("Q", "R", "gold")[1].Content; strings.Contains(u, "gold") || strings.Contains(u, "Reference answer") {
		t.Errorf("reference_free, yet the reference is in the prompt:\n%s", u)
	}
	crit := New(Config{Rubric: "Be strict about units."}, &fake{})
	if u := crit.Prompt("Q", "R", "G")[1].Content; !strings.Contains(u, "\nCriteria:\nBe strict about units.\n") || !strings.Contains(u, "Response:\nR") || !strings.Contains(u, "Reference answer:\nG") {
		t.Errorf("criteria rubric: the default prompt with a criteria section, got:\n%s", u)
	}
	if u := j.Prompt("Q", "R", "G")[1].Content; strings.Contains(u, "Criteria") {
		t.Errorf("no rubric, yet a criteria section:\n%s", u)
	}
	custom := New(Config{Rubric: "Q={{question}} R={{response}} G={{reference}}", System: "Be fair."}, &fake{})
	got := custom.Prompt("q?", "I say {{reference}}", "g")
	if got[0].Content != "Be fair." || got[1].Content != "Q=q? R=I say {{reference}} G=g" {
		t.Errorf("custom rubric: %+v", got)
	}
}

func TestCheckRubric(t *testing.T) {
	if err := CheckRubric("Rate {{response}} against {{reference}}."); err != nil {
		t.Error(err)
	}
	if err := CheckRubric("Rate the answer to {{question}}."); err == nil || !strings.Contains(err.Error(), "{{response}}") {
		t.Errorf("a template without {{response}}: %v", err)
	}
	if err := CheckRubric("Be strict about units."); err != nil {
		t.Errorf("criteria text: %v", err)
	}
}

func TestFromMetric(t *testing.T) {
	r := "Rate {{response}}"
	c := FromMetric(plan.Metric{Type: "judge", Name: "j", Rubric: &r, Timeout: 1.5, MaxRetries: 3, Temperature: 0.2, ReferenceFree: true})
	if c.Rubric != r || c.Timeout != 1500*time.Millisecond || c.MaxRetries != 3 || c.Temperature != 0.2 || !c.ReferenceFree || c.MaxScore != 5 || c.MaxTokens != 2048 {
		t.Errorf("FromMetric: %+v", c)
	}
}

func TestScoreRecordsCalls(t *testing.T) {
	f := &fake{answers: []string{`{"score": 4, "reasoning": "good"}`}}
	j := New(Config{Name: "quality", Temperature: 0.3, MaxTokens: 64, Timeout: time.Second}, f)
	ctx, rec := WithRecorder(context.Background())
	v, err := j.Score(ctx, "Q", "R", "G")
	if err != nil {
		t.Fatal(err)
	}
	if v.Score != 4 || v.Normalized != 0.8 || v.How != "json" {
		t.Errorf("verdict %+v", v)
	}
	req := f.reqs[0]
	if req.Generation.Temperature == nil || *req.Generation.Temperature != 0.3 || req.Generation.MaxTokens == nil || *req.Generation.MaxTokens != 64 {
		t.Errorf("request generation %+v: want temperature 0.3, max_tokens 64", req.Generation)
	}
	calls := rec.Calls()
	if len(calls) != 1 || calls[0].Judge != "quality" || calls[0].Raw != f.answers[0] || calls[0].Score == nil || *calls[0].Score != 4 ||
		len(calls[0].Messages) != 2 || !strings.Contains(calls[0].Messages[1].Content, "Response:\nR") || calls[0].Error != "" {
		t.Errorf("recorded %+v", calls)
	}
	b, _ := json.Marshal(calls)
	if !strings.Contains(string(b), `"raw":"{\"score\": 4`) {
		t.Errorf("JSON form %s", b)
	}
}

// An unparseable answer is asked once more; both calls are recorded.
func TestScoreReasks(t *testing.T) {
	f := &fake{answers: []string{"lorem ipsum", "Score: 5"}}
	ctx, rec := WithRecorder(context.Background())
	v, err := New(Config{Name: "j"}, f).Score(ctx, "Q", "R", "")
	if err != nil || v.Score != 5 {
		t.Fatalf("Score = %+v, %v; want 5 from the second answer", v, err)
	}
	calls := rec.Calls()
	if len(calls) != 2 || calls[0].Raw != "lorem ipsum" || !strings.Contains(calls[0].Error, "no score") || calls[1].Error != "" {
		t.Errorf("recorded %+v", calls)
	}
	f = &fake{answers: []string{"lorem ipsum"}}
	ctx, rec = WithRecorder(context.Background())
	if _, err := New(Config{Name: "j"}, f).Score(ctx, "Q", "R", ""); !errors.Is(err, ErrUnparseable) {
		t.Errorf("nonsense twice: %v, want ErrUnparseable", err)
	}
	if n := len(rec.Calls()); n != 2 {
		t.Errorf("%d calls for two nonsense answers", n)
	}
}

// A transport failure is not re-asked (the client retried already); a
// judge that does not answer within the timeout fails with a timeout.
func TestScoreFailures(t *testing.T) {
	f := &fake{errs: []error{&failure.Error{Category: failure.ServerError, Err: errors.New("HTTP 500")}}, answers: []string{"Score: 5"}}
	ctx, rec := WithRecorder(context.Background())
	if _, err := New(Config{Name: "j"}, f).Score(ctx, "Q", "R", ""); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("transport failure: %v", err)
	}
	if n := len(rec.Calls()); n != 1 {
		t.Errorf("%d calls after a transport failure, want 1", n)
	}
	slow := &fake{block: true}
	ctx, rec = WithRecorder(context.Background())
	start := time.Now()
	_, err := New(Config{Name: "j", Timeout: 50 * time.Millisecond}, slow).Score(ctx, "Q", "R", "")
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("slow judge: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the timeout did not bound the call")
	}
	if c := rec.Calls(); len(c) != 1 || c[0].Error == "" {
		t.Errorf("recorded %+v", c)
	}
}
