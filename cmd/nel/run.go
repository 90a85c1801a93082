package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/local"
	"github.com/nel-eval/nel/runtime/shellquote"
	"github.com/spf13/cobra"
)

var runHelp = `Runs a recipe on this machine, end to end: starts its process services,
runs every benchmark's shards in parallel, merges them, and prints each
benchmark's headline. Results go to <output.dir>/<benchmark>/results.parquet
(and trajectories.parquet); the suite's reports to <output.dir>/report.md and
one file per other format of output.report (report.html, report.csv, ...);
the compiled plan to <output.dir>/.nel/.

Services must be of type api (an endpoint somewhere) or process (a command
nel starts and health-waits here, e.g. 'nel-run sim-server'); GPU servers
(vllm, sglang, trt_llm, dynamo, nim) run through 'nel compile'.

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
terminal) one status line is printed every --progress.

Quick mode (NeMo Evaluator's nel eval run --bench, which nel eval run also
accepts): no recipe file, one built-in benchmark against one endpoint:

  nel run --bench gsm8k --model-url http://host:8000/v1 --model-id M -o DIR

It builds the recipe NeMo's quick mode builds (an api service "model"
speaking chat completions, a simple solver), and runs it as any recipe: it
has a recipe hash, -O overrides apply to it, and the run folder keeps it as
.nel/recipe/quick-NAME.yaml (nel hash, nel publish and a later nel run read
it). --model-url and --model-id default to $NEMO_MODEL_URL and
$NEMO_MODEL_ID. The API key is passed by the NAME of the variable holding
it (--api-key-env; default NEMO_API_KEY, else NVIDIA_API_KEY, when set):
--api-key VALUE is refused, since every user of a login node can read a
command line.

However it is stopped (Ctrl-C, nel stop, a closed SSH session or output
pipe), nel run first stops the servers it started, their children too, and
says how many samples of the whole run are safe.` + "\n\n" + exitcode.Help("run")

type runOptions struct {
	quick     quickOptions
	overrides overrides
	output    string
	every     time.Duration
	verbose   bool
	locked    bool
	resume    bool
	remote    bool
	dryRun    bool
	file      string
}

func newRunCmd(e *env) *cobra.Command {
	o := &runOptions{}
	c := &cobra.Command{
		Use:   "run [-o DIR] [--resume] [-O path=value]... FILE | --bench NAME --model-url URL --model-id ID\n       nel run --resume DIR",
		Short: "run a recipe (or quick mode: one benchmark, no recipe) on this machine, end to end",
		Long:  runHelp,
		RunE: func(c *cobra.Command, args []string) error {
			quick := c.Flags().Changed("bench")
			switch {
			case quick && len(args) > 0:
				return usageError(e, c, "run: give a recipe or --bench NAME (quick mode), not both")
			case !quick && len(args) != 1:
				return usageError(e, c, "run: expected exactly one recipe, or --bench NAME for quick mode")
			case !quick && quickFlagSet(c.Flags()) != "":
				return usageError(e, c, "run: %s is a quick-mode flag (with --bench); a recipe says it in its services and benchmarks (or -O path=value)", quickFlagSet(c.Flags()))
			case !quick:
				o.file = args[0]
			}
			return o.run(c, e)
		},
	}
	f := c.Flags()
	addQuickFlags(f, &o.quick)
	addNemoRunFlags(f)
	addOverrides(f, &o.overrides, "override a field before validation")
	addTasks(f, &o.overrides)
	f.StringVarP(&o.output, "output", "o", "", "output `DIR`, relative to the current directory (overrides output.dir, which is relative to the recipe)")
	f.DurationVar(&o.every, "progress", 0, "status line interval when stderr is not a terminal (default: output.progress_interval)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log what each shard does")
	f.BoolVar(&o.locked, "locked", false, "refuse a recipe with a floating image tag or an unlocked dataset (see nel lock)")
	addRemotePaths(f, &o.remote)
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan (services, benchmarks and their images, resources, output) and the sbatch script, and run nothing")
	f.BoolVar(&o.resume, "resume", false, "also run again the samples that ended in infra_error, in finished shards too (scored and model_error samples are kept)")
	return c
}

func (o *runOptions) run(c *cobra.Command, e *env) error {
	if err := refuseNemoRunFlags(c.Flags()); err != nil {
		return err
	}
	s, text, cont, err := o.load(c)
	if err != nil {
		return err
	}
	if o.locked {
		if err := checkLocked(s); err != nil {
			return err
		}
	}
	if o.dryRun {
		return dryRun(s, o.overrides, e)
	}
	suite, err := local.Run(c.Context(), s, local.Options{
		NelVersion: version, Every: o.every, Verbose: o.verbose, Resume: o.resume, Title: filepath.Base(s.Path),
		RecipeText: text, Continue: cont,
	}, e.stdout, e.stderr)
	if err != nil {
		return err
	}
	return exitcode.New(exitcode.For("run", "INVALID", false), local.Invalid(suite))
}

// load loads the recipe: FILE with the overrides; for --resume DIR, the
// recipe the run in DIR ran, with what DIR records of it; or quick mode's
// recipe, whose text is returned too for the run folder to keep.
func (o *runOptions) load(c *cobra.Command) (*compiler.Source, []byte, *local.Recorded, error) {
	if fi, err := os.Stat(o.file); o.file != "" && err == nil && fi.IsDir() {
		if !o.resume {
			return nil, nil, nil, exitcode.Usagef("run: %s is a directory: nel run --resume %s continues the run in it; a new run needs a recipe file", o.file, o.file)
		}
		if o.output != "" || len(o.overrides) > 0 {
			return nil, nil, nil, exitcode.Usagef("run: --resume %s runs the recipe recorded in %s as it was: -o and -O cannot change it", o.file, o.file)
		}
		s, rec, err := local.LoadResume(o.file)
		return s, nil, rec, err
	}
	ovs := o.overrides
	if o.output != "" {
		ovs = append(ovs, compiler.OutputDirFlag("-o "+o.output, o.output))
	}
	if o.file != "" {
		s, err := loadWarned(o.file, ovs, o.remote, c.ErrOrStderr())
		return s, nil, nil, err
	}
	q, err := o.quick.resolve(c.Flags())
	if err != nil {
		return nil, nil, nil, err
	}
	s, text, err := loadQuick(q, ovs)
	return s, text, nil, err
}

// dryRun prints what the run would do (compiler.DryRun), with the job
// compiled against the nel-run nel compile would use.
func dryRun(s *compiler.Source, ovs []compiler.Override, e *env) error {
	path, sum, err := locateNelRun("")
	if err != nil {
		return err
	}
	repro := []string{"nel", "compile", "-t", "slurm", s.Path}
	for _, ov := range ovs {
		repro = append(repro, ov.Args()...)
	}
	return compiler.DryRun(s, compiler.CompileOptions{
		NelVersion: version, NelRun: path, NelRunSHA256: sum, Reproduce: shellquote.Join(repro),
	}, e.stdout)
}
