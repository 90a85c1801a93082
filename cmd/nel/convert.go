package main

import (
	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

const convertHelp = `Prints the nel recipe a NeMo Evaluator launcher (v1) config becomes: the same
recipe, which hashes the same (nel hash), written in nel's format (YAML, or CUE
with -f cue). -O overrides and --task selections are applied first, as nel run
applies them; ${VAR} references stay references.`

type convertOptions struct {
	overrides overrides
	format    string
	file      string
}

func newConvertCmd(e *env) *cobra.Command {
	o := &convertOptions{}
	c := &cobra.Command{
		Use:   "convert [-f yaml|cue] [--task NAME]... [-O path=value]... CONFIG",
		Short: "print the nel recipe a NeMo Evaluator launcher (v1) config becomes",
		Long:  convertHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(e, c, "convert: expected exactly one config")
			}
			if o.format != "yaml" && o.format != "cue" {
				return exitcode.Usagef("convert: -f %s: expected yaml or cue", o.format)
			}
			o.file = args[0]
			return o.run(e)
		},
	}
	f := c.Flags()
	addOverrides(f, &o.overrides, "override a field of the config")
	addTasks(f, &o.overrides)
	f.StringVarP(&o.format, "format", "f", "yaml", "the recipe's format: yaml or cue")
	return c
}

func (o *convertOptions) run(e *env) error {
	l, err := compiler.NewLoader()
	if err != nil {
		return err
	}
	out, warnings, err := l.Convert(o.file, o.overrides, o.format)
	if err != nil {
		return err
	}
	printWarnings(e.stderr, warnings)
	_, err = e.stdout.Write(out)
	return err
}
