package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/local"
	"github.com/spf13/cobra"
)

const runHelp = `Runs a recipe on this machine, end to end: starts its process services,
runs every benchmark's shards in parallel, merges them, and prints each
benchmark's headline. Results go to <output.dir>/<benchmark>/results.parquet
(and trajectories.parquet); the suite's reports to <output.dir>/report.md and
one file per other format of output.report (report.html, report.csv, ...);
the compiled plan to <output.dir>/.nel/.

Services must be of type api (an endpoint somewhere) or process (a command
nel starts and health-waits here, e.g. 'nel-run sim-server'); GPU servers
(vllm, sglang, trt_llm) run through 'nel compile'.

Interrupted? Run the same command again: finished samples are kept and only
the rest runs. With --resume, samples that ended in an infrastructure
failure (infra_error: the endpoint, network, sandbox or a judge failed) run
again too; scored samples and model errors never do. --resume is also the
explicit way to continue: it refuses when the folder holds a run of another
recipe hash (or plan) instead of starting over on top of it. Given a run
folder instead of a recipe (nel run --resume DIR), it runs again the recipe
that run ran (the copy kept in DIR/.nel/recipe/, with its overrides), in DIR.
nel status DIR says where a run stands; nel stop DIR stops it.

Before the first sample each shard probes its endpoint: a dead endpoint or a
rejected key is an error within seconds. A run stops when the same client
error (401, 403, 404, 400) fails several samples in a row, and pauses to
probe when the endpoint fails too often, sending the failed samples again
once it answers. A benchmark whose infrastructure failures pass its
max_error_rate is INVALID: its headline says so and shows no score, and nel
run exits 1 once everything is printed and written.

On a terminal a live line per benchmark shows progress; in a log (not a
terminal) one status line is printed every --progress.`

type runOptions struct {
	overrides overrides
	output    string
	every     time.Duration
	verbose   bool
	locked    bool
	resume    bool
	file      string
}

func newRunCmd(e *env) *cobra.Command {
	o := &runOptions{}
	c := &cobra.Command{
		Use:   "run [-o DIR] [--resume] [-O path=value]... FILE\n       nel run --resume DIR",
		Short: "run a recipe on this machine, end to end",
		Long:  runHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(e, c, "run: expected exactly one recipe")
			}
			o.file = args[0]
			return o.run(c, e)
		},
	}
	f := c.Flags()
	addOverrides(f, &o.overrides, "override a field before validation")
	f.StringVarP(&o.output, "output", "o", "", "output `DIR` (overrides output.dir)")
	f.DurationVar(&o.every, "progress", 0, "status line interval when stderr is not a terminal (default: output.progress_interval)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log what each shard does")
	f.BoolVar(&o.locked, "locked", false, "refuse a recipe with a floating image tag or an unlocked dataset (see nel lock)")
	f.BoolVar(&o.resume, "resume", false, "also run again the samples that ended in infra_error, in finished shards too (scored and model_error samples are kept)")
	return c
}

func (o *runOptions) run(c *cobra.Command, e *env) error {
	s, cont, err := o.load()
	if err != nil {
		return err
	}
	if o.locked {
		if err := checkLocked(s); err != nil {
			return err
		}
	}
	suite, err := local.Run(c.Context(), s, local.Options{
		NelVersion: version, Every: o.every, Verbose: o.verbose, Resume: o.resume, Title: filepath.Base(s.Path),
		Continue: cont,
	}, e.stdout, e.stderr)
	if err != nil {
		return err
	}
	return local.Invalid(suite)
}

// load loads the recipe: FILE with the overrides, or, for --resume DIR,
// the recipe the run in DIR ran, with what DIR records of it.
func (o *runOptions) load() (*compiler.Source, *local.Recorded, error) {
	if fi, err := os.Stat(o.file); err == nil && fi.IsDir() {
		if !o.resume {
			return nil, nil, exitcode.Usagef("run: %s is a directory: nel run --resume %s continues the run in it; a new run needs a recipe file", o.file, o.file)
		}
		if o.output != "" || len(o.overrides) > 0 {
			return nil, nil, exitcode.Usagef("run: --resume %s runs the recipe recorded in %s as it was: -o and -O cannot change it", o.file, o.file)
		}
		return local.LoadResume(o.file)
	}
	ovs := o.overrides
	if o.output != "" {
		ovs = append(ovs, compiler.Override{Text: "-o " + o.output, Path: []string{"output", "dir"}, Value: o.output})
	}
	s, err := load(o.file, ovs)
	return s, nil, err
}
