package main

import (
	"github.com/nel-eval/nel/analysis/publish"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const fetchHelp = `Fetches a published recipe from a recipe store by its hash, checks every
file against the store's manifest (sha256 and size), and checks that the
recipe, with its lock and the overrides it was published with, hashes to
the hash asked for. A file that does not match is refused with its name.

The recipe lands in DIR/recipe/ (default DIR: ./<first 12 hex digits>),
ready for nel run, nel compile or nel hash; with --results, the newest
published run (or --run-id's) lands in DIR/published/.

The hash covers the recipe's local data by content, not by path. Data the
recipe names inside its folder lands there; data it names elsewhere (an
absolute path) is found by its digest where the recipe says, else under a
--data DIR, else in the store's copy (DIR/data/<digest>/), and the -O
override that points the recipe there is printed.`

func newFetchCmd(e *env) *cobra.Command {
	o := publish.FetchOptions{NelVersion: version}
	c := &cobra.Command{
		Use:   "fetch sha256:HASH --store PATH|URL [-o DIR] [--data DIR] [--results] [--run-id ID]",
		Short: "fetch a published recipe (every file checked, hash verified)",
		Long:  fetchHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || o.Store == "" {
				return usageError(e, c, "fetch: expected sha256:HASH and --store")
			}
			o.Hash = args[0]
			return publish.Fetch(c.Context(), o, e.stdout, e.stderr)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Store, "store", "", "the store: a directory or an http(s) URL (required)")
	f.StringVarP(&o.Dest, "output", "o", "", "where to put the recipe (default ./<first 12 hex digits of the hash>)")
	f.BoolVar(&o.Results, "results", false, "also fetch a published run into DIR/published/")
	addDataDirs(f, &o.DataDirs)
	f.StringVar(&o.RunID, "run-id", "", "with --results: the run to fetch (default the newest)")
	addTokenEnv(f, &o.TokenEnv)
	return c
}

// addDataDirs adds --data DIR (repeatable).
func addDataDirs(f *pflag.FlagSet, dirs *[]string) {
	f.StringArrayVar(dirs, "data", nil, "a `DIR` holding copies of the recipe's local data, found by digest (repeatable)")
}

// addTokenEnv adds --token-env NAME.
func addTokenEnv(f *pflag.FlagSet, name *string) {
	f.StringVar(name, "token-env", "NEL_STORE_TOKEN", "environment variable holding a bearer token for an http(s) store")
}
