package local

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shard"
)

// Interrupted is Run's error when its context ended (a signal, nel stop)
// before every shard finished: what the whole run keeps, across shards and
// benchmarks. Each shard's own part (shard.Interrupted) goes to the run's
// log; a user reading one shard's "144 of 300" would take it for the run.
type Interrupted struct {
	Cause error // the context's cause: an *interrupt.Signal for a signal
	// Safe samples of Total are kept (journaled or in finished shards);
	// Unknown shards stopped before they knew how many samples they have,
	// so Total leaves theirs out.
	Safe, Total, Unknown int
	Benchmarks           []BenchmarkSafe // in the plan's order
}

// BenchmarkSafe is one benchmark's part of an Interrupted run.
type BenchmarkSafe struct {
	Benchmark            string
	Safe, Total, Unknown int
}

func (e *Interrupted) Error() string {
	parts := make([]string, len(e.Benchmarks))
	for i, b := range e.Benchmarks {
		parts[i] = fmt.Sprintf("%s %d%s", b.Benchmark, b.Safe, ofTotal(b.Total, b.Unknown))
	}
	return fmt.Sprintf("run: interrupted (%v): %d%s samples are safe (%s); run the same command again to finish",
		e.Cause, e.Safe, ofTotal(e.Total, e.Unknown), strings.Join(parts, ", "))
}

func (e *Interrupted) Unwrap() error { return e.Cause }

// ofTotal is " of N" for a known total, " of at least N" when shards that
// did not know theirs are left out of it, and nothing when none knew.
func ofTotal(total, unknown int) string {
	switch {
	case unknown > 0 && total == 0:
		return ""
	case unknown > 0:
		return fmt.Sprintf(" of at least %d", total)
	}
	return fmt.Sprintf(" of %d", total)
}

// tally adds up the shards' samples as they end, for Interrupted.
type tally struct {
	mu     sync.Mutex
	byName map[string]*BenchmarkSafe
	order  []string
}

func newTally(p *plan.Plan) *tally {
	t := &tally{byName: map[string]*BenchmarkSafe{}}
	for _, b := range p.Benchmarks {
		if b.Harness == nil { // a harness's benchmark has no journal
			t.order = append(t.order, b.Key)
			t.byName[b.Key] = &BenchmarkSafe{Benchmark: b.Key}
		}
	}
	return t
}

// add counts one shard of benchmark key: its result, or the error it
// ended with.
func (t *tally) add(key string, res *shard.Result, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.byName[key]
	var in *shard.Interrupted
	switch {
	case err == nil:
		b.Safe += res.Rows
		b.Total += res.Rows
	case errors.As(err, &in) && in.Total > 0:
		b.Safe += in.Safe
		b.Total += in.Total
	default:
		b.Unknown++
	}
}

// interrupted is the run's Interrupted error, with cause.
func (t *tally) interrupted(cause error) *Interrupted {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := &Interrupted{Cause: cause}
	for _, k := range t.order {
		b := *t.byName[k]
		e.Safe += b.Safe
		e.Total += b.Total
		e.Unknown += b.Unknown
		e.Benchmarks = append(e.Benchmarks, b)
	}
	return e
}
