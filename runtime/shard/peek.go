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
	// A sample's last record is what counts: keep its outcome alone, not
	// the record (an agent's holds every turn).
	outcomes := map[journal.Key]failure.Outcome{}
	h, inFlight, err := journal.Scan(path, func(k journal.Key, data json.RawMessage) {
		var rec struct {
			Row struct{ Outcome, ErrorCategory string } `json:"row"`
		}
		if json.Unmarshal(data, &rec) != nil {
			outcomes[k] = "" // finished, its outcome unread: counted as done only
			return
		}
		o := failure.Outcome(rec.Row.Outcome)
		if o == "" {
			o = failure.Category(rec.Row.ErrorCategory).Outcome()
		}
		outcomes[k] = o
	})
	if err != nil {
		return nil, err
	}
	p := &Peeked{PlanHash: h.PlanHash, InFlight: inFlight}
	for _, o := range outcomes {
		p.Done++
		if o != failure.Scored && o != "" {
			p.Failed++
		}
		if o == failure.InfraError {
			p.InfraFailed++
		}
	}
	return p, nil
}
