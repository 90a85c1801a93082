package local

import (
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
)

// The full-run time: requests in waves of max_concurrent × shards, each
// wave the median latency. 1319 × 2 = 2638 requests at 32 × 2 in flight
// are 42 waves (2638/64 = 41.2, rounded up); at 2s, 84s.
func TestEstimateText(t *testing.T) {
	e := estimate{items: 1319, repeats: 2, concurrent: 32, shards: 2}
	got := e.text(2 * time.Second)
	if want := "1319 items × 2 repeat(s) = 2638 requests, about 1m24s at 32 in flight per shard × 2 shard(s)"; !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start %q", got, want)
	}
	unknown := estimate{repeats: 1, concurrent: 10, shards: 1}.text(time.Second)
	if !strings.HasPrefix(unknown, "the item count is not known without the data; every 1000 items × 1 repeat(s) take about 1m40s") {
		t.Errorf("unknown size: %q", unknown)
	}
}

// Rows as the shard writes them: a problem only when every sample is
// unusable or any failed for infrastructure reasons; the 404 hint names
// the URL the protocol asked.
func TestDiagnose(t *testing.T) {
	yes, no := true, false
	ok := results.Row{ItemID: "a", ItemIdx: 0, Correct: &yes, Expected: "2", Extracted: "2", Outcome: "scored", LatencyMS: 10, FinishReason: "stop"}
	cut := results.Row{ItemID: "b", ItemIdx: 1, Correct: &no, Expected: "4", Extracted: "Let", Outcome: "model_error", ErrorCategory: "truncated",
		ErrorMessage: "the answer was cut off", LatencyMS: 30, FinishReason: "length"}
	d := diagnose([]results.Row{cut, ok}, []results.Trajectory{{ItemID: "b", Response: "Let me"}}, nil, plan.Service{})
	if d.correct != 1 || d.n != 2 || len(d.problems) != 0 || len(d.warnings) != 1 {
		t.Fatalf("%+v", d)
	}
	if !strings.Contains(d.warnings[0], "1 of 2 samples were cut off at the server's default max_tokens") || !strings.Contains(d.warnings[0], `item 1 answered "Let me"`) {
		t.Errorf("warning %q", d.warnings[0])
	}
	if !strings.HasPrefix(d.lines[0], `[PASS] item 0: expected "2", got "2" (10 ms`) {
		t.Errorf("lines sorted by item: %q", d.lines)
	}

	lost := results.Row{ItemID: "c", ItemIdx: 2, Outcome: "infra_error", ErrorCategory: "api_error", ErrorMessage: "api_error: status code: 404"}
	svc := plan.Service{URL: "http://h/v1/chat/completions", Protocol: "completions", Model: "m"}
	d = diagnose([]results.Row{ok, lost}, nil, nil, svc)
	if len(d.problems) != 1 || !strings.Contains(d.problems[0], `HTTP 404: the server has no POST http://h/v1/completions, or no model "m"`) {
		t.Errorf("problems %q", d.problems)
	}
	if strings.Contains(d.lines[1], "api_error: api_error") || strings.Contains(d.lines[1], " ms") {
		t.Errorf("an infrastructure failure's line: %q", d.lines[1])
	}
}

// TestRoundMS: a sub-millisecond latency prints as 0ms, like its
// neighbours, not as Duration's "0s".
func TestRoundMS(t *testing.T) {
	for d, want := range map[time.Duration]string{
		300 * time.Microsecond:  "0ms",
		1400 * time.Microsecond: "1ms",
		2500 * time.Millisecond: "2.5s",
	} {
		if got := roundMS(d); got != want {
			t.Errorf("roundMS(%v) = %q, want %q", d, got, want)
		}
	}
}
