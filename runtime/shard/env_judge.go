package shard

import (
	"context"

	"github.com/nel-eval/nel/runtime/bench"
)

// openJudges builds the benchmark's judge metrics by name, and the first
// one (which scores a NeedsJudge benchmark); nil when there are none.
func (r *runner) openJudges(ctx context.Context) (map[string]bench.Judge, bench.Judge, error) {
	return nil, nil, nil // issue 6: filled in by the judge work
}
