package shard

import (
	"path/filepath"
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
