package shard

import (
	"context"
	"fmt"

	"github.com/nel-eval/nel/runtime/bench"
)

// openEnv builds what the benchmark's ScoreEnv scorer uses: its sandbox
// (env_sandbox.go) and its judge metrics (env_judge.go). The returned
// close releases them.
func (r *runner) openEnv(ctx context.Context) (*bench.Env, func() error, error) {
	env := &bench.Env{}
	sb, err := r.openSandbox(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("benchmark %s: sandbox: %w", r.b.Key, err)
	}
	env.Sandbox = sb
	closeAll := func() error {
		for _, c := range r.judgeClients {
			c.Close()
		}
		r.judgeClients = nil
		if sb != nil {
			return sb.Close()
		}
		return nil
	}
	judges, first, err := r.openJudges(ctx)
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("benchmark %s: %w", r.b.Key, err)
	}
	env.Judges, env.Judge = judges, first
	return env, closeAll, nil
}
