package harbor

import (
	"context"
	"errors"

	"github.com/nel-eval/nel/runtime/sandbox"
)

// brokenSession is a session that cannot run anything (its sandbox died).
type brokenSession struct{}

func (brokenSession) Exec(context.Context, sandbox.Command) (*sandbox.Result, error) {
	return nil, errors.New("the sandbox is gone")
}
func (brokenSession) Close() error { return nil }
