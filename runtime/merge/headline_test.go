package merge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
)

// The headline line counts the scored samples, says the infrastructure
// failures (not scored) and the model errors (scored as wrong) with their
// classes, and shows no score for an INVALID benchmark.
func TestHeadline(t *testing.T) {
	// 20 items × 2 repeats; item i repeat r is correct when (i+r)%4 != 0.
	// fail marks samples: i for infra (server_error), t for infra
	// (timeout), f for a model error (format_error).
	build := func(fail map[int]byte, maxRate float64) Summary {
		var rows []results.Row
		for i := range 20 {
			for r := range 2 {
				row := results.Row{ItemID: fmt.Sprintf("q%02d", i), ItemIdx: int64(i), Repeat: int64(r), Attempts: 1}
				if (i+r)%4 != 0 {
					row.Reward = 1
				}
				switch fail[2*i+r] {
				case 'i':
					row.Reward, row.ErrorCategory, row.Outcome = 0, "server_error", "infra_error"
				case 't':
					row.Reward, row.ErrorCategory, row.Outcome = 0, "timeout", "infra_error"
				case 'f':
					row.Reward, row.ErrorCategory, row.Outcome = 0, "format_error", "model_error"
				}
				rows = append(rows, row)
			}
		}
		meta := map[string]string{results.MetaSimulated: "true"}
		b := &plan.Benchmark{Key: "gsm8k", Name: "gsm8k", Repeats: 2, MaxErrorRate: maxRate}
		return Summary{Bundle: metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Benchmark: b, Resamples: 100})}
	}

	// No failure: (i+r)%4 == 0 for 10 of the 40 samples → 30/40 correct.
	got := build(nil, 0.05).Headline()
	want := "gsm8k  pass@1 0.7500 (30/40 correct), 95% CI "
	if !strings.HasPrefix(got, want) {
		t.Errorf("headline %q\nwant prefix  %q", got, want)
	}
	if suffix := " · 20 items × 2 repeats · SIMULATED endpoint"; !strings.HasSuffix(got, suffix) {
		t.Errorf("headline %q\nwant suffix  %q", got, suffix)
	}

	// Sample 1 (item 0 repeat 1, correct) and 3 (item 1 repeat 1,
	// correct) fail with server_error, 5 (item 2 repeat 1, correct) with
	// timeout: 3 of 40 = 7.5%, valid at max_error_rate 0.1. Sample 6
	// (item 3 repeat 0, correct) is a format_error. Scored: 37 samples,
	// correct 30 − 3 (infra) − 1 (model error) = 26.
	got = build(map[int]byte{1: 'i', 3: 'i', 5: 't', 6: 'f'}, 0.1).Headline()
	want = "gsm8k  pass@1 "
	if !strings.HasPrefix(got, want) {
		t.Errorf("headline %q", got)
	}
	for _, part := range []string{
		" (26/37 correct), 95% CI ",
		" · 20 items × 2 repeats · 3 infra failures (server_error 2, timeout 1), not scored · 1 model error (format_error 1), scored as wrong · SIMULATED endpoint",
	} {
		if !strings.Contains(got, part) {
			t.Errorf("headline %q\nlacks %q", got, part)
		}
	}

	// Both repeats of item 0 fail (samples 0, 1) and of item 1 (2, 3):
	// 4 of 40 = 10% against 5%: INVALID, and no score is shown.
	got = build(map[int]byte{0: 'i', 1: 'i', 2: 'i', 3: 't'}, 0.05).Headline()
	want = "INVALID gsm8k  pass@1 not reported: 4 of 40 samples (10%) failed for infrastructure reasons (server_error 3, timeout 1), more than max_error_rate 5% · 20 items × 2 repeats · SIMULATED endpoint"
	if got != want {
		t.Errorf("headline %q\nwant     %q", got, want)
	}
	// At max_error_rate 0.1 the same run is valid, and says that 18 of the
	// 20 items were scored.
	got = build(map[int]byte{0: 'i', 1: 'i', 2: 'i', 3: 't'}, 0.1).Headline()
	if !strings.Contains(got, " · 20 items × 2 repeats (18 items scored) · 4 infra failures (server_error 3, timeout 1), not scored") {
		t.Errorf("headline %q", got)
	}
}
