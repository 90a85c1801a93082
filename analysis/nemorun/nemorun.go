// Package nemorun reads NeMo Evaluator's result directories into nel's
// in-memory form (rows keyed by item and repeat, a bundle computed by nel's
// statistics), so that nel report, compare and gate can set a team's last
// NeMo run beside its first nel run.
//
// A NeMo run is recognised by its layout (NeMo Evaluator's local run
// layout; nel writes none of these names):
//
//	out/                          a run: one folder per benchmark
//	├── gsm8k/                    a benchmark's folder
//	│   ├── eval-20260402T120000Z-gsm8k.json   the bundle (benchmark.name, config, config_hash)
//	│   └── results.jsonl         one row per (problem_idx, repeat)
//	└── shard_0/ … shard_<N-1>/   a sharded run before `nel eval merge`: each a run as above
//
// Nothing here is a nel run: there is no recipe hash, benchmark hash or
// dataset digest. The run's ConfigHash is NeMo's config_hash (model,
// benchmark, repeats, max_problems, shuffle seed), which is why the
// bundle's recipe hash reads "nemo-config:sha256:…" — never a nel recipe
// hash — and why every bundle carries a note saying where it came from.
package nemorun

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
)

// Source is what a NeMo run's outputs call their origin.
const Source = "NeMo Evaluator"

// HashPrefix marks a recipe hash that is NeMo's config_hash.
const HashPrefix = "nemo-config:"

// The names of NeMo Evaluator's run layout.
const (
	resultsFile  = "results.jsonl"
	bundlePrefix = "eval-"
	shardPrefix  = "shard_"
)

// Run is one benchmark of a NeMo Evaluator run.
type Run struct {
	// Name is the bundle's benchmark.name.
	Name string
	// Path is the benchmark folder (or, for a sharded run, the run
	// folder's shard_* set) the run was read from.
	Path string
	// ConfigHash is NeMo's config_hash ("sha256:…"), "" when absent.
	ConfigHash string
	Model      string
	SDKVersion string
	Repeats    int
	// Shards is the number of shard_* folders merged here; 0 when the run
	// was not sharded (or was merged by NeMo).
	Shards int
	// Rows are results.jsonl's rows: ItemID "nemo:<problem_idx>" (Pair
	// maps it to a nel content id), ItemIdx problem_idx (the original
	// dataset index), sorted by item then repeat.
	Rows []results.Row
	// Meta is the rows' metadata in nel's keys (benchmark, model, recipe
	// hash "nemo-config:sha256:…").
	Meta map[string]string
	// Bundle is nel's statistics of Rows, with notes that say it is a NeMo
	// run and what NeMo's own bundle reported.
	Bundle *metrics.Bundle
}

// bundleFile is the part of NeMo's eval-*.json that nel reads.
type bundleFile struct {
	RunID      string `json:"run_id"`
	ConfigHash string `json:"config_hash"`
	SDKVersion string `json:"sdk_version"`
	Config     struct {
		Benchmark string `json:"benchmark"`
		Model     string `json:"model"`
		Repeats   int    `json:"repeats"`
		Shard     *struct {
			Idx   int `json:"idx"`
			Total int `json:"total"`
		} `json:"shard"`
	} `json:"config"`
	Benchmark struct {
		Name    string                     `json:"name"`
		Samples int                        `json:"samples"`
		Repeats int                        `json:"repeats"`
		Scores  map[string]json.RawMessage `json:"scores"`
	} `json:"benchmark"`
	NResults int `json:"n_results"`
}

// IsBundleFile reports whether name is NeMo's bundle name, eval-*.json
// (nel's bundle is eval.json).
func IsBundleFile(name string) bool {
	return strings.HasPrefix(name, bundlePrefix) && strings.HasSuffix(name, ".json")
}

// Is reports whether path looks like a NeMo Evaluator run: an eval-*.json
// bundle, a benchmark folder holding one, a run folder whose benchmark
// folders hold one, or a folder of shard_* runs.
func Is(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	if !fi.IsDir() {
		return IsBundleFile(filepath.Base(path))
	}
	if len(bundles(path)) > 0 {
		return true
	}
	if len(benchDirs(path)) > 0 {
		return true
	}
	return len(shardDirs(path)) > 0
}

// Read reads the NeMo run at path (any shape Is accepts) into one Run per
// benchmark, sorted by name. A path that is no NeMo run, a benchmark folder
// with several bundles, a benchmark twice, or a sharded run with a shard
// missing is an error that says which.
func Read(path string) ([]*Run, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		if !IsBundleFile(filepath.Base(path)) {
			return nil, fmt.Errorf("%s: not a NeMo Evaluator bundle (eval-*.json)", path)
		}
		r, err := readBench(filepath.Dir(path), path)
		if err != nil {
			return nil, err
		}
		return []*Run{r}, nil
	}
	if bs := bundles(path); len(bs) > 0 {
		if len(bs) > 1 {
			return nil, fmt.Errorf("%s: %d NeMo Evaluator bundles (%s): name one of them", path, len(bs), strings.Join(bs, ", "))
		}
		r, err := readBench(path, bs[0])
		if err != nil {
			return nil, err
		}
		return []*Run{r}, nil
	}
	if dirs := benchDirs(path); len(dirs) > 0 {
		return readRunDir(path, dirs)
	}
	if shards := shardDirs(path); len(shards) > 0 {
		return readSharded(path, shards)
	}
	return nil, fmt.Errorf("%s: not a NeMo Evaluator run: no eval-*.json in it, in its sub-directories, or in shard_*/ sub-directories", path)
}

func readRunDir(path string, dirs []string) ([]*Run, error) {
	var out []*Run
	seen := map[string]string{}
	for _, d := range dirs {
		bs := bundles(d)
		if len(bs) > 1 {
			return nil, fmt.Errorf("%s: %d NeMo Evaluator bundles (%s): a benchmark folder holds one", d, len(bs), strings.Join(bs, ", "))
		}
		r, err := readBench(d, bs[0])
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[r.Name]; ok {
			return nil, fmt.Errorf("%s: benchmark %q appears twice, in %s and %s", path, r.Name, prev, d)
		}
		seen[r.Name] = d
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Run) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// bundles lists dir's eval-*.json files, sorted.
func bundles(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && IsBundleFile(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// benchDirs lists dir's sub-directories that hold a bundle, sorted.
func benchDirs(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if e.IsDir() && !strings.HasPrefix(e.Name(), shardPrefix) && len(bundles(sub)) > 0 {
			out = append(out, sub)
		}
	}
	return out
}

// shardDirs lists dir's shard_<i> sub-directories by index.
func shardDirs(dir string) map[int]string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[int]string{}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), shardPrefix)
		if !e.IsDir() || !ok {
			continue
		}
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			out[i] = filepath.Join(dir, e.Name())
		}
	}
	return out
}

func readBundle(path string) (*bundleFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b bundleFile
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("read NeMo Evaluator bundle %s: %w", path, err)
	}
	if b.Benchmark.Name == "" {
		return nil, fmt.Errorf("read NeMo Evaluator bundle %s: benchmark.name is missing", path)
	}
	return &b, nil
}

// readBench reads one benchmark folder: its bundle and, beside it,
// results.jsonl (a bundle without rows is still a run, with nothing to
// pair).
func readBench(dir, bundlePath string) (*Run, error) {
	b, err := readBundle(bundlePath)
	if err != nil {
		return nil, err
	}
	r := newRun(dir, b)
	rows, err := readRows(filepath.Join(dir, resultsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	r.finish(b, rows, "")
	return r, nil
}

func newRun(path string, b *bundleFile) *Run {
	repeats := b.Benchmark.Repeats
	if repeats == 0 {
		repeats = b.Config.Repeats
	}
	return &Run{Name: b.Benchmark.Name, Path: path, ConfigHash: b.ConfigHash, Model: b.Config.Model,
		SDKVersion: b.SDKVersion, Repeats: repeats}
}

// finish sets the run's rows, metadata and bundle; extra is a note to add.
func (r *Run) finish(b *bundleFile, rows []results.Row, extra string) {
	sortRows(rows)
	for i := range rows {
		rows[i].Benchmark = r.Name
	}
	r.Rows = rows
	r.Meta = map[string]string{
		results.MetaBenchmark: r.Name,
		results.MetaModel:     r.Model,
		results.MetaRepeats:   strconv.Itoa(r.Repeats),
	}
	if r.ConfigHash != "" {
		r.Meta[results.MetaRecipeHash] = HashPrefix + r.ConfigHash
	}
	r.Bundle = metrics.Compute(metrics.Input{Rows: rows, Meta: r.Meta})
	r.Bundle.Name = r.Name
	r.Bundle.Notes = append(r.notes(b, rows), r.Bundle.Notes...)
	if extra != "" {
		r.Bundle.Notes = append(r.Bundle.Notes, extra)
	}
}

// notes say, in every report of the run, that it is NeMo's and what its
// hash and its own headline are.
func (r *Run) notes(b *bundleFile, rows []results.Row) []string {
	version := r.SDKVersion
	if version == "" {
		version = "version unknown"
	}
	ns := []string{fmt.Sprintf("a %s run (%s, %s), read by nel: its recipe hash is NeMo's config_hash, which covers only the model, benchmark, repeats, max_problems and shuffle seed; there is no benchmark hash or dataset digest to check comparability with", Source, r.Path, version)}
	if len(rows) == 0 {
		ns = append(ns, fmt.Sprintf("no %s beside the bundle: no per-sample rows, so no statistics and nothing to pair", resultsFile))
	}
	if r.Shards > 0 {
		return ns // each shard's bundle has its own headline, none the run's
	}
	for _, m := range []string{"pass@1", "mean_reward"} {
		raw, ok := b.Benchmark.Scores[m]
		if !ok {
			continue
		}
		var s struct {
			Value *float64 `json:"value"`
		}
		if json.Unmarshal(raw, &s) == nil && s.Value != nil {
			ns = append(ns, fmt.Sprintf("NeMo Evaluator's own bundle reports %s = %.4f (it scores infrastructure failures as wrong answers; nel leaves them out)", m, *s.Value))
		}
		break
	}
	return ns
}
