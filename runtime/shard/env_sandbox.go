package shard

import (
	"context"
	"errors"

	"github.com/nel-eval/nel/runtime/sandbox"
)

// openSandbox opens the benchmark's sandbox; nil when it has none.
func (r *runner) openSandbox(ctx context.Context) (sandbox.Sandbox, error) {
	if r.b.Sandbox == nil || r.b.Sandbox.Type == "" || r.b.Sandbox.Type == "none" {
		return nil, nil
	}
	return nil, errors.New("sandboxes are not supported yet") // issue 6: filled in by the sandbox work
}
