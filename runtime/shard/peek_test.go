package shard

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/journal"
	"github.com/nel-eval/nel/runtime/results"
)

// Peek counts what a journal written the way the shard writes it holds:
// three samples done (one scored, one model error, one infrastructure
// failure whose row predates the outcome column) and one in flight.
func TestPeek(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, err := journal.Open(path, journal.Header{PlanHash: "sha256:p", Benchmark: "gsm8k", Of: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range []results.Row{
		{ItemID: "a", Outcome: "scored"},
		{ItemID: "b", Outcome: "model_error", ErrorCategory: "format_error"},
		{ItemID: "c", ErrorCategory: "server_error"},
	} {
		k := journal.Key{Item: row.ItemID}
		if err := j.Start(k); err != nil {
			t.Fatal(err)
		}
		if err := j.DoneValue(k, &sampleRecord{Row: row}); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := j.Start(journal.Key{Item: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := Peek(path)
	if err != nil {
		t.Fatal(err)
	}
	if *p != (Peeked{PlanHash: "sha256:p", Done: 3, Failed: 2, InfraFailed: 1, InFlight: 1}) {
		t.Errorf("Peek = %+v, want 3 done, 2 failed (1 of them, c, an infrastructure failure), 1 in flight", *p)
	}
}

// A sample run again after an infrastructure failure counts by its last
// record, and a record longer than Scan's buffer (an agent's turns: 2 MiB
// here) is read whole, not taken for a torn line.
func TestPeekLastRecordAndLongRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, err := journal.Open(path, journal.Header{PlanHash: "sha256:p", Benchmark: "b", Of: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, b := journal.Key{Item: "a"}, journal.Key{Item: "b"}
	long := []results.Turn{{Content: strings.Repeat("x", 2<<20)}}
	for _, step := range []struct {
		k   journal.Key
		rec sampleRecord
	}{
		{a, sampleRecord{Row: results.Row{ItemID: "a", Outcome: "infra_error"}}},
		{b, sampleRecord{Row: results.Row{ItemID: "b", Outcome: "model_error"}, Turns: long}},
		{a, sampleRecord{Row: results.Row{ItemID: "a", Outcome: "scored"}, Turns: long}},
	} {
		if err := j.Start(step.k); err != nil {
			t.Fatal(err)
		}
		if err := j.DoneValue(step.k, &step.rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := Peek(path)
	if err != nil {
		t.Fatal(err)
	}
	if *p != (Peeked{PlanHash: "sha256:p", Done: 2, Failed: 1}) {
		t.Errorf("Peek = %+v, want 2 done, 1 failed (b), none an infrastructure failure, none in flight", *p)
	}
}
