package shard

import (
	"encoding/json"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/journal"
)

// Peeked is what a running (or interrupted) shard's journal says.
type Peeked struct {
	PlanHash string
	// Done counts finished samples; Failed those of them that did not end
	// scored (a model error or an infrastructure failure), InfraFailed
	// those of Failed that were infrastructure failures (never scored);
	// InFlight those started and not finished.
	Done, Failed, InfraFailed, InFlight int
}

// Peek reads the shard journal at path without changing it, for nel
// status: the journal's records are this package's (sampleRecord), so it
// is the one that reads them.
func Peek(path string) (*Peeked, error) {
	s, err := journal.Peek(path)
	if err != nil {
		return nil, err
	}
	p := &Peeked{PlanHash: s.Header.PlanHash, Done: len(s.Done), InFlight: s.InFlight}
	for _, data := range s.Done {
		var rec sampleRecord
		if json.Unmarshal(data, &rec) != nil {
			continue
		}
		o := failure.Outcome(rec.Row.Outcome)
		if o == "" {
			o = failure.Category(rec.Row.ErrorCategory).Outcome()
		}
		if o != failure.Scored {
			p.Failed++
		}
		if o == failure.InfraError {
			p.InfraFailed++
		}
	}
	return p, nil
}
