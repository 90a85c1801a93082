package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Config is one sandbox of a plan (plan.Sandbox, with units resolved).
type Config struct {
	// Name is the recipe's name for it ("" for an inline sandbox).
	Name string
	// Type is local, docker, apptainer, slurm, ecs_fargate or container
	// (nel-run sandbox-serve inside an ecs_fargate task).
	Type string
	// Image is the container image (docker, apptainer, slurm).
	Image string
	// MemoryBytes, CPUs, MaxProcesses and MaxFileSizeBytes are the limits;
	// 0 means the engine's default.
	MemoryBytes      int64
	CPUs             float64
	MaxProcesses     int
	MaxFileSizeBytes int64
	// Timeout is a job's default wall-clock limit.
	Timeout time.Duration
	// Concurrency is how many jobs run at once (slurm: slots per node ×
	// nodes, decided by the pool).
	Concurrency int
	// Network is docker's network mode; nel allows "none" only for
	// untrusted code unless the recipe says otherwise.
	Network string
	// Env is added to every job's environment (container_env).
	Env map[string]string
	// Endpoints are the sandbox servers of a slurm sandbox pool
	// ("host:port"), from the job's environment.
	Endpoints []string
	// Token is the bearer token the pool's servers take (PoolTokenEnv); ""
	// for servers that take none (a job compiled before pools had one).
	Token string
	// OutputBytes caps what is captured of each of stdout and stderr; a
	// job writing more is killed (Limit "output"). 0 means 1 MiB.
	OutputBytes int64
	// Python is the interpreter the local engine exposes as python3 (its
	// directory first on PATH, its prefix bound read-only); "" finds
	// python3 on the host's PATH, resolving pyenv shims and venvs.
	Python string
	// Root is where a container engine's session keeps /app, /logs, /tmp
	// and /tests; "" is the container's own root (a test's fake task
	// sets a directory of its own).
	Root string
	// BuildCache is the folder where the apptainer engine builds the
	// images of sessions whose SessionSpec.Build names a Dockerfile, and
	// pulls the images they are built on; "" builds none.
	BuildCache string
	// ECS is an ecs_fargate sandbox's AWS side.
	ECS *ECSConfig
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
}

// Open starts the sandbox a Config describes. An engine that is not
// installed or cannot run here gives an error wrapping ErrUnavailable.
func Open(ctx context.Context, cfg Config) (Sandbox, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	name := cfg.Name
	if name == "" {
		name = cfg.Type
	}
	switch cfg.Type {
	case "slurm":
		return openRemote(ctx, cfg)
	case "local":
		return openLocal(ctx, name, cfg)
	case "docker":
		return openDocker(ctx, name, cfg)
	case "apptainer", "singularity":
		return openApptainer(ctx, name, cfg)
	case "ecs_fargate":
		return openECS(ctx, name, cfg)
	case "container":
		return openContainer(name, cfg), nil
	}
	return nil, fmt.Errorf("sandbox %s: type %q: %w", name, cfg.Type, ErrUnavailable)
}
