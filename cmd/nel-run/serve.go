package main

import (
	"context"
	"net"
	"strconv"

	"github.com/nel-eval/nel/runtime/gymserve"
	"github.com/spf13/cobra"
)

const serveHelp = `Serve benchmark --benchmark of the compiled plan --plan as a NeMo Gym
resource server (GET /health, GET /dataset_size, POST /seed_session,
POST /verify), scored by the benchmark's scorer as its shards score it: what
nel serve does, on a node that has only nel-run. --service serves instead the
benchmark of a gym service of the plan (its benchmark:), which a job starts
as a managed gym server. --endpoint-file gets
http://HOST:PORT once the server listens, for the job's clients to wait on.
Stops gracefully on SIGINT or SIGTERM.`

type serveOptions struct {
	plan    string
	service string
	host    string
	port    int
	run     gymserve.RunOptions
}

func newServeCmd(e *env) *cobra.Command {
	o := &serveOptions{}
	c := &cobra.Command{Use: "serve [flags]", Short: "serve a plan's benchmark as a NeMo Gym resource server", Long: serveHelp}
	f := c.Flags()
	f.StringVar(&o.plan, "plan", "", "compiled plan `FILE` (required)")
	f.StringVar(&o.run.Benchmark, "benchmark", "", "benchmark `KEY` in the plan (default: its only benchmark)")
	f.StringVar(&o.service, "service", "", "serve the benchmark of gym service `NAME` of the plan (its benchmark: field)")
	f.StringVar(&o.host, "host", "0.0.0.0", "`HOST` to listen on")
	f.IntVar(&o.port, "port", 9090, "`PORT` to listen on (0: any free port)")
	f.BoolVar(&o.run.GymCompat, "gym-compat", false, "say protocol \"gym\" on /health (both /verify formats are taken either way)")
	f.StringVar(&o.run.ExportDir, "export-data", "", "write the benchmark as Gym JSONL to `DIR`/<benchmark>.jsonl, then exit")
	f.BoolVar(&o.run.Serve, "serve", false, "with --export-data: serve after exporting")
	f.IntVar(&o.run.Pool, "pool", 4, "verdicts computed at once when scoring runs code or asks a judge")
	f.StringVar(&o.run.EndpointFile, "endpoint-file", "", "write http://HOST:PORT to `FILE` once listening")
	return command(e, c, false, func(ctx context.Context, _ []string) int {
		if o.plan == "" {
			return usageError(e, c, "--plan is required")
		}
		return o.serve(ctx, e)
	})
}

func (o *serveOptions) serve(ctx context.Context, e *env) int {
	p, err := readPlan(o.plan)
	if err != nil {
		e.errorf("serve: %v", err)
		return exitFailure
	}
	if o.service != "" {
		if p, err = gymserve.ServicePlan(p, o.service); err != nil {
			e.errorf("serve: %v", err)
			return exitFailure
		}
	}
	o.run.Plan, o.run.NelVersion, o.run.Logger, o.run.Stderr = p, version, e.log, e.stderr
	o.run.Addr = net.JoinHostPort(o.host, strconv.Itoa(o.port))
	if err := gymserve.Run(ctx, o.run); err != nil {
		e.errorf("serve: %v", err)
		return exitFailure
	}
	return exitOK
}
