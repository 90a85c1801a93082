package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/local"
	"github.com/spf13/cobra"
)

var validateHelp = `Checks each recipe against the schema and the cross-field rules and prints its recipe hash.
Features that load but that nel compile cannot run yet are listed as notes. A benchmark
whose data is all local is loaded as nel-run will load it: data that does not load is an
error, items whose content repeats an earlier item's are a warning with their lines.

A smoke test before a cluster allocation is spent (--samples N, NeMo's nel
validate -b): runs N samples of each benchmark of one recipe, or of quick
mode's recipe (-b NAME --model-url URL --model-id ID, as nel run --bench;
5 samples unless told), through the same path as nel run, against the
recipe's services, and says what a full run would hit: a dead endpoint or
a refused key (within seconds), a path or protocol the server does not
serve (HTTP 404), answers the scorer cannot read (with an example),
answers cut off at max_tokens; each sample's expected and extracted
answer, the latency per request and a rough full-run time. Exit status 1
when the samples show a problem a full run would hit. The samples run in a
temporary folder (-o DIR, a new or empty folder, keeps them).` + "\n\n" + exitcode.Help("validate")

type validateOptions struct {
	overrides overrides
	quiet     bool
	files     []string
	quick     quickOptions
	samples   int
	output    string
	verbose   bool
	remote    bool
}

func newValidateCmd(e *env) *cobra.Command {
	o := &validateOptions{}
	c := &cobra.Command{
		Use:   "validate [-O path=value]... FILE... | FILE --samples N | -b NAME --model-url URL --model-id ID [--samples N]",
		Short: "check recipes against the schema and cross-field rules; with --samples, a smoke test against the endpoint",
		Long:  validateHelp,
		RunE: func(c *cobra.Command, args []string) error {
			f := c.Flags()
			quick := f.Changed("bench")
			switch {
			case quick && len(args) > 0:
				return usageError(e, c, "validate: give recipes or -b NAME (quick mode), not both")
			case !quick && len(args) == 0:
				return usageError(e, c, "validate: no recipe given (or -b NAME --model-url URL --model-id ID for a smoke test)")
			case !quick && quickFlagSet(f) != "":
				return usageError(e, c, "validate: %s is a quick-mode flag (with -b); a recipe says it in its services and benchmarks (or -O path=value)", quickFlagSet(f))
			case f.Changed("samples") && o.samples < 1:
				return usageError(e, c, "validate: --samples %d: want at least 1", o.samples)
			case !quick && f.Changed("samples") && len(args) != 1:
				return usageError(e, c, "validate: --samples runs one recipe's samples; %d recipes given", len(args))
			}
			o.files = args
			if quick || f.Changed("samples") {
				return o.smoke(c, e)
			}
			return o.run(c.Context(), e)
		},
	}
	f := c.Flags()
	addOverrides(f, &o.overrides, "override a field before validation")
	addTasks(f, &o.overrides)
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing for valid recipes")
	addQuickFlags(f, &o.quick)
	f.IntVarP(&o.samples, "samples", "s", 5, "smoke test: run `N` samples of each benchmark against its endpoint")
	f.StringVarP(&o.output, "output", "o", "", "smoke test: keep the samples' run in `DIR`, a new or empty folder (default: a temporary folder, removed)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "smoke test: log what the shard does")
	addRemotePaths(f, &o.remote)
	return c
}

// run validates every file, gathering every recipe's errors before it
// fails.
func (o *validateOptions) run(ctx context.Context, e *env) error {
	// One Loader for every file: compiling the schema is a good part of
	// the cost of a small recipe.
	l, err := compiler.NewLoader()
	if err != nil {
		return err
	}
	l.RemotePaths = o.remote
	var all compiler.Errors
	for _, f := range o.files {
		s, err := l.LoadFile(f, o.overrides)
		var errs compiler.Errors
		switch {
		case errors.As(err, &errs):
			all = append(all, errs...)
			continue
		case err != nil:
			return exitcode.New(exitcode.Usage, err)
		}
		h, _, err := compiler.ComputeHashes(s)
		if err != nil {
			return err
		}
		printWarnings(e.stderr, s.Warnings)
		for _, n := range compiler.Unsupported(s) {
			fmt.Fprintf(e.stderr, "note: %s\n", n.Error())
		}
		warnings, dataErrs := compiler.CheckData(ctx, s)
		printWarnings(e.stderr, warnings)
		if len(dataErrs) > 0 {
			all = append(all, dataErrs...)
			continue
		}
		if !o.quiet {
			fmt.Fprintf(e.stdout, "%s: ok (recipe %s)\n", f, h.Recipe)
		}
	}
	if len(all) > 0 {
		return all
	}
	return nil
}

// smoke runs the samples of one recipe, or of quick mode's (-b).
func (o *validateOptions) smoke(c *cobra.Command, e *env) error {
	load := func(extra []compiler.Override) (*compiler.Source, []byte, error) {
		ovs := append(slices.Clone([]compiler.Override(o.overrides)), extra...)
		if len(o.files) == 1 {
			s, err := load(o.files[0], ovs)
			return s, nil, err
		}
		q, err := o.quick.resolve(c.Flags())
		if err != nil {
			return nil, nil, err
		}
		return loadQuick(q, ovs)
	}
	return local.Smoke(c.Context(), load, local.SmokeOptions{
		Samples: o.samples, NelVersion: version, OutDir: o.output, Verbose: o.verbose,
	}, e.stdout, e.stderr)
}
