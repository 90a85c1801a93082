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
  -t k8s: Kubernetes objects:             nel compile -t k8s --image IMAGE recipe.cue | kubectl apply -f -
The same inputs always give byte-identical output.`

type compileOptions struct {
	overrides overrides
	target    string
	locked    bool
	nelRun    string
	file      string
	remote    bool
	k8s       compiler.K8sOptions
}

func newCompileCmd(e *env) *cobra.Command {
	o := &compileOptions{}
	c := &cobra.Command{
		Use:   "compile [-t slurm|make|k8s] [--locked] [--nel-run PATH] [-O path=value]... FILE",
		Short: "print the job: an sbatch script, a Makefile for a local run, or Kubernetes objects",
		Long:  compileHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(e, c, "compile: expected exactly one recipe")
			}
			if err := o.checkTarget(c); err != nil {
				return err
			}
			o.file = args[0]
			return o.run(e)
		},
	}
	f := c.Flags()
	addOverrides(f, &o.overrides, "override a field before validation")
	addTasks(f, &o.overrides)
	f.StringVarP(&o.target, "target", "t", "slurm", "target: slurm, make or k8s")
	f.BoolVar(&o.locked, "locked", false, "refuse a recipe with a floating image tag or an unlocked dataset (see nel lock)")
	f.StringVar(&o.nelRun, "nel-run", "", "path of nel-run on the compute nodes (default: $NEL_RUN, else the nel-run beside nel)")
	addRemotePaths(f, &o.remote)
	f.StringVar(&o.k8s.Image, "image", "", "-t k8s: the container `IMAGE` holding nel-run (see the Dockerfile)")
	f.StringVar(&o.k8s.PVC, "pvc", compiler.DefaultK8sPVC, "-t k8s: the ReadWriteMany PersistentVolumeClaim `NAME` for the run folder")
	f.StringVar(&o.k8s.Secret, "secret", compiler.DefaultK8sSecret, "-t k8s: the Secret `NAME` whose keys are the variables the recipe names")
	return c
}

// checkTarget refuses an unknown target, and -t k8s's flags with another.
func (o *compileOptions) checkTarget(c *cobra.Command) error {
	switch o.target {
	case "slurm", "make":
		for _, name := range []string{"image", "pvc", "secret"} {
			if c.Flags().Changed(name) {
				return exitcode.Usagef("compile: --%s is for -t k8s", name)
			}
		}
	case "k8s":
		if o.k8s.Image == "" {
			return exitcode.Usagef("compile: -t k8s needs --image, the container image holding nel-run (the Dockerfile builds one)")
		}
	default:
		return exitcode.Usagef("compile: unknown target %q: expected slurm, make or k8s", o.target)
	}
	return nil
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
	if o.target == "k8s" { // nel-run is in the image
		return o.emit(e, s, "", "")
	}
	path, sum, err := locateNelRun(o.nelRun)
	if err != nil {
		return err
	}
	if dir, ok := compiler.NodeLocalDir(path); ok && o.target == "slurm" {
		fmt.Fprintf(e.stderr, "warning: the job runs nel-run at %s, under %s, which is usually private to this machine: compute nodes will not find it there (put nel-run on a filesystem they share, and give it with --nel-run PATH or $NEL_RUN)\n", path, dir)
	}
	return o.emit(e, s, path, sum)
}

// emit compiles s for the target and writes the job on stdout.
func (o *compileOptions) emit(e *env, s *compiler.Source, nelRun, sum string) error {
	// The command that makes this job again, recorded in it.
	repro := []string{"nel", "compile", "-t", o.target, o.file}
	if o.locked {
		repro = append(repro, "--locked")
	}
	if o.target == "k8s" {
		repro = append(repro, "--image", o.k8s.Image, "--pvc", o.k8s.PVC, "--secret", o.k8s.Secret)
	}
	for _, ov := range o.overrides {
		repro = append(repro, ov.Args()...)
	}
	out, err := compiler.Compile(s, compiler.CompileOptions{
		Target:       o.target,
		NelVersion:   version,
		NelRun:       nelRun,
		NelRunSHA256: sum,
		Reproduce:    shellquote.Join(repro),
		K8s:          o.k8s,
	})
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(out)
	return err
}
