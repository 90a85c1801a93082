package main

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/nel-eval/nel/runtime/sandbox"
	"github.com/spf13/cobra"
)

const sandboxServeHelp = `Serve a code sandbox to the shards of a SLURM job: run each job (a program
with its files, POST /run) in a local sandbox engine, up to --slots at once,
and answer with its exit status, output and files. GET /health answers 200
with the slot count while the server takes jobs.

An agent's sample keeps a session on one server (POST /session, then
POST /session/ID/exec per command, DELETE /session/ID): a working directory
whose /app, /logs and /tmp persist from one command to the next, run by the
engine like a job, and reachable only with the session's own token. A
session holds a slot until it is closed; the server removes the sessions
still open when it exits.

The job scripts nel compiles start one per node of a slurm sandbox's node
pool (in the sandbox's container image, with nel-run mounted in) and pass
the servers to the shards in NEL_SANDBOX_<NAME>_ENDPOINTS. For an apptainer
sandbox with a node pool they run on the nodes themselves as --engine
apptainer, each job or session an apptainer container (a Harbor task's own
image, else --image).

In each task of an ecs_fargate sandbox it runs in the job's image as
--engine container (the task is the isolation), answering only requests
that bear the task's token (--token-env) and exiting at --max-lifetime.
There it holds one agent's session on the same protocol (--slots 1): every
command of the sample runs in the task's own /app, /logs and /tmp, and
before the verifier's command brings /tests, every other process in the
container is killed.

A job whose client goes away is killed. On SIGTERM the server stops taking
jobs, gives those running --grace to finish, kills the rest and exits.

Example:
  nel-run sandbox-serve --name py --listen :18800 --slots 4 --memory 4g --timeout 30s`

type sandboxServeOptions struct {
	listen, name, engine, memory, fileSize string
	image                                  string
	install, tokenEnv                      string
	slots, procs                           int
	cpus                                   float64
	timeout, grace, lifetime, sessionIdle  time.Duration
	maxReq                                 int64
}

func newSandboxServeCmd(e *env) *cobra.Command {
	o := &sandboxServeOptions{}
	c := &cobra.Command{Use: "sandbox-serve [flags]", Short: "run code-sandbox jobs for the shards of a SLURM job (a slurm sandbox's pool)", Long: sandboxServeHelp}
	f := c.Flags()
	f.StringVar(&o.listen, "listen", "", "`ADDRESS` to listen on, e.g. :18800 (required)")
	f.StringVar(&o.name, "name", "sandbox", "the sandbox's `NAME` in the recipe, for logs")
	f.IntVar(&o.slots, "slots", 4, "jobs run at once (the recipe's slots_per_node); more wait")
	f.StringVar(&o.engine, "engine", "local", "sandbox `ENGINE` that runs the jobs on this node")
	f.StringVar(&o.image, "image", "", "container `IMAGE` of the jobs and of sessions that bring none (--engine apptainer or docker)")
	f.StringVar(&o.memory, "memory", "", "memory limit of a job, e.g. 4g (default: the engine's)")
	f.Float64Var(&o.cpus, "cpus", 0, "CPU cores of a job (default: the engine's)")
	f.IntVar(&o.procs, "max-processes", 0, "processes a job may create (default: the engine's)")
	f.StringVar(&o.fileSize, "max-file-size", "", "largest file a job may write, e.g. 64m (default: the engine's)")
	f.DurationVar(&o.timeout, "timeout", 0, "wall-clock limit of a job that sets none (default: the engine's)")
	f.DurationVar(&o.grace, "grace", 30*time.Second, "on SIGTERM, how long running jobs may take to finish")
	f.DurationVar(&o.sessionIdle, "session-idle", time.Hour, "remove a session that has had no request for this long (its client is gone); 0 keeps it to the end")
	f.Int64Var(&o.maxReq, "max-request", sandbox.DefaultMaxRequestBytes, "largest job request in `BYTES`")
	f.StringVar(&o.tokenEnv, "token-env", "", "environment `VARIABLE` holding the token every request must bear (an ecs_fargate task's)")
	f.DurationVar(&o.lifetime, "max-lifetime", 0, "exit after this long, jobs or not (an ecs_fargate task's max_task_lifetime_sec)")
	f.StringVar(&o.install, "install", "", "copy this nel-run to `PATH` and exit (the first container of an ecs_fargate task)")
	return command(e, c, false, func(ctx context.Context, _ []string) int {
		if o.install != "" {
			if err := sandbox.InstallSelf(o.install); err != nil {
				e.errorf("sandbox-serve: %v", err)
				return exitFailure
			}
			return exitOK
		}
		cfg, msg := o.config(e)
		if msg != "" {
			return usageError(e, c, msg)
		}
		return o.run(ctx, e, cfg)
	})
}

// config is the sandbox the flags describe, or what is wrong with them.
func (o *sandboxServeOptions) config(e *env) (sandbox.Config, string) {
	switch {
	case o.listen == "":
		return sandbox.Config{}, "--listen is required"
	case o.slots < 1:
		return sandbox.Config{}, "--slots must be at least 1"
	case o.cpus < 0 || o.procs < 0 || o.timeout < 0 || o.grace < 0 || o.lifetime < 0 || o.sessionIdle < 0 || o.maxReq < 1:
		return sandbox.Config{}, "limits must not be negative"
	}
	cfg := sandbox.Config{
		Name: o.name, Type: o.engine, Image: o.image, Concurrency: o.slots, CPUs: o.cpus, MaxProcesses: o.procs, Timeout: o.timeout,
		Logger: e.log.With("sandbox", o.name),
	}
	var err error
	if o.memory != "" {
		if cfg.MemoryBytes, err = sandbox.ParseBytes(o.memory); err != nil {
			return cfg, "--memory: " + err.Error()
		}
	}
	if o.fileSize != "" {
		if cfg.MaxFileSizeBytes, err = sandbox.ParseBytes(o.fileSize); err != nil {
			return cfg, "--max-file-size: " + err.Error()
		}
	}
	return cfg, ""
}

// run serves jobs until ctx ends.
func (o *sandboxServeOptions) run(ctx context.Context, e *env, cfg sandbox.Config) int {
	// Each line names the node: the SLURM node name in a job (hosts
	// may share one machine), else the host name.
	log := e.log.With("sandbox", o.name)
	if node := os.Getenv("SLURMD_NODENAME"); node != "" {
		log = log.With("node", node)
	} else if host, err := os.Hostname(); err == nil {
		log = log.With("node", host)
	}
	sb, err := sandbox.Open(ctx, cfg)
	if err != nil {
		e.errorf("sandbox-serve: %v", err)
		return exitFailure
	}
	defer sb.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		e.errorf("sandbox-serve: %v", err)
		return exitFailure
	}
	token, msg := o.token()
	if msg != "" {
		e.errorf("sandbox-serve: %s", msg)
		return exitFailure
	}
	if o.lifetime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.lifetime)
		defer cancel()
	}
	log.Info("listening", "addr", ln.Addr().String(), "engine", o.engine, "slots", o.slots, "token", token != "")
	srv := sandbox.NewServer(sb, sandbox.ServerOptions{Slots: o.slots, MaxRequestBytes: o.maxReq, Logger: log, Token: token, SessionIdle: o.sessionIdle})
	if err := sandbox.Serve(ctx, ln, srv, o.grace); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		e.errorf("sandbox-serve: %v", err)
		return exitFailure
	}
	log.Info("stopped")
	return exitOK
}

// token reads the server's token from --token-env and takes it out of the
// environment, so that no job sees it.
func (o *sandboxServeOptions) token() (string, string) {
	if o.tokenEnv == "" {
		return "", ""
	}
	t := os.Getenv(o.tokenEnv)
	if t == "" {
		return "", "--token-env " + o.tokenEnv + ": the variable is empty or unset"
	}
	os.Unsetenv(o.tokenEnv)
	return t, ""
}
