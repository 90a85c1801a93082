// Package compare pairs two runs of the same benchmark methodology (a
// baseline and a candidate, usually different models) item by item and
// says whether the candidate regressed: deltas with paired intervals,
// flips, an exact test, the minimum detectable effect and a PASS / WARN /
// BLOCK / INCONCLUSIVE verdict. nel gate builds on the same runs and
// pairing.
package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nel-eval/nel/analysis/nemorun"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// Run is one benchmark's results on one side of a comparison.
type Run struct {
	// Name is what runs are matched by: the bundle's Name, else the
	// results file's benchmark key.
	Name string
	// Path is the file or directory the run was read from.
	Path string
	// Bundle is eval.json; nil when the run has only results.parquet.
	Bundle *metrics.Bundle
	// Rows are results.parquet's rows; nil when there is no results file
	// (compare then has nothing to pair).
	Rows []results.Row
	Meta map[string]string
	// Trajectories is the path of trajectories.parquet, "" when absent.
	Trajectories string
	// Source is "" for a nel run, nemorun.Source for a NeMo Evaluator
	// run read by package nemorun.
	Source string
	// PairedBy says how a NeMo Evaluator run's rows were matched with the
	// other side's items (AlignSources); "" for a nel run.
	PairedBy string
}

// IsNeMo is true when the run is a NeMo Evaluator run.
func (r *Run) IsNeMo() bool { return r.Source != "" }

// BenchmarkHash is the run's benchmark hash: the bundle's, else the
// results file's metadata.
func (r *Run) BenchmarkHash() string {
	if r.Bundle != nil && r.Bundle.Provenance.BenchmarkHash != "" {
		return r.Bundle.Provenance.BenchmarkHash
	}
	return r.Meta[results.MetaBenchmarkHash]
}

// ScoringVersion is the nel scoring version that scored the run.
func (r *Run) ScoringVersion() string {
	if r.Bundle != nil && r.Bundle.Provenance.ScoringVersion != "" {
		return r.Bundle.Provenance.ScoringVersion
	}
	return r.Meta[results.MetaScoring]
}

// DatasetDigest is the digest of the data the run read.
func (r *Run) DatasetDigest() string {
	if r.Bundle != nil && r.Bundle.Provenance.DatasetDigest != "" {
		return r.Bundle.Provenance.DatasetDigest
	}
	return r.Meta[results.MetaDataset]
}

// Model is the evaluated model's id.
func (r *Run) Model() string {
	if r.Bundle != nil && r.Bundle.Provenance.Model != "" {
		return r.Bundle.Provenance.Model
	}
	return r.Meta[results.MetaModel]
}

// RecipeHash is the recipe hash of the run.
func (r *Run) RecipeHash() string {
	if r.Bundle != nil && r.Bundle.Provenance.RecipeHash != "" {
		return r.Bundle.Provenance.RecipeHash
	}
	return r.Meta[results.MetaRecipeHash]
}

// Simulated is true when the answers came from nel's simulated endpoint.
func (r *Run) Simulated() bool {
	if r.Bundle != nil && r.Bundle.Provenance.Simulated {
		return true
	}
	return r.Meta[results.MetaSimulated] == "true"
}

// Validity is the run's validity: its bundle's (against the plan's
// max_error_rate), else its rows' against the default max_error_rate.
func (r *Run) Validity() metrics.Validity {
	if r.Bundle != nil {
		return r.Bundle.Validity
	}
	return metrics.ValidityOf(r.Rows)
}

// InvalidReason says why a run is INVALID, naming it by role ("the
// baseline's gsm8k is INVALID: 6 of 100 samples …"); "" when it is valid.
func (r *Run) InvalidReason(role string) string {
	v := r.Validity()
	if !v.Invalid {
		return ""
	}
	return fmt.Sprintf("%s's %s is INVALID: %s", role, r.Name, v.Reason)
}

// Side is what one command-line argument resolved to.
type Side struct {
	Path string
	// Runs, sorted by name. One run and Multi false: single mode.
	Runs []*Run
	// Multi is true when the argument is a run directory whose
	// benchmarks are matched by name with the other side's.
	Multi bool
}

// UsageError is an input the command refuses (exit 2): a path that holds
// no run, two runs that cannot be compared.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func refuse(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Resolve reads what path names, following NeMo Evaluator's rules adapted
// to nel's layout:
//
//   - a file: an eval.json bundle (any .json) or a results.parquet; its
//     siblings (results.parquet, trajectories.parquet, eval.json) are read
//     with it;
//   - a directory holding eval.json or results.parquet: that benchmark
//     (single mode);
//   - otherwise its sub-directories holding one: exactly one → single
//     mode, several → multi mode (a run directory), none → an error.
func Resolve(path string) (*Side, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, refuse("%s: no such file or directory", path)
		}
		return nil, err
	}
	if !fi.IsDir() {
		if nemorun.IsBundleFile(filepath.Base(path)) {
			return resolveNeMo(path)
		}
		r, err := readRun(filepath.Dir(path), path)
		if err != nil {
			return nil, err
		}
		return &Side{Path: path, Runs: []*Run{r}}, nil
	}
	if isBenchDir(path) {
		r, err := readRun(path, "")
		if err != nil {
			return nil, err
		}
		return &Side{Path: path, Runs: []*Run{r}}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() && isBenchDir(filepath.Join(path, e.Name())) {
			dirs = append(dirs, filepath.Join(path, e.Name()))
		}
	}
	if len(dirs) == 0 {
		if nemorun.Is(path) {
			return resolveNeMo(path)
		}
		return nil, refuse("%s: no run found: expected %s or %s (a nel run) in it or in its sub-directories (<out>/<benchmark>/), or eval-*.json (a NeMo Evaluator run) in it, in its sub-directories or in shard_*/", path, rundir.BundleFile, rundir.ResultsFile)
	}
	s := &Side{Path: path, Multi: len(dirs) > 1}
	seen := map[string]string{}
	for _, d := range dirs {
		r, err := readRun(d, "")
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[r.Name]; ok {
			return nil, refuse("%s: benchmark %q appears twice, in %s and %s", path, r.Name, prev, d)
		}
		seen[r.Name] = d
		s.Runs = append(s.Runs, r)
	}
	slices.SortFunc(s.Runs, func(a, b *Run) int { return strings.Compare(a.Name, b.Name) })
	return s, nil
}

func isBenchDir(dir string) bool {
	b := rundir.Bench(dir)
	for _, f := range []string{b.Bundle(), b.Results()} {
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

// readRun reads a benchmark directory; file, when set, is the file the
// user named in it.
func readRun(dir, file string) (*Run, error) {
	r := &Run{Path: dir}
	b := rundir.Bench(dir)
	bundle, res := b.Bundle(), b.Results()
	if file != "" {
		r.Path = file
		switch {
		case strings.HasSuffix(file, ".json"):
			bundle = file
		case strings.HasSuffix(file, ".parquet"):
			res = file
			bundle = b.Bundle()
		default:
			return nil, refuse("%s: expected an %s bundle, a %s or a directory", file, rundir.BundleFile, rundir.ResultsFile)
		}
	}
	if exists(bundle) {
		b, err := metrics.ReadFile(bundle)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", bundle, err)
		}
		r.Bundle = b
	} else if file != "" && strings.HasSuffix(file, ".json") {
		return nil, refuse("%s: no such file", file)
	}
	if exists(res) {
		rows, meta, err := results.ReadRows(res)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", res, err)
		}
		r.Rows, r.Meta = rows, meta
		if t := rundir.Bench(filepath.Dir(res)).Trajectories(); exists(t) {
			r.Trajectories = t
		}
	}
	if r.Meta == nil {
		r.Meta = map[string]string{}
	}
	switch {
	case r.Bundle != nil && r.Bundle.Name != "":
		r.Name = r.Bundle.Name
	case r.Meta[results.MetaBenchmark] != "":
		r.Name = r.Meta[results.MetaBenchmark]
	case len(r.Rows) > 0 && r.Rows[0].Benchmark != "":
		r.Name = r.Rows[0].Benchmark
	default:
		r.Name = filepath.Base(dir)
	}
	return r, nil
}

func exists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// Pair is one benchmark found on both sides.
type Pair struct {
	Name      string
	Base      *Run
	Candidate *Run
	// Notes are what AlignSources says of the pair: a side that is a NeMo
	// Evaluator run, rows it could not pair.
	Notes []string
	// Unpaired, when set, says why the pair's items cannot be matched
	// (AlignSources): Compare then compares the headlines unpaired.
	Unpaired string
}

// Match pairs two sides' runs. In single mode (both sides one run) the
// runs pair whatever their names; otherwise by name, and benchmarks found
// on one side only are returned as warnings.
func Match(base, cand *Side) ([]Pair, []string) {
	if !base.Multi && !cand.Multi {
		b, c := base.Runs[0], cand.Runs[0]
		var warn []string
		if b.Name != c.Name {
			warn = append(warn, fmt.Sprintf("comparing benchmark %q (baseline) with %q (candidate)", b.Name, c.Name))
		}
		return []Pair{{Name: c.Name, Base: b, Candidate: c}}, warn
	}
	byName := map[string]*Run{}
	for _, r := range cand.Runs {
		byName[r.Name] = r
	}
	var pairs []Pair
	var warn []string
	for _, b := range base.Runs {
		c, ok := byName[b.Name]
		if !ok {
			warn = append(warn, fmt.Sprintf("benchmark %s is in the baseline only (%s)", b.Name, b.Path))
			continue
		}
		pairs = append(pairs, Pair{Name: b.Name, Base: b, Candidate: c})
		delete(byName, b.Name)
	}
	for _, c := range cand.Runs {
		if _, ok := byName[c.Name]; ok {
			warn = append(warn, fmt.Sprintf("benchmark %s is in the candidate only (%s)", c.Name, c.Path))
		}
	}
	return pairs, warn
}
