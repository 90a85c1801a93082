package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// An eval-factory container's run_eval writes results.yml into its
// output_dir: results.tasks.<task>.metrics.<group>.scores.<metric>.value
// (and the same under results.groups), plus, for NeMo-Skills-based images,
// the per-sample eval-results/<benchmark>/output*.jsonl. nel-run reads no
// YAML: the job converts results.yml to results.json inside the container
// (eval-factory images ship Python with PyYAML), and this reads that.
// EvalFactoryResults is the JSON copy of results.yml the job writes.
const EvalFactoryResults = "results.json"

// ReadEvalFactory reads an eval-factory container's output folder: the
// per-sample rows when it wrote NeMo-Skills outputs, the aggregate scores
// always.
func ReadEvalFactory(dir string) (*Output, error) {
	o := &Output{Aggregate: map[string]float64{}}
	if _, err := os.Stat(filepath.Join(dir, "eval-results")); err == nil {
		sk, err := ReadSkills(dir)
		if err != nil {
			return nil, err
		}
		o.Samples, o.Files = sk.Samples, sk.Files
	}
	path := filepath.Join(dir, EvalFactoryResults)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no aggregate results: %w", err)
	}
	var doc struct {
		Results struct {
			Tasks  map[string]efEntry `json:"tasks"`
			Groups map[string]efEntry `json:"groups"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var keys []string
	for _, part := range []map[string]efEntry{doc.Results.Tasks, doc.Results.Groups} {
		for name, e := range part {
			for group, g := range e.Metrics {
				for metric, sc := range g.Scores {
					if sc.Value == nil {
						continue
					}
					k := name + "/" + group + "/" + metric
					o.Aggregate[k] = *sc.Value
					keys = append(keys, k)
				}
			}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no results.tasks.<task>.metrics.<group>.scores.<metric>.value", path)
	}
	sort.Strings(keys)
	o.Primary = keys[0]
	o.Files = append(o.Files, EvalFactoryResults)
	sort.Strings(o.Files)
	return o, nil
}

type efEntry struct {
	Metrics map[string]struct {
		Scores map[string]struct {
			Value *float64 `json:"value"`
		} `json:"scores"`
	} `json:"metrics"`
}
