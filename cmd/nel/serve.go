package main

import (
	"log/slog"
	"net"
	"strconv"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/local"
	"github.com/nel-eval/nel/runtime/gymserve"
	"github.com/spf13/cobra"
)

const serveHelp = `Serves one benchmark over HTTP as a NeMo Gym resource server, scored by nel's
scorer for it (the same answer gets the same reward served or run):

  GET  /health         {"status": "ok", "benchmark", "dataset_size", "protocol"}
  GET  /dataset_size   {"size": N}: the items the recipe selects
  POST /seed_session   {"idx": i} → prompt, messages, expected_answer, metadata
  POST /verify         {"response": "text", "expected": "…", "metadata": {…}}, or
                       Gym's {"response": NeMoGymResponse, "expected_answer": …, …}
                       → {"reward", "extracted_answer", "scoring_details", …}

A bad body or an idx out of range gets 400 with {"detail": …}. The benchmark is
a recipe's (with -b KEY when it has several) or, with -b NAME alone, a built-in
one with its defaults (-O sets its fields: -O benchmarks.0.params.data_path=F).
--export-data DIR writes DIR/<benchmark>.jsonl (Gym's rows: responses_create_params,
expected_answer, uuid, metadata) and exits, or serves after it with --serve.
Stops gracefully on SIGINT or SIGTERM.`

type serveOptions struct {
	overrides overrides
	bench     string
	run       gymserve.RunOptions
	host      string
	port      int
	file      string
}

func newServeCmd(e *env) *cobra.Command {
	o := &serveOptions{}
	c := &cobra.Command{
		Use:   "serve [-b KEY] [-O path=value]... FILE | -b NAME",
		Short: "serve a benchmark as a NeMo Gym resource server (seed_session, verify)",
		Long:  serveHelp,
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return usageError(e, c, "serve: expected at most one recipe")
			case len(args) == 0 && o.bench == "":
				return usageError(e, c, "serve: give a recipe or -b NAME (a built-in benchmark)")
			case len(args) == 1:
				o.file = args[0]
			}
			return o.serve(c, e)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.bench, "benchmark", "b", "", "the built-in benchmark `NAME` to serve; with a recipe, the key of its benchmark to serve")
	addOverrides(f, &o.overrides, "override a field before validation")
	f.StringVar(&o.host, "host", "0.0.0.0", "`HOST` to listen on")
	f.IntVarP(&o.port, "port", "p", 9090, "`PORT` to listen on (0: any free port, printed)")
	f.BoolVar(&o.run.GymCompat, "gym-compat", false, "say protocol \"gym\" on /health (both /verify formats are taken either way, as in NeMo)")
	f.StringVar(&o.run.ExportDir, "export-data", "", "write the benchmark as Gym JSONL to `DIR`/<benchmark>.jsonl, then exit")
	f.BoolVar(&o.run.Serve, "serve", false, "with --export-data: serve after exporting")
	f.IntVar(&o.run.Pool, "pool", 4, "verdicts computed at once when scoring runs code or asks a judge")
	return c
}

func (o *serveOptions) serve(c *cobra.Command, e *env) error {
	s, err := o.load(c)
	if err != nil {
		return err
	}
	p, err := local.PlanOf(s, version)
	if err != nil {
		return err
	}
	o.run.Plan, o.run.NelVersion, o.run.Stderr = p, version, e.stderr
	o.run.Addr = net.JoinHostPort(o.host, strconv.Itoa(o.port))
	o.run.Logger = slog.Default()
	return gymserve.Run(c.Context(), o.run)
}

// load loads the recipe, or for -b NAME alone the quick-mode recipe of
// that benchmark. Serving calls no model: the quick recipe's model
// service is a placeholder that nothing asks.
func (o *serveOptions) load(c *cobra.Command) (*compiler.Source, error) {
	if o.file != "" {
		o.run.Benchmark = o.bench
		return loadWarned(o.file, o.overrides, false, c.ErrOrStderr())
	}
	q := compiler.Quick{Bench: o.bench, ModelURL: "http://127.0.0.1:9/v1", ModelID: "none"}
	s, _, err := loadQuick(q, o.overrides)
	return s, err
}
