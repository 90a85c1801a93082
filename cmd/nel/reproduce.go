package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nel-eval/nel/analysis/reproduce"
	"github.com/nel-eval/nel/analysis/store"
	"github.com/nel-eval/nel/compiler"
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

func cmdFetch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fetch", "sha256:HASH --store PATH|URL [-o DIR] [--data DIR] [--results] [--run-id ID]", fetchHelp, stderr)
	storeF := fs.String("store", "", "the store: a directory or an http(s) URL (required)")
	outF := fs.String("o", "", "where to put the recipe (default ./<first 12 hex digits of the hash>)")
	withResults := fs.Bool("results", false, "also fetch a published run into DIR/published/")
	var dataDirs stringList
	fs.Var(&dataDirs, "data", "a `DIR` holding copies of the recipe's local data, found by digest (repeatable)")
	runID := fs.String("run-id", "", "with --results: the run to fetch (default the newest)")
	tokenEnv := fs.String("token-env", "NEL_STORE_TOKEN", "environment variable holding a bearer token for an http(s) store")
	argv, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(argv) != 1 || *storeF == "" {
		fs.Usage()
		return &exitError{2, errors.New("fetch: expected sha256:HASH and --store")}
	}
	hash, hex, err := parseRecipeHash(argv[0])
	if err != nil {
		return err
	}
	dest := *outF
	if dest == "" {
		dest = hex[:12]
	}
	st, err := store.Open(*storeF, store.Options{TokenEnv: *tokenEnv})
	if err != nil {
		return &exitError{2, fmt.Errorf("fetch: %w", err)}
	}
	s, _, err := fetchVerified(ctx, st, hash, dest, dataDirs, nil, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: recipe %s (verified)\n", s.Path, hash)
	if *withResults {
		m, err := store.FetchResults(ctx, st, hash, *runID, filepath.Join(dest, "published"))
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		fmt.Fprintf(stdout, "%s: run %s (%d files verified)\n", filepath.Join(dest, "published"), m.RunID, len(m.Files))
	}
	return nil
}

func parseRecipeHash(arg string) (hash, hex string, err error) {
	hex, err = store.ParseHash(arg)
	if err != nil {
		return "", "", &exitError{2, err}
	}
	return "sha256:" + hex, hex, nil
}

var scoringVersionRE = regexp.MustCompile(`"nel_scoring_version":"([^"]*)"`)

// fetchVerified fetches the recipe hash from st into dest and loads it as
// it was published (its lock beside it, its overrides, its local data
// found by digest — here, under dataDirs or in the store's copy — then
// extra), and refuses it unless it hashes to hash.
func fetchVerified(ctx context.Context, st store.Store, hash, dest string, dataDirs []string, extra []compiler.Override, stderr io.Writer) (*compiler.Source, *store.Manifest, error) {
	m, err := store.FetchRecipe(ctx, st, hash, dest)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch: %w", err)
	}
	if m.Recipe == "" {
		return nil, nil, fmt.Errorf("fetch: %s's manifest names no recipe file", hash)
	}
	path := filepath.Join(dest, filepath.FromSlash(m.Recipe))
	moved, err := locateData(m, dest, filepath.Dir(path), dataDirs, stderr)
	if err != nil {
		return nil, nil, &exitError{2, fmt.Errorf("fetch: %w", err)}
	}
	// The lock travels as lock.json; every command finds it beside the
	// recipe.
	if lk := filepath.Join(dest, "lock.json"); fileExists(lk) {
		b, err := os.ReadFile(lk)
		if err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(compiler.LockPath(path), b, 0o644); err != nil {
			return nil, nil, err
		}
	}
	var ovs []compiler.Override
	for _, t := range m.Overrides {
		o, err := compiler.ParseOverride(t)
		if err != nil {
			return nil, nil, fmt.Errorf("fetch: the manifest's override %q: %w", t, err)
		}
		ovs = append(ovs, o)
	}
	s, err := load(path, append(append(ovs, moved...), extra...))
	if err != nil {
		return nil, nil, fmt.Errorf("fetch: the published recipe does not load with this nel: %w", err)
	}
	h, _, err := compiler.ComputeHashes(s)
	if err != nil {
		return nil, nil, err
	}
	if h.Recipe != hash {
		// The usual cause is a nel that scores differently: say so.
		if c, err := os.ReadFile(filepath.Join(dest, "canonical.json")); err == nil {
			if sm := scoringVersionRE.FindSubmatch(c); sm != nil && string(sm[1]) != compiler.ScoringVersion {
				return nil, nil, fmt.Errorf("fetch: %s was published with nel scoring version %s; this nel (%s) scores with version %s, so its hash differs (%s): reproduce it with a nel of scoring version %s (the manifest says nel %s)",
					hash, sm[1], version, compiler.ScoringVersion, h.Recipe, sm[1], m.NelVersion)
			}
		}
		return nil, nil, fmt.Errorf("fetch: the recipe fetched for %s hashes to %s: the store's recipe is not the published one (refused)", hash, h.Recipe)
	}
	return s, m, nil
}

const reproduceHelp = `Reproduces a published number from its recipe hash alone: fetches the
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
folder holding your copy, e.g. when it was published with --no-data).

Exit status: REPRODUCED 0, DIFFERENT 1, INCONCLUSIVE 2, and 3 when it could
not be reproduced at all (store unreachable, unknown hash, a file that
fails its check, a run that failed, an INVALID benchmark); 2 also for a
usage error.`

func cmdReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// Verdicts and usage errors carry their own status; anything else
	// (a store down, a file failing its check, a recipe that does not load,
	// a run that failed) means it could not be reproduced at all: 3.
	err := reproduceCmd(ctx, args, stdout, stderr)
	var ee *exitError
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.As(err, &ee) {
		return err
	}
	return &exitError{3, err}
}

func reproduceCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reproduce", "sha256:HASH --store PATH|URL [--model-url URL | -t slurm | --run DIR] [-o DIR]", reproduceHelp, stderr)
	storeF := fs.String("store", "", "the store: a directory or an http(s) URL (required)")
	modelURL := fs.String("model-url", "", "run against this OpenAI-compatible base `URL` instead of the recipe's services")
	service := fs.String("service", "", "with --model-url: the one service to point there (default every solver service)")
	keyEnv := fs.String("api-key-env", "", "with --model-url: the environment variable holding the endpoint's API key (sent as a bearer token; default: the service's own api_key reference)")
	target := fs.String("t", "", "slurm: print the sbatch script instead of running here")
	runF := fs.String("run", "", "compare this finished run `DIR` instead of running")
	runID := fs.String("run-id", "", "the published run to compare with (default the newest)")
	outF := fs.String("o", "", "working directory (default ./reproduce-<12 hex digits>)")
	margin := fs.Float64("margin", reproduce.DefaultOptions().Margin, "largest difference (absolute reward) that still counts as the same result")
	format := fs.String("f", "text", "output: text, markdown or json")
	tokenEnv := fs.String("token-env", "NEL_STORE_TOKEN", "environment variable holding a bearer token for an http(s) store")
	verbose := fs.Bool("v", false, "log what each shard does")
	var dataDirs stringList
	fs.Var(&dataDirs, "data", "a `DIR` holding copies of the recipe's local data, found by digest (repeatable)")
	argv, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(argv) != 1 || *storeF == "" {
		fs.Usage()
		return &exitError{2, errors.New("reproduce: expected sha256:HASH and --store")}
	}
	if *target != "" && *target != "slurm" {
		return &exitError{2, fmt.Errorf("reproduce: -t %q: only slurm", *target)}
	}
	if *format != "text" && *format != "markdown" && *format != "json" {
		return &exitError{2, fmt.Errorf("reproduce: -f %q: expected text, markdown or json", *format)}
	}
	if *margin <= 0 || *margin >= 1 {
		return &exitError{2, fmt.Errorf("reproduce: --margin %v: want a difference between 0 and 1", *margin)}
	}
	n := 0
	for _, set := range []bool{*modelURL != "", *target != "", *runF != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return &exitError{2, errors.New("reproduce: --model-url, -t slurm and --run exclude each other")}
	}
	hash, hex, err := parseRecipeHash(argv[0])
	if err != nil {
		return err
	}
	work := *outF
	if work == "" {
		work = "reproduce-" + hex[:12]
	}
	st, err := store.Open(*storeF, store.Options{TokenEnv: *tokenEnv})
	if err != nil {
		return &exitError{2, fmt.Errorf("reproduce: %w", err)}
	}
	newDir := filepath.Join(work, "new")
	if *runF != "" {
		newDir = *runF
	}
	extra := []compiler.Override{{Text: "-o " + newDir, Path: []string{"output", "dir"}, Value: newDir}}
	s, _, err := fetchVerified(ctx, st, hash, work, dataDirs, extra, stderr)
	if err != nil {
		return err
	}
	// The published run: without it there is nothing to compare.
	pubDir := filepath.Join(work, "published")
	pm, err := store.FetchResults(ctx, st, hash, *runID, pubDir)
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	fmt.Fprintf(stderr, "nel: recipe %s verified; published run %s\n", hash, pm.RunID)

	switch {
	case *target == "slurm":
		path, sum, err := locateNelRun("")
		if err != nil {
			return err
		}
		out, err := compiler.Compile(s, compiler.CompileOptions{Target: "slurm", NelVersion: version, NelRun: path, NelRunSHA256: sum,
			Reproduce: shellJoin([]string{"nel", "reproduce", hash, "--store", *storeF, "-t", "slurm", "-o", work})})
		if err != nil {
			return err
		}
		if _, err := stdout.Write(out); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "nel: when the job is done: nel reproduce %s --store %s -o %s --run %s\n", hash, *storeF, work, s.Recipe.Output.Dir)
		return nil
	case *runF == "":
		if *modelURL != "" {
			names := compiler.SolverServices(s)
			if *service != "" {
				names = []string{*service}
			}
			for _, name := range names {
				if err := compiler.UseEndpoint(s, name, *modelURL, *keyEnv); err != nil {
					return &exitError{2, fmt.Errorf("reproduce: --model-url: %w", err)}
				}
			}
		}
		if _, err := runSource(ctx, s, runOptions{Verbose: *verbose, Title: "reproduce " + hash[:19]}, stderr, stderr); err != nil {
			return err
		}
	}

	opts := reproduce.DefaultOptions()
	opts.Margin = *margin
	rep, err := reproduce.Compare(pubDir, newDir, opts)
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	var buf bytes.Buffer
	switch *format {
	case "json":
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	case "markdown":
		err = rep.Markdown(&buf)
	default:
		err = rep.Text(&buf)
	}
	if err != nil {
		return err
	}
	if _, err := buf.WriteTo(stdout); err != nil {
		return err
	}
	if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(work, "reproduce.json"), append(b, '\n'), 0o644)
	}
	if code := rep.ExitCode(); code != 0 {
		if rep.Verdict == reproduce.Invalid {
			return &exitError{code, fmt.Errorf("reproduce: INVALID: %s", strings.Join(rep.Reasons, "; "))}
		}
		return &exitError{code, fmt.Errorf("reproduce: %s", strings.ToUpper(rep.Verdict))}
	}
	return nil
}
