package main

import (
	"fmt"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/runtime/shellquote"
	"github.com/spf13/cobra"
)

const compileHelp = `Prints the job for a recipe on stdout; diagnostics go to stderr.
  -t slurm (default): one sbatch script:  nel compile recipe.cue | sbatch
  -t make: a Makefile for a local run:    nel compile -t make recipe.cue > Makefile && make -j 4
The same inputs always give byte-identical output.`

type compileOptions struct {
	overrides overrides
	target    string
	locked    bool
	nelRun    string
	file      string
	remote    bool
}

func newCompileCmd(e *env) *cobra.Command {
	o := &compileOptions{}
	c := &cobra.Command{
		Use:   "compile [-t slurm|make] [--locked] [--nel-run PATH] [-O path=value]... FILE",
		Short: "print the job: an sbatch script or a Makefile for a local run",
		Long:  compileHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(e, c, "compile: expected exactly one recipe")
			}
			if o.target != "slurm" && o.target != "make" {
				return exitcode.Usagef("compile: unknown target %q: expected slurm or make", o.target)
			}
			o.file = args[0]
			return o.run(e)
		},
	}
	f := c.Flags()
	addOverrides(f, &o.overrides, "override a field before validation")
	addTasks(f, &o.overrides)
	f.StringVarP(&o.target, "target", "t", "slurm", "target: slurm or make")
	f.BoolVar(&o.locked, "locked", false, "refuse a recipe with a floating image tag or an unlocked dataset (see nel lock)")
	f.StringVar(&o.nelRun, "nel-run", "", "path of nel-run on the compute nodes (default: $NEL_RUN, else the nel-run beside nel)")
	addRemotePaths(f, &o.remote)
	return c
}

func (o *compileOptions) run(e *env) error {
	s, err := loadWarned(o.file, o.overrides, o.remote, e.stderr)
	if err != nil {
		return err
	}
	if o.locked {
		if err := checkLocked(s); err != nil {
			return err
		}
	}
	path, sum, err := locateNelRun(o.nelRun)
	if err != nil {
		return err
	}
	if dir, ok := compiler.NodeLocalDir(path); ok && o.target == "slurm" {
		fmt.Fprintf(e.stderr, "warning: the job runs nel-run at %s, under %s, which is usually private to this machine: compute nodes will not find it there (put nel-run on a filesystem they share, and give it with --nel-run PATH or $NEL_RUN)\n", path, dir)
	}
	// The command that makes this job again, recorded in it.
	repro := []string{"nel", "compile", "-t", o.target, o.file}
	if o.locked {
		repro = append(repro, "--locked")
	}
	for _, ov := range o.overrides {
		repro = append(repro, ov.Args()...)
	}
	out, err := compiler.Compile(s, compiler.CompileOptions{
		Target:       o.target,
		NelVersion:   version,
		NelRun:       path,
		NelRunSHA256: sum,
		Reproduce:    shellquote.Join(repro),
	})
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(out)
	return err
}
