package main

import (
	"github.com/nel-eval/nel/compiler/catalog"
	"github.com/spf13/cobra"
)

const listHelp = `Lists the built-in benchmarks: name, model-card category, item count of
the default data as published ("unknown" where nel does not know it
without downloading the data), default scorer and default data source
(params.data_path replaces it).

--sources lists the benchmark and dataset sources a recipe may name, NeMo
Evaluator's included, and which nel runs yet; --scorers the scorers a
recipe's scoring.metrics may name.

--format json prints one object whose key names the list: {"benchmarks":
[{"name", "category", "source", "items" (null when unknown), "scorer",
"needs_sandbox", "needs_judge"}]}, {"sources": [{"form", "field",
"supported", "about"}]} or {"scorers": [{"name", "about"}]}. These names
are stable.

-s/--source is NeMo's filter: all and builtin list the built-in
benchmarks; skills and lm-eval are benchmark sources nel does not run yet.`

type listOptions struct {
	sources, scorers bool
	format, source   string
}

func newListCmd(e *env) *cobra.Command {
	o := &listOptions{}
	c := &cobra.Command{
		Use:   "list [--sources | --scorers] [--format text|json]",
		Short: "list the built-in benchmarks (with --sources, --scorers: what else a recipe may name)",
		Long:  listHelp,
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			list := "benchmarks"
			switch {
			case o.sources && o.scorers:
				return usageError(e, c, "list: --sources or --scorers, not both")
			case o.sources:
				list = "sources"
			case o.scorers:
				list = "scorers"
			}
			switch o.source {
			case "all", "builtin":
			case "skills", "lm-eval":
				return usageError(e, c, "list: --source %s: not supported yet: nel runs its built-in benchmarks (nel list --sources)", o.source)
			default:
				return usageError(e, c, "list: --source %q: want all, builtin, skills or lm-eval", o.source)
			}
			if o.format != "text" && o.format != "json" {
				return usageError(e, c, "list: --format %q: want text or json", o.format)
			}
			return catalog.Write(e.stdout, list, o.format)
		},
	}
	f := c.Flags()
	f.BoolVar(&o.sources, "sources", false, "list the benchmark and dataset sources, and which are supported yet")
	f.BoolVar(&o.scorers, "scorers", false, "list the scorers a recipe's scoring.metrics may name")
	f.StringVar(&o.format, "format", "text", "output `FORMAT`: text or json")
	f.StringVarP(&o.source, "source", "s", "all", "NeMo's filter: all or builtin (skills and lm-eval are not supported yet)")
	return c
}
