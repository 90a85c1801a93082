package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"time"

	"github.com/nel-eval/nel/runtime/sandbox"
)

var sandboxServeCommand = &command{
	name: "sandbox-serve",
	summary: `Serve a code sandbox to the shards of a SLURM job: run each job (a program
with its files, POST /run) in a local sandbox engine, up to --slots at once,
and answer with its exit status, output and files. GET /health answers 200
with the slot count while the server takes jobs.

The job scripts nel compiles start one per node of a slurm sandbox's node
pool (in the sandbox's container image, with nel-run mounted in) and pass
the servers to the shards in NEL_SANDBOX_<NAME>_ENDPOINTS.

A job whose client goes away is killed. On SIGTERM the server stops taking
jobs, gives those running --grace to finish, kills the rest and exits.

Example:
  nel-run sandbox-serve --name py --listen :18800 --slots 4 --memory 4g --timeout 30s`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		var (
			listen, name, engine, memory, fileSize string
			slots, procs                           int
			cpus                                   float64
			timeout, grace                         time.Duration
			maxReq                                 int64
		)
		fs.StringVar(&listen, "listen", "", "`ADDRESS` to listen on, e.g. :18800 (required)")
		fs.StringVar(&name, "name", "sandbox", "the sandbox's `NAME` in the recipe, for logs")
		fs.IntVar(&slots, "slots", 4, "jobs run at once (the recipe's slots_per_node); more wait")
		fs.StringVar(&engine, "engine", "local", "sandbox `ENGINE` that runs the jobs on this node")
		fs.StringVar(&memory, "memory", "", "memory limit of a job, e.g. 4g (default: the engine's)")
		fs.Float64Var(&cpus, "cpus", 0, "CPU cores of a job (default: the engine's)")
		fs.IntVar(&procs, "max-processes", 0, "processes a job may create (default: the engine's)")
		fs.StringVar(&fileSize, "max-file-size", "", "largest file a job may write, e.g. 64m (default: the engine's)")
		fs.DurationVar(&timeout, "timeout", 0, "wall-clock limit of a job that sets none (default: the engine's)")
		fs.DurationVar(&grace, "grace", 30*time.Second, "on SIGTERM, how long running jobs may take to finish")
		fs.Int64Var(&maxReq, "max-request", sandbox.DefaultMaxRequestBytes, "largest job request in `BYTES`")
		return func(ctx context.Context, e *env) int {
			switch {
			case listen == "":
				return usageError(e, fs, "--listen is required")
			case slots < 1:
				return usageError(e, fs, "--slots must be at least 1")
			case cpus < 0 || procs < 0 || timeout < 0 || grace < 0 || maxReq < 1:
				return usageError(e, fs, "limits must not be negative")
			}
			cfg := sandbox.Config{
				Name: name, Type: engine, Concurrency: slots, CPUs: cpus, MaxProcesses: procs, Timeout: timeout,
				Logger: e.log.With("sandbox", name),
			}
			var err error
			if memory != "" {
				if cfg.MemoryBytes, err = sandbox.ParseBytes(memory); err != nil {
					return usageError(e, fs, "--memory: "+err.Error())
				}
			}
			if fileSize != "" {
				if cfg.MaxFileSizeBytes, err = sandbox.ParseBytes(fileSize); err != nil {
					return usageError(e, fs, "--max-file-size: "+err.Error())
				}
			}
			// Each line names the node: the SLURM node name in a job (hosts
			// may share one machine), else the host name.
			log := e.log.With("sandbox", name)
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
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				e.errorf("sandbox-serve: %v", err)
				return exitFailure
			}
			log.Info("listening", "addr", ln.Addr().String(), "engine", engine, "slots", slots)
			srv := sandbox.NewServer(sb, sandbox.ServerOptions{Slots: slots, MaxRequestBytes: maxReq, Logger: log})
			if err := sandbox.Serve(ctx, ln, srv, grace); err != nil && !errors.Is(err, context.Canceled) {
				e.errorf("sandbox-serve: %v", err)
				return exitFailure
			}
			log.Info("stopped")
			return exitOK
		}
	},
}
