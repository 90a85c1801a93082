package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// openSandbox opens the benchmark's sandbox when its scorer runs code (the
// definition's NeedsSandbox); nil otherwise. A benchmark that needs one
// and has none fails here, before any request is sent. An engine that
// cannot run on this machine (no bwrap, no docker daemon) does not fail
// the shard: every sample is then recorded as a sandbox_error and the run
// goes on, so the report says how many were affected.
func (r *runner) openSandbox(ctx context.Context) (sandbox.Sandbox, error) {
	sb := r.b.Sandbox
	has := sb != nil && sb.Type != "" && sb.Type != "none"
	if !r.def.NeedsSandbox {
		if has {
			r.log.Debug("sandbox not opened: this benchmark runs no code", "sandbox", sb.Type)
		}
		return nil, nil
	}
	if !has {
		return nil, fmt.Errorf("%s runs the model's code and needs a sandbox: set %s.sandbox in the recipe (e.g. sandbox: {type: \"local\"})", r.def.Name, r.benchmarkPath())
	}
	cfg, err := sandboxConfig(sb)
	if err != nil {
		return nil, fmt.Errorf("%s.sandbox: %w", r.benchmarkPath(), err)
	}
	cfg.Logger = r.log
	if cfg.Type == "slurm" {
		if cfg.Endpoints, err = sandbox.EndpointsFromEnv(cfg.Name, r.o.Getenv); err != nil {
			return nil, err
		}
		cfg.Token = r.o.Getenv(sandbox.PoolTokenEnv(cfg.Name))
	}
	s, err := sandbox.Open(ctx, cfg)
	if errors.Is(err, sandbox.ErrUnavailable) {
		r.log.Warn("sandbox unavailable: every sample is recorded as sandbox_error", "err", err)
		return unavailable{name: sandboxName(cfg), err: err}, nil
	}
	if err != nil {
		return nil, err
	}
	return capped{Sandbox: s, max: cfg.Timeout}, nil
}

// benchmarkPath names the benchmark in the recipe: benchmarks[i].
func (r *runner) benchmarkPath() string {
	for i := range r.p.Benchmarks {
		if r.p.Benchmarks[i].Key == r.b.Key {
			return fmt.Sprintf("benchmarks[%d]", i)
		}
	}
	return "benchmarks[" + r.b.Key + "]"
}

// sandboxConfig resolves a plan's sandbox into the engine's Config: sizes
// ("4g", "16m") into bytes, seconds into a duration.
func sandboxConfig(sb *plan.Sandbox) (sandbox.Config, error) {
	cfg := sandbox.Config{
		Name: sb.Name, Type: sb.Type, Image: sb.Image,
		CPUs: sb.Cpus, MaxProcesses: sb.MaxProcesses,
		Concurrency: sb.Concurrency, Network: sb.Network, Env: sb.Env,
	}
	if sb.Pool {
		// The engine runs on the pool's servers; the shard is their
		// client, as for a slurm sandbox.
		cfg.Type = "slurm"
	}
	if cfg.Type == "slurm" && sb.Concurrency == 0 {
		cfg.Concurrency = sb.SlotsPerNode
	}
	var err error
	if cfg.MemoryBytes, err = parseSize(sb.Memory); err != nil {
		return cfg, fmt.Errorf("memory: %w", err)
	}
	if cfg.MaxFileSizeBytes, err = parseSize(sb.MaxFileSize); err != nil {
		return cfg, fmt.Errorf("max_file_size: %w", err)
	}
	if sb.Timeout < 0 || math.IsNaN(sb.Timeout) || sb.Timeout > 1e9 {
		return cfg, fmt.Errorf("timeout: want seconds ≥ 0, found %v", sb.Timeout)
	}
	cfg.Timeout = time.Duration(sb.Timeout * float64(time.Second))
	if e := sb.ECS; e != nil {
		cfg.ECS = &sandbox.ECSConfig{
			Region: e.Region, Cluster: e.Cluster, Subnets: e.Subnets, SecurityGroups: e.SecurityGroups,
			AssignPublicIP: e.AssignPublicIP, CPU: e.CPU, Memory: e.Memory, EphemeralStorageGiB: e.EphemeralStorageGiB,
			ExecutionRoleARN: e.ExecutionRoleARN, TaskRoleARN: e.TaskRoleARN, LogGroup: e.LogGroup,
			LogStreamPrefix: e.LogStreamPrefix, MaxTaskLifetime: time.Duration(e.MaxTaskLifetimeSec) * time.Second,
			ExecServerPort: e.ExecServerPort, NelRunImage: e.NelRunImage, SSMProject: e.SSMProject,
		}
	}
	return cfg, nil
}

// parseSize reads a size ("4g", "16m": powers of 1024, as docker reads
// them); "" is 0, the engine's default.
func parseSize(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	return sandbox.ParseBytes(s)
}

func sandboxName(cfg sandbox.Config) string {
	if cfg.Name != "" {
		return cfg.Name
	}
	return cfg.Type
}

// capped runs every job under the sandbox's timeout at most: a benchmark
// asks for its own per-program limit (HumanEval: 30 s), and the recipe's
// sandbox timeout is the ceiling over it. (A job without one gets the
// sandbox's default, which is that timeout.)
type capped struct {
	sandbox.Sandbox
	max time.Duration
}

func (c capped) Run(ctx context.Context, job sandbox.Job) (*sandbox.Result, error) {
	if c.max > 0 && job.Timeout > c.max {
		job.Timeout = c.max
	}
	return c.Sandbox.Run(ctx, job)
}

// unavailable is a sandbox whose engine cannot run here: every job fails
// with the error Open gave, which the scorer records as a sandbox_error.
type unavailable struct {
	name string
	err  error
}

func (u unavailable) Run(context.Context, sandbox.Job) (*sandbox.Result, error) { return nil, u.err }
func (u unavailable) Name() string                                              { return u.name }
func (u unavailable) Close() error                                              { return nil }
