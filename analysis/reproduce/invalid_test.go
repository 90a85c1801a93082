package reproduce

import (
	"bytes"
	"github.com/nel-eval/nel/internal/exitcode"
	"strings"
	"testing"
)

// A benchmark whose published or new run has more infrastructure
// failures than max_error_rate (the default 5% here) cannot be
// reproduced: INVALID, exit 3, saying which run and why; under the limit
// the failures are left out of the comparison, not counted as wrong.
func TestInvalidCannotReproduce(t *testing.T) {
	rw := binary(300, func(i int) bool { return i%10 < 7 })
	good := func() string { return writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw}) }
	// Items 0, 10, …: i%20 == 0 fails 15 of 300 (5%, valid); i%10 == 0
	// fails 30 (10%, INVALID). Each was answered correctly (i%10 < 7).
	at := func(every int) func(int, int) bool { return func(i, _ int) bool { return i%every == 0 } }

	r := mustCompare(t, good(), writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, infra: at(10)}))
	b := r.Benchmarks[0]
	if b.Verdict != Invalid || r.Verdict != Invalid || exitcode.For("reproduce", r.Verdict, false) != 3 {
		t.Fatalf("verdict %s (benchmark %s), exit %d: want INVALID, 3", r.Verdict, b.Verdict, exitcode.For("reproduce", r.Verdict, false))
	}
	if want := "could not reproduce: the new run's gsm8k is INVALID: 30 of 300 samples (10%) failed for infrastructure reasons (timeout 30), more than max_error_rate 5%"; !strings.Contains(reasons(b), want) {
		t.Errorf("reasons %q\nwant %q", b.Reasons, want)
	}
	if b.Paired != 0 || b.Statistics != "" || len(r.HolmFamily) != 0 {
		t.Errorf("paired %d, statistics %q, Holm family %v: numbers compared on an INVALID run", b.Paired, b.Statistics, r.HolmFamily)
	}
	if !b.New.Invalid || b.New.InfraErrors != 30 || b.New.ScoredSamples != 270 {
		t.Errorf("new side %+v", b.New)
	}
	var out bytes.Buffer
	if err := r.Text(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "INVALID      gsm8k        pass@1 0.7000 → INVALID\n") {
		t.Errorf("text: no score shown for the INVALID run expected\n%s", out.String())
	}
	if last := lastLine(out.String()); !strings.HasPrefix(last, "INVALID sha256:") || !strings.Contains(last, "could not reproduce: 1 of 1 benchmark INVALID (too many infrastructure failures): gsm8k") {
		t.Errorf("last line %q", last)
	}

	// The published run's side, beside a benchmark that reproduces:
	// INVALID overall all the same.
	pub := writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, infra: at(10)}, bench{name: "mmlu", rewards: rw})
	r = mustCompare(t, pub, writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw}, bench{name: "mmlu", rewards: rw}))
	if r.Verdict != Invalid || r.Benchmarks[1].Verdict != Reproduced || !strings.Contains(reasons(r.Benchmarks[0]), "the published run's gsm8k is INVALID") {
		t.Errorf("verdict %s, mmlu %s, gsm8k reasons %q", r.Verdict, r.Benchmarks[1].Verdict, r.Benchmarks[0].Reasons)
	}

	// At 5%, valid: the 15 failed items are left out (285 pair), and the
	// runs agree on every one of them: REPRODUCED. Scored as wrong they
	// would be 15 items worse.
	r = mustCompare(t, good(), writeRun(t, t.TempDir(), bench{name: "gsm8k", rewards: rw, infra: at(20)}))
	b = r.Benchmarks[0]
	if r.Verdict != Reproduced || b.Paired != 285 || b.Delta != 0 {
		t.Errorf("verdict %s, paired %d, delta %v: want REPRODUCED over 285 items, delta 0", r.Verdict, b.Paired, b.Delta)
	}
	if !strings.Contains(reasons(b), "infrastructure failures, not scored: 0 of 300 samples published, 15 of 300 new") {
		t.Errorf("reasons %q", b.Reasons)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
