package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	nelreport "github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/analysis/store"
	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/metrics"
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

func cmdPublish(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var ovs overrides
	fs := newFlags("publish", "DIR --store PATH|URL [--recipe FILE [-O path=value]...] [--print]", publishHelp, stderr)
	storeF := fs.String("store", "", "the store: a directory or an http(s) URL (required)")
	recipeF := fs.String("recipe", "", "the recipe `FILE` the run ran (default: the copy in DIR/.nel/)")
	fs.Var(&ovs, "O", "with --recipe: an override the run was loaded with (repeatable)")
	printF := fs.Bool("print", false, "print the files to upload and where they go; write nothing")
	noTraj := fs.Bool("no-trajectories", false, "leave trajectories.parquet out (full prompts and responses)")
	noData := fs.Bool("no-data", false, "leave out the local data files the recipe references (reproducers then bring their own copy, found by its digest)")
	tokenEnv := fs.String("token-env", "NEL_STORE_TOKEN", "environment variable holding a bearer token for an http(s) store")
	dirs, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(dirs) != 1 || *storeF == "" {
		fs.Usage()
		return &exitError{2, errors.New("publish: expected DIR and --store")}
	}
	dir := dirs[0]
	run, err := readRunDir(dir)
	if err != nil {
		return &exitError{2, fmt.Errorf("publish: %w", err)}
	}
	s, recipeFile, lockPath, err := publishedRecipe(dir, *recipeF, ovs)
	if err != nil {
		return err
	}
	h, ex, err := compiler.ComputeHashes(s)
	if err != nil {
		return err
	}
	if h.Recipe != run.recipeHash {
		return &exitError{2, fmt.Errorf("publish: the recipe %s hashes to %s, but the run in %s has recipe %s: pass the recipe as it was run (--recipe FILE and its -O overrides)", s.Path, h.Recipe, dir, run.recipeHash)}
	}
	hex := strings.TrimPrefix(h.Recipe, "sha256:")

	tmp, err := os.MkdirTemp("", "nel-publish-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	canon := filepath.Join(tmp, "canonical.json")
	if err := os.WriteFile(canon, ex.Recipe, 0o644); err != nil {
		return err
	}

	recipeFiles := map[string]string{
		"recipe/" + filepath.Base(s.Path): recipeFile,
		"canonical.json":                  canon,
	}
	if lockPath != "" {
		recipeFiles["lock.json"] = lockPath
	}
	data, err := publishedData(s, !*noData, recipeFiles)
	if err != nil {
		return &exitError{2, fmt.Errorf("publish: %w", err)}
	}
	var overrides []string
	for _, o := range s.Overrides {
		if !slices.Equal(o.Path, []string{"output", "dir"}) {
			overrides = append(overrides, o.Text)
		}
	}
	rm := store.Manifest{ManifestVersion: store.ManifestVersion, Kind: "recipe", RecipeHash: h.Recipe,
		NelVersion: version, Recipe: "recipe/" + filepath.Base(s.Path), Overrides: overrides, Data: data}

	runID := store.RunID(run.started, run.planHash)
	resultFiles := map[string]string{}
	for _, b := range run.benches {
		for _, name := range []string{metrics.FileName, "results.parquet", "trajectories.parquet"} {
			if name == "trajectories.parquet" && *noTraj {
				continue
			}
			p := filepath.Join(dir, b, name)
			if _, err := os.Stat(p); err == nil {
				resultFiles[b+"/"+name] = p
			}
		}
	}
	for _, name := range []string{"report.md", "report.html"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			resultFiles[name] = p
		}
	}
	if p := filepath.Join(dir, ".nel", "plan-"+strings.TrimPrefix(run.planHash, "sha256:")[:12]+".json"); fileExists(p) {
		resultFiles["plan.json"] = p
	}
	// The model card, linking the run where it is being published.
	var card bytes.Buffer
	if err := nelreport.Render(&card, run.suite, nelreport.ModelCard, nelreport.Options{
		ModelCard: nelreport.ModelCardOptions{Store: strings.TrimRight(*storeF, "/"), RunID: runID, RecipeHash: h.Recipe}}); err != nil {
		return fmt.Errorf("publish: model card: %w", err)
	}
	cardPath := filepath.Join(tmp, "model-card.md")
	if err := os.WriteFile(cardPath, card.Bytes(), 0o644); err != nil {
		return err
	}
	resultFiles["model-card.md"] = cardPath
	resm := store.Manifest{ManifestVersion: store.ManifestVersion, Kind: "results", RecipeHash: h.Recipe,
		RunID: runID, NelVersion: version}

	if *printF {
		for _, e := range []struct {
			m     store.Manifest
			files map[string]string
			base  string
		}{{rm, recipeFiles, "recipes/" + hex}, {resm, resultFiles, "results/" + hex + "/" + runID}} {
			_, ups, err := store.Prepare(e.m, e.files)
			if err != nil {
				return fmt.Errorf("publish: %w", err)
			}
			for _, u := range ups {
				fmt.Fprintf(stdout, "%s/%s\t%s\t%s\n", strings.TrimRight(*storeF, "/"), u.Path, u.Local, u.SHA256)
			}
		}
		fmt.Fprintf(stderr, "nel: upload these files (the manifests last), then add run %s to results/%s/runs.json\n", runID, hex)
		return nil
	}

	st, err := store.Open(*storeF, store.Options{TokenEnv: *tokenEnv})
	if err != nil {
		return &exitError{2, fmt.Errorf("publish: %w", err)}
	}
	r1, err := store.Publish(ctx, st, rm, recipeFiles)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	r2, err := store.Publish(ctx, st, resm, resultFiles)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	loc := strings.TrimRight(st.Location(), "/")
	say := func(already bool) string {
		if already {
			return " (already there)"
		}
		return ""
	}
	fmt.Fprintf(stdout, "recipe %s → %s/recipes/%s/%s\n", h.Recipe, loc, hex, say(r1.AlreadyPublished))
	fmt.Fprintf(stdout, "run %s → %s/results/%s/%s/%s\n", runID, loc, hex, runID, say(r2.AlreadyPublished))
	fmt.Fprintf(stdout, "reproduce: nel reproduce %s --store %s\n", h.Recipe, loc)
	pub := map[string]string{"store": loc, "recipe_hash": h.Recipe, "run_id": runID,
		"url": loc + "/results/" + hex + "/" + runID + "/"}
	b, _ := json.MarshalIndent(pub, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(dir, ".nel", "published.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// runDir is what publish reads of a run directory.
type runDir struct {
	recipeHash, planHash string
	started              time.Time
	benches              []string // benchmark directories holding eval.json
	suite                []*metrics.Bundle
}

func readRunDir(dir string) (*runDir, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	r := &runDir{}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name(), metrics.FileName)
		if !fileExists(p) {
			continue
		}
		b, err := metrics.ReadFile(p)
		if err != nil {
			return nil, err
		}
		pv := b.Provenance
		switch {
		case r.recipeHash == "":
			r.recipeHash, r.planHash = pv.RecipeHash, pv.PlanHash
		case pv.RecipeHash != r.recipeHash || pv.PlanHash != r.planHash:
			return nil, fmt.Errorf("%s: its benchmarks come from different runs (%s has recipe %s, plan %s; others %s, %s)", dir, e.Name(), pv.RecipeHash, pv.PlanHash, r.recipeHash, r.planHash)
		}
		if t, err := time.Parse(time.RFC3339, pv.StartedAt); err == nil && (r.started.IsZero() || t.Before(r.started)) {
			r.started = t
		}
		r.benches = append(r.benches, e.Name())
		r.suite = append(r.suite, b)
	}
	if len(r.benches) == 0 {
		return nil, fmt.Errorf("%s holds no merged benchmark (no <benchmark>/%s): finish and merge the run first", dir, metrics.FileName)
	}
	if r.recipeHash == "" || r.planHash == "" {
		return nil, fmt.Errorf("%s: its results carry no recipe or plan hash", dir)
	}
	return r, nil
}

// publishedRecipe loads the recipe a run ran: --recipe FILE, else the
// copy nel run kept in DIR/.nel/. It returns the recipe, the local file
// holding its text, and its lock file ("" when unlocked).
func publishedRecipe(dir, recipe string, ovs overrides) (*compiler.Source, string, string, error) {
	if recipe != "" {
		s, err := load(recipe, ovs)
		if err != nil {
			return nil, "", "", err
		}
		return s, recipe, s.LockFile, nil
	}
	sf, err := readSource(dir)
	if err != nil {
		return nil, "", "", err
	}
	if sf == nil {
		return nil, "", "", &exitError{2, fmt.Errorf("publish: %s has no .nel/%s (a SLURM run?): pass the recipe with --recipe FILE", dir, sourceName)}
	}
	copyPath := filepath.Join(dir, ".nel", "recipe", sf.File)
	src, err := os.ReadFile(copyPath)
	if err != nil {
		return nil, "", "", fmt.Errorf("publish: %w", err)
	}
	var os2 []compiler.Override
	for _, t := range sf.Overrides {
		o, err := compiler.ParseOverride(t)
		if err != nil {
			return nil, "", "", err
		}
		os2 = append(os2, o)
	}
	l, err := compiler.NewLoader()
	if err != nil {
		return nil, "", "", err
	}
	// Named by its original path, so its relative paths resolve where the
	// run read them.
	s, err := l.Load(filepath.Join(sf.RecipeDir, sf.File), src, os2)
	if err != nil {
		return nil, "", "", err
	}
	lockPath := ""
	if sf.Lock != "" {
		lockPath = filepath.Join(dir, ".nel", "recipe", sf.Lock)
		lk, err := compiler.ReadLock(lockPath)
		if err != nil {
			return nil, "", "", err
		}
		if err := s.ApplyLock(lk, lockPath); err != nil {
			return nil, "", "", err
		}
	}
	return s, copyPath, lockPath, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
