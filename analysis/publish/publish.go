// Package publish moves runs and recipes between a run directory and a
// recipe store: nel publish puts a finished run and the recipe it ran in a
// store; nel fetch (and nel reproduce) take a recipe back out, every file
// checked and the recipe's hash verified. The store's layout and transport
// are package store's; this package decides what goes in and checks what
// comes out.
package publish

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
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/local"
	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/rundir"
)

// Options say what to publish where (nel publish).
type Options struct {
	Dir   string // the run's output directory
	Store string // a directory or an http(s) URL
	// Recipe is the recipe file the run ran, loaded with Overrides; ""
	// takes the copy nel run kept in Dir/.nel/.
	Recipe         string
	Overrides      []compiler.Override
	Print          bool   // list the files and where they go; write nothing
	NoTrajectories bool   // leave trajectories.parquet out
	NoData         bool   // leave the recipe's local data files out
	TokenEnv       string // the variable holding an http(s) store's bearer token
	NelVersion     string
}

// entry is one manifest and its files (entry path → local path).
type entry struct {
	m     store.Manifest
	files map[string]string
}

// Publish puts the run in o.Dir and its recipe in o.Store, and records
// where in the run folder (rundir.Dir.Published). What it wrote (or, with Print, what
// to upload) goes to stdout.
func Publish(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	run, err := readRunDir(o.Dir)
	if err != nil {
		return exitcode.New(exitcode.Usage, fmt.Errorf("publish: %w", err))
	}
	tmp, err := os.MkdirTemp("", "nel-publish-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	recipe, hash, err := recipeEntry(o, run, tmp)
	if err != nil {
		return err
	}
	results, err := resultsEntry(o, run, hash, tmp)
	if err != nil {
		return err
	}
	if o.Print {
		return printUploads(o.Store, []entry{recipe, results}, stdout, stderr)
	}
	st, err := store.Open(o.Store, store.Options{TokenEnv: o.TokenEnv})
	if err != nil {
		return exitcode.New(exitcode.Usage, fmt.Errorf("publish: %w", err))
	}
	r1, err := store.Publish(ctx, st, recipe.m, recipe.files)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	r2, err := store.Publish(ctx, st, results.m, results.files)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	loc := strings.TrimRight(st.Location(), "/")
	hex, runID := strings.TrimPrefix(hash, "sha256:"), results.m.RunID
	fmt.Fprintf(stdout, "recipe %s → %s/recipes/%s/%s\n", hash, loc, hex, already(r1.AlreadyPublished))
	fmt.Fprintf(stdout, "run %s → %s/results/%s/%s/%s\n", runID, loc, hex, runID, already(r2.AlreadyPublished))
	fmt.Fprintf(stdout, "reproduce: nel reproduce %s --store %s\n", hash, loc)
	pub := map[string]string{"store": loc, "recipe_hash": hash, "run_id": runID,
		"url": loc + "/results/" + hex + "/" + runID + "/"}
	b, _ := json.MarshalIndent(pub, "", "  ")
	if err := atomicfile.WriteFile(rundir.Dir(o.Dir).Published(), append(b, '\n')); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

func already(yes bool) string {
	if yes {
		return " (already there)"
	}
	return ""
}

// recipeEntry is the recipe's entry: the recipe as written, its canonical
// JSON (in tmp), its lock and its local data. It refuses a recipe that
// does not hash to the run's recipe hash, and returns that hash.
func recipeEntry(o Options, run *runDir, tmp string) (entry, string, error) {
	s, recipeFile, lockPath, err := publishedRecipe(o.Dir, o.Recipe, o.Overrides)
	if err != nil {
		return entry{}, "", err
	}
	if parts := s.ComposedFrom(); len(parts) > 0 {
		return entry{}, "", exitcode.Usagef("publish: %s: not supported yet: publishing a recipe composed from other files (%s); the store keeps the recipe as one file, so write it out as one", s.Path, strings.Join(parts, ", "))
	}
	h, ex, err := compiler.ComputeHashes(s)
	if err != nil {
		return entry{}, "", err
	}
	if h.Recipe != run.recipeHash {
		return entry{}, "", exitcode.Usagef("publish: the recipe %s hashes to %s, but the run in %s has recipe %s: pass the recipe as it was run (--recipe FILE and its -O overrides)", s.Path, h.Recipe, o.Dir, run.recipeHash)
	}
	canon := filepath.Join(tmp, "canonical.json")
	if err := os.WriteFile(canon, ex.Recipe, 0o644); err != nil {
		return entry{}, "", err
	}
	files := map[string]string{
		"recipe/" + filepath.Base(s.Path): recipeFile,
		"canonical.json":                  canon,
	}
	if lockPath != "" {
		files["lock.json"] = lockPath
	}
	data, err := publishedData(s, !o.NoData, files)
	if err != nil {
		return entry{}, "", exitcode.New(exitcode.Usage, fmt.Errorf("publish: %w", err))
	}
	var overrides []string
	for _, ov := range s.Overrides {
		if !slices.Equal(ov.Path, []string{"output", "dir"}) {
			overrides = append(overrides, ov.Text)
		}
	}
	m := store.Manifest{ManifestVersion: store.ManifestVersion, Kind: "recipe", RecipeHash: h.Recipe,
		NelVersion: o.NelVersion, Recipe: "recipe/" + filepath.Base(s.Path), Overrides: overrides, Data: data}
	return entry{m, files}, h.Recipe, nil
}

// resultsEntry is the run's entry: each benchmark's bundle and Parquet
// files, the reports, the plan, and a model card (written in tmp) that
// links the run where it is being published.
func resultsEntry(o Options, run *runDir, hash, tmp string) (entry, error) {
	runID := store.RunID(run.started, run.planHash)
	files := map[string]string{}
	for _, b := range run.benches {
		for _, name := range []string{rundir.BundleFile, rundir.ResultsFile, rundir.TrajectoriesFile} {
			if name == rundir.TrajectoriesFile && o.NoTrajectories {
				continue
			}
			if p := filepath.Join(o.Dir, b, name); fileExists(p) {
				files[b+"/"+name] = p
			}
		}
	}
	out := rundir.Dir(o.Dir)
	for _, ext := range []string{"md", "html"} {
		if p := out.Report(ext); fileExists(p) {
			files[rundir.ReportFile(ext)] = p
		}
	}
	if p := out.Plan(run.planHash); fileExists(p) {
		files["plan.json"] = p
	}
	var card bytes.Buffer
	if err := nelreport.Render(&card, run.suite, nelreport.ModelCard, nelreport.Options{
		ModelCard: nelreport.ModelCardOptions{Store: strings.TrimRight(o.Store, "/"), RunID: runID, RecipeHash: hash}}); err != nil {
		return entry{}, fmt.Errorf("publish: model card: %w", err)
	}
	cardPath := filepath.Join(tmp, "model-card.md")
	if err := os.WriteFile(cardPath, card.Bytes(), 0o644); err != nil {
		return entry{}, err
	}
	files["model-card.md"] = cardPath
	m := store.Manifest{ManifestVersion: store.ManifestVersion, Kind: "results", RecipeHash: hash,
		RunID: runID, NelVersion: o.NelVersion}
	return entry{m, files}, nil
}

// printUploads lists each file to upload, its place in the store and its
// sha256 (--print), for a store that takes no PUT.
func printUploads(storeLoc string, entries []entry, stdout, stderr io.Writer) error {
	for _, e := range entries {
		_, ups, err := store.Prepare(e.m, e.files)
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		for _, u := range ups {
			fmt.Fprintf(stdout, "%s/%s\t%s\t%s\n", strings.TrimRight(storeLoc, "/"), u.Path, u.Local, u.SHA256)
		}
	}
	results := entries[len(entries)-1].m
	fmt.Fprintf(stderr, "nel: upload these files (the manifests last), then add run %s to results/%s/runs.json\n",
		results.RunID, strings.TrimPrefix(results.RecipeHash, "sha256:"))
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
		p := rundir.Dir(dir).Benchmark(e.Name()).Bundle()
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
		return nil, fmt.Errorf("%s holds no merged benchmark (no <benchmark>/%s): finish and merge the run first", dir, rundir.BundleFile)
	}
	if r.recipeHash == "" || r.planHash == "" {
		return nil, fmt.Errorf("%s: its results carry no recipe or plan hash", dir)
	}
	return r, nil
}

// publishedRecipe loads the recipe a run ran: recipe (with ovs), else the
// copy nel run kept in dir/.nel/. It returns the recipe, the local file
// holding its text, and its lock file ("" when unlocked).
func publishedRecipe(dir, recipe string, ovs []compiler.Override) (*compiler.Source, string, string, error) {
	if recipe != "" {
		s, err := load(recipe, ovs)
		if err != nil {
			return nil, "", "", err
		}
		return s, recipe, s.LockFile, nil
	}
	s, copyPath, lockPath, err := local.LoadRecorded(rundir.Dir(dir))
	if errors.Is(err, local.ErrNoSource) {
		return nil, "", "", exitcode.Usagef("publish: %s has no %s (a SLURM run?): pass the recipe with --recipe FILE", dir, relTo(dir, rundir.Dir(dir).Source()))
	}
	if err != nil {
		return nil, "", "", err
	}
	return s, copyPath, lockPath, nil
}

func load(path string, ovs []compiler.Override) (*compiler.Source, error) {
	l, err := compiler.NewLoader()
	if err != nil {
		return nil, err
	}
	return l.LoadFile(path, ovs)
}

// relTo is path relative to dir, for a message that names a file of a
// run folder as the folder's own (.nel/source.json).
func relTo(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
