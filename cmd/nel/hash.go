package main

import (
	"fmt"
	"github.com/nel-eval/nel/internal/exitcode"

	"github.com/nel-eval/nel/compiler"
	"github.com/spf13/cobra"
)

const hashHelp = `Prints the recipe hash: the methodology (benchmarks, prompts, scoring, generation,
model identity, nel scoring version). --plan adds the deployment (cluster, endpoints,
shards, output); --benchmarks prints each benchmark's hash (its methodology without
the evaluated model: what nel compare requires to match). --explain prints the
canonical JSON each hash covers.`

type hashOptions struct {
	overrides                 overrides
	plan, benchmarks, explain bool
	file                      string
}

func newHashCmd(e *env) *cobra.Command {
	o := &hashOptions{}
	c := &cobra.Command{
		Use:   "hash [--plan | --benchmarks] [--explain] [-O path=value]... FILE",
		Short: "print the recipe hash, the plan hash or each benchmark's hash",
		Long:  hashHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(e, c, "hash: expected exactly one recipe")
			}
			if o.plan && o.benchmarks {
				return exitcode.Usagef("hash: --plan and --benchmarks exclude each other")
			}
			o.file = args[0]
			return o.run(e)
		},
	}
	f := c.Flags()
	addOverrides(f, &o.overrides, "override a field before hashing")
	addTasks(f, &o.overrides)
	f.BoolVar(&o.plan, "plan", false, "print the plan hash")
	f.BoolVar(&o.benchmarks, "benchmarks", false, "print each benchmark's hash")
	f.BoolVar(&o.explain, "explain", false, "print the canonical JSON the hash covers")
	return c
}

func (o *hashOptions) run(e *env) error {
	s, err := load(o.file, o.overrides)
	if err != nil {
		return err
	}
	h, ex, err := compiler.ComputeHashes(s)
	if err != nil {
		return err
	}
	switch {
	case o.benchmarks:
		for i, k := range h.BenchmarkKeys() {
			if o.explain {
				fmt.Fprintf(e.stdout, "%s\n", ex.Benchmarks[i])
				continue
			}
			fmt.Fprintf(e.stdout, "%s  %s\n", h.Benchmarks[k], k)
		}
	case o.plan && o.explain:
		fmt.Fprintf(e.stdout, "%s\n", ex.Plan)
	case o.plan:
		fmt.Fprintln(e.stdout, h.Plan)
	case o.explain:
		fmt.Fprintf(e.stdout, "%s\n", ex.Recipe)
	default:
		fmt.Fprintln(e.stdout, h.Recipe)
	}
	return nil
}
