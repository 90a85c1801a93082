package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

const validateHelp = `Checks each recipe against the schema and the cross-field rules and prints its recipe hash.
Features that load but that nel compile cannot run yet are listed as notes. A benchmark
whose data is all local is loaded as nel-run will load it: data that does not load is an
error, items whose content repeats an earlier item's are a warning with their lines.`

type validateOptions struct {
	overrides overrides
	quiet     bool
	files     []string
}

func newValidateCmd(e *env) *cobra.Command {
	o := &validateOptions{}
	c := &cobra.Command{
		Use:   "validate [-O path=value]... FILE...",
		Short: "check recipes against the schema and cross-field rules",
		Long:  validateHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError(e, c, "validate: no recipe given")
			}
			o.files = args
			return o.run(c.Context(), e)
		},
	}
	addOverrides(c.Flags(), &o.overrides, "override a field before validation")
	c.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print nothing for valid recipes")
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
		for _, n := range compiler.Unsupported(s) {
			fmt.Fprintf(e.stderr, "note: %s\n", n.Error())
		}
		warnings, dataErrs := compiler.CheckData(ctx, s)
		for _, w := range warnings {
			fmt.Fprintf(e.stderr, "warning: %s\n", w.Error())
		}
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
