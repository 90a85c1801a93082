package gate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/runtime/results"
)

// infraFail makes the first k samples of rs infrastructure failures.
func infraFail(rs []results.Row, k int) []results.Row {
	out := append([]results.Row(nil), rs...)
	for i := range k {
		out[i].Reward, out[i].ErrorCategory, out[i].Outcome = 0, "timeout", "infra_error"
	}
	return out
}

// The gate never says GO or NO-GO on a benchmark either run of which is
// INVALID (infrastructure failures above max_error_rate: here the default
// 5%): its status is INVALID, and a gated one makes the verdict INVALID.
func TestInvalidBenchmark(t *testing.T) {
	const n = 200
	good := rowsOf(accuracy(n, 0.80), nil)
	// 11 of 200 samples = 5.5% > 5%; 10 of 200 = 5% is valid.
	bad := infraFail(good, 11)
	worse := rowsOf(accuracy(n, 0.50), nil) // a 30-point drop: BREACH

	// A critical benchmark with an INVALID candidate: no numbers, status
	// INVALID, verdict INVALID.
	rep := evaluateT(t, policy(map[string]Rule{"a": {Tier: ptr(Critical), MaxDrop: ptr(0.01)}}), []compare.Pair{pair("a", good, bad)}, DefaultOptions())
	x := result(t, rep, "a")
	if x.Status != StatusInvalid || x.Delta != nil || x.PValue != nil || x.NPaired != 0 {
		t.Errorf("status %s, delta %v, p %v, n %d: want INVALID with no numbers", x.Status, x.Delta, x.PValue, x.NPaired)
	}
	if !hasReason(x, "the candidate's a is INVALID: 11 of 200 samples (5.5%) failed for infrastructure reasons (timeout 11), more than max_error_rate 5%") {
		t.Errorf("reasons %q", x.Reasons)
	}
	if rep.Verdict != Invalid || !strings.HasPrefix(rep.VerdictReasons[0], "INVALID: a [critical]") {
		t.Errorf("verdict %s %q, want INVALID", rep.Verdict, rep.VerdictReasons)
	}

	// The baseline's side, on a supporting benchmark, beside a critical
	// BREACH: still INVALID (no NO-GO read around an unmeasured
	// benchmark), with the breach listed.
	rep = evaluateT(t, policy(map[string]Rule{"a": {Tier: ptr(Critical), MaxDrop: ptr(0.01)}, "s": {Tier: ptr(Supporting)}}),
		[]compare.Pair{pair("a", good, worse), pair("s", bad, good)}, DefaultOptions())
	if rep.Verdict != Invalid || result(t, rep, "a").Status != StatusBreach || result(t, rep, "s").Status != StatusInvalid {
		t.Errorf("verdict %s, a %s, s %s: want INVALID, BREACH, INVALID", rep.Verdict, result(t, rep, "a").Status, result(t, rep, "s").Status)
	}
	if got := strings.Join(rep.VerdictReasons, "\n"); !strings.Contains(got, "INVALID: s [supporting]") || !strings.Contains(got, "BREACH: a [critical]") {
		t.Errorf("verdict reasons %q", rep.VerdictReasons)
	}
	if !hasReason(result(t, rep, "s"), "the baseline's s is INVALID") {
		t.Errorf("reasons %q", result(t, rep, "s").Reasons)
	}

	// An advisory benchmark never gates: INVALID, with a warning, and the
	// verdict is decided by the others (a passes: GO). 200 identical
	// items: Bonett & Price's half-width is 1.959964·√2/202 =
	// 1.959964·0.0070011 = 0.0137, within max_drop 0.02 (not within 0.01).
	rep = evaluateT(t, policy(map[string]Rule{"a": {Tier: ptr(Critical), MaxDrop: ptr(0.02)}, "adv": {Tier: ptr(Advisory)}}),
		[]compare.Pair{pair("a", good, good), pair("adv", good, bad)}, DefaultOptions())
	if rep.Verdict != Go || result(t, rep, "adv").Status != StatusInvalid {
		t.Errorf("verdict %s, adv %s: want GO, INVALID", rep.Verdict, result(t, rep, "adv").Status)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "advisory benchmark adv is INVALID (it does not gate)") {
		t.Errorf("warnings %q", rep.Warnings)
	}

	// 10 of 200 = 5%, exactly max_error_rate: valid, gated on the 190
	// items both runs scored (the candidate's 10 failures are not
	// counted as wrong: no drop, PASS at max_drop 0.02: half-width
	// 1.959964·√2/192 = 1.959964·0.0073657 = 0.0144).
	rep = evaluateT(t, policy(map[string]Rule{"a": {Tier: ptr(Critical), MaxDrop: ptr(0.02)}}), []compare.Pair{pair("a", good, infraFail(good, 10))}, DefaultOptions())
	if x := result(t, rep, "a"); rep.Verdict != Go || x.Status != StatusPass || x.NPaired != 190 || *x.Delta != 0 {
		t.Errorf("verdict %s, status %s, n %d, delta %v: want GO, PASS over 190 items, delta 0", rep.Verdict, x.Status, x.NPaired, x.Delta)
	}

	var out bytes.Buffer
	rep = evaluateT(t, policy(map[string]Rule{"a": {Tier: ptr(Critical)}}), []compare.Pair{pair("a", good, bad)}, DefaultOptions())
	if err := Render(&out, compare.FormatText, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "INVALID\n") || !strings.Contains(out.String(), "\na     critical    INVALID ") {
		t.Errorf("text:\n%s", out.String())
	}
}
