package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/results"
)

// failInfra turns the samples of items [from, to) into infrastructure
// failures (reward 0, as the shard writes them).
func failInfra(rs []results.Row, from, to int) []results.Row {
	out := append([]results.Row(nil), rs...)
	for i := range out {
		if idx := int(out[i].ItemIdx); idx >= from && idx < to {
			out[i].Reward, out[i].ErrorCategory, out[i].Outcome = 0, "server_error", "infra_error"
		}
	}
	return out
}

// Infrastructure failures are not wrong answers: an item the candidate
// lost to the endpoint is not a regression. 100 items, all correct on
// both sides; the candidate's items 0..3 failed (4%, under the default
// max_error_rate 5%). Scored as 0 they would be 4 regressions; left out,
// the 96 items that both runs scored pair with no regression.
func TestInfraFailuresAreNotRegressions(t *testing.T) {
	all := rows(binary(100, func(int) bool { return true }), nil)
	r := mustCompare(t, all, failInfra(all, 0, 4), DefaultOptions())
	if r.Verdict == Invalid {
		t.Fatalf("verdict INVALID at 4%%: %v", r.VerdictReasons)
	}
	if r.Pairing.Paired != 96 || r.Pairing.OnlyInBaseline != 4 {
		t.Errorf("pairing %+v: want 96 paired, 4 only in the baseline (the candidate scored none of them)", r.Pairing)
	}
	if r.Flips.Regressions != 0 || r.Metrics[0].Delta != 0 {
		t.Errorf("%d regressions, delta %v: an infrastructure failure counted as a wrong answer", r.Flips.Regressions, r.Metrics[0].Delta)
	}
	if r.Candidate.Samples != 100 || r.Candidate.ScoredSamples != 96 || r.Candidate.Validity.InfraErrors != 4 || r.Candidate.Validity.Invalid {
		t.Errorf("candidate %+v", r.Candidate)
	}
}

// A run above max_error_rate is INVALID: no PASS / WARN / BLOCK on it,
// whichever side it is, and the verdict says why.
func TestInvalidRun(t *testing.T) {
	all := rows(binary(100, func(i int) bool { return i%2 == 0 }), nil)
	// 6 of 100 samples: 6% > 5%.
	bad := failInfra(all, 0, 6)
	for _, c := range []struct {
		name       string
		base, cand []results.Row
		want       string
	}{
		{"candidate", all, bad, "the candidate's cand is INVALID: 6 of 100 samples (6%) failed for infrastructure reasons (server_error 6), more than max_error_rate 5%"},
		{"baseline", bad, all, "the baseline's base is INVALID: 6 of 100 samples (6%)"},
	} {
		r := mustCompare(t, c.base, c.cand, DefaultOptions())
		if r.Verdict != Invalid || len(r.VerdictReasons) != 2 || !strings.HasPrefix(r.VerdictReasons[0], c.want) {
			t.Errorf("%s invalid: verdict %s, reasons %q", c.name, r.Verdict, r.VerdictReasons)
		}
		if r.Metrics != nil || r.Test != nil || r.Flips != nil {
			t.Errorf("%s invalid: numbers given on an INVALID run: %+v", c.name, r.Metrics)
		}
		var out bytes.Buffer
		if err := Render(&out, FormatText, []*Report{r}, false, r.Verdict, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "INVALID  gsm8k\n") || strings.Contains(out.String(), "METRICS") || strings.Contains(out.String(), "paired") {
			t.Errorf("%s invalid: text\n%s", c.name, out.String())
		}
		if !strings.Contains(out.String(), "infra failures, not scored: 6 of 100 samples (6%), INVALID above max_error_rate 5%") {
			t.Errorf("%s invalid: the text does not say the infrastructure failures\n%s", c.name, out.String())
		}
	}
	// At exactly 5% the run is valid, and compared.
	if r := mustCompare(t, all, failInfra(all, 0, 5), DefaultOptions()); r.Verdict == Invalid {
		t.Errorf("5 of 100 (5%%): verdict INVALID")
	}
	// INVALID is worse than any verdict in a multi-benchmark comparison.
	for _, v := range []string{Pass, Inconclusive, Warn, Block} {
		if Severity(Invalid) <= Severity(v) {
			t.Errorf("Severity(INVALID) %d ≤ Severity(%s) %d", Severity(Invalid), v, Severity(v))
		}
	}
}
