package main

import (
	"errors"
	"fmt"

	"github.com/nel-eval/nel/analysis/reproduce"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

var reproduceHelp = `Reproduces a published number from its recipe hash alone: fetches the
recipe (verified as nel fetch does) and its published run, runs the recipe
again, and compares the new run with the published one, per benchmark,
paired by item: the difference new − published with an adjusted interval
(Bonett–Price for binary rewards, so that a few items never look
certain), an equivalence test (two one-sided tests, TOST, at α = 0.05:
the 90% interval inside ±--margin), a two-sided test of a difference
(exact McNemar for binary rewards, else a sign-flip permutation test),
and, apart from the statistics, the provenance that differs (model,
serving engine and version, GPU, nel version, dataset digests).

Verdict, per benchmark, equivalence first:
  REPRODUCED    the equivalence test shows the difference within ±--margin
                (even when it is significant: the same within the margin)
  DIFFERENT     not shown within the margin and the two-sided test is
                significant; or the runs are not comparable: the
                methodology or the model differs (benchmark hash, dataset
                digest, scoring version, model id), whatever the numbers
  INCONCLUSIVE  neither: it says how many items (or repeats) would show it
                within the margin; or a benchmark was not reproduced
  INVALID       the published or the new run has more infrastructure
                failures than its max_error_rate: it did not measure its
                model, so it could not be reproduced (which run, and why)
With several benchmarks both families of p-values are Holm-adjusted, so
that the chance of any false REPRODUCED, and of any false DIFFERENT, stays
at most α across the run. Samples that failed for infrastructure reasons
are left out, never counted as wrong. Overall: INVALID if any benchmark is,
else DIFFERENT if any is, else INCONCLUSIVE if any is, else REPRODUCED.

How the recipe runs:
  (default)         on this machine, as nel run does (process services are
                    started; GPU servers need SLURM)
  --model-url URL   against an OpenAI-compatible endpoint already running
                    (base URL, e.g. http://host:8000/v1): every solver
                    service of the recipe points there, keeping the model id
  -t slurm          print the sbatch script (nel reproduce … -t slurm | sbatch);
                    when the job is done, compare with --run OUTPUT_DIR
  --run DIR         compare an existing run directory; run nothing

Everything goes under -o DIR (default ./reproduce-<12 hex digits>):
recipe/, published/, new/ (the new run) and reproduce.json. The recipe's
local data is found by its digest, as nel fetch finds it (--data DIR: a
folder holding your copy, e.g. when it was published with --no-data).` + "\n\n" + exitcode.Help("reproduce")

func newReproduceCmd(e *env) *cobra.Command {
	o := reproduce.RunOptions{Margin: reproduce.DefaultOptions().Margin, NelVersion: version,
		NelRun: func() (string, string, error) { return locateNelRun("") }}
	c := &cobra.Command{
		Use:   "reproduce sha256:HASH --store PATH|URL [--model-url URL | -t slurm | --run DIR] [-o DIR]",
		Short: "run a published recipe again and compare: REPRODUCED / DIFFERENT / INCONCLUSIVE",
		Long:  reproduceHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || o.Store == "" {
				return usageError(e, c, "reproduce: expected sha256:HASH and --store")
			}
			if err := validateReproduce(o); err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			o.Hash = args[0]
			return reproduce.Run(c.Context(), o, e.stdout, e.stderr)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Store, "store", "", "the store: a directory or an http(s) URL (required)")
	f.StringVar(&o.ModelURL, "model-url", "", "run against this OpenAI-compatible base `URL` instead of the recipe's services")
	f.StringVar(&o.Service, "service", "", "with --model-url: the one service to point there (default every solver service)")
	f.StringVar(&o.APIKeyEnv, "api-key-env", "", "with --model-url: the environment variable holding the endpoint's API key (sent as a bearer token; default: the service's own api_key reference)")
	f.StringVarP(&o.Target, "target", "t", "", "slurm: print the sbatch script instead of running here")
	f.StringVar(&o.Run, "run", "", "compare this finished run `DIR` instead of running")
	f.StringVar(&o.RunID, "run-id", "", "the published run to compare with (default the newest)")
	f.StringVarP(&o.Work, "output", "o", "", "working directory (default ./reproduce-<12 hex digits>)")
	f.Float64Var(&o.Margin, "margin", o.Margin, "largest difference (absolute reward) that still counts as the same result")
	f.StringVarP(&o.Format, "format", "f", "text", "output: text, markdown or json")
	addTokenEnv(f, &o.TokenEnv)
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "log what each shard does")
	addDataDirs(f, &o.DataDirs)
	return c
}

func validateReproduce(o reproduce.RunOptions) error {
	switch {
	case o.Target != "" && o.Target != "slurm":
		return fmt.Errorf("reproduce: -t %q: only slurm", o.Target)
	case o.Format != "text" && o.Format != "markdown" && o.Format != "json":
		return fmt.Errorf("reproduce: -f %q: expected text, markdown or json", o.Format)
	case o.Margin <= 0 || o.Margin >= 1:
		return fmt.Errorf("reproduce: --margin %v: want a difference between 0 and 1", o.Margin)
	}
	n := 0
	for _, set := range []bool{o.ModelURL != "", o.Target != "", o.Run != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return errors.New("reproduce: --model-url, -t slurm and --run exclude each other")
	}
	return nil
}
