package main

import (
	"github.com/nel-eval/nel/analysis/publish"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/spf13/cobra"
)

const publishHelp = `Publishes a finished run and its recipe to a recipe store, so that anyone
can fetch the recipe by its hash and reproduce the numbers (nel reproduce).

DIR is a run's output directory (nel run's, or a SLURM job's after merge).
The recipe comes from DIR/.nel/ (nel run keeps a copy there); for a SLURM
run pass it with --recipe (and the same -O overrides). Either way it must
hash to the recipe hash the run's results carry.

The store is a directory, or an http(s) URL that accepts PUT (--print
lists the files and where they go instead, to upload them yourself; any
static file server can then serve the store). Layout, content-addressed:

  recipes/<hex>/manifest.json     every file below with its sha256 and size
  recipes/<hex>/recipe/<file>     the recipe as written, and the local files
                                  it references (data_path, rubric_file) by a
                                  path inside its folder, at the same path
  recipes/<hex>/data/<digest>/    those it references elsewhere (an absolute
                                  path, ../), under their content digest
  recipes/<hex>/canonical.json    the canonical JSON the hash is the sha256 of
  recipes/<hex>/lock.json         its lock (nel lock), when locked
  results/<hex>/runs.json         the published runs of the recipe
  results/<hex>/<run-id>/         manifest.json, plan.json, report.md,
                                  model-card.md, <benchmark>/eval.json,
                                  results.parquet, trajectories.parquet

The recipe hash covers local data by content, not by path: the manifest
lists each local file with its digest, and nel fetch and nel reproduce find
it by that digest wherever it lies (--no-data: the reproducer brings a
copy, with --data DIR).

<hex> is the recipe hash without "sha256:". The run id is the run's start
time and its plan hash: 20261121T101500Z-1a2b3c4d. Files go first and each
manifest last, so an interrupted publish never looks complete. Where the
run was published is recorded in DIR/.nel/published.json, which
nel report -f model-card uses for its link.`

func newPublishCmd(e *env) *cobra.Command {
	o := publish.Options{NelVersion: version}
	var ovs overrides
	c := &cobra.Command{
		Use:   "publish DIR --store PATH|URL [--recipe FILE [-O path=value]...] [--print]",
		Short: "put a run and its recipe in a content-addressed recipe store",
		Long:  publishHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || o.Store == "" {
				return usageError(e, c, "publish: expected DIR and --store")
			}
			o.Dir, o.Overrides = args[0], ovs
			return publish.Publish(c.Context(), o, e.stdout, e.stderr)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Store, "store", "", "the store: a directory or an http(s) URL (required)")
	f.StringVar(&o.Recipe, "recipe", "", "the recipe `FILE` the run ran (default: the copy in "+rundir.Dir("DIR").Meta()+"/)")
	addOverrides(f, &ovs, "with --recipe: an override the run was loaded with")
	f.BoolVar(&o.Print, "print", false, "print the files to upload and where they go; write nothing")
	f.BoolVar(&o.NoTrajectories, "no-trajectories", false, "leave "+rundir.TrajectoriesFile+" out (full prompts and responses)")
	f.BoolVar(&o.NoData, "no-data", false, "leave out the local data files the recipe references (reproducers then bring their own copy, found by its digest)")
	addTokenEnv(f, &o.TokenEnv)
	return c
}
