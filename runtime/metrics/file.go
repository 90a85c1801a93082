package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// WriteFile writes b to path as indented JSON, atomically.
func WriteFile(path string, b *Bundle) error {
	data, err := Marshal(b)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, data)
}

// Marshal is the bundle's eval.json bytes.
func Marshal(b *Bundle) ([]byte, error) {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// ReadFile reads one eval.json; a version-1 bundle is upgraded (upgrade).
func ReadFile(path string) (*Bundle, error) {
	b, _, err := readFile(path)
	return b, err
}

// readFile is ReadFile, which also returns the version the file had.
func readFile(path string) (*Bundle, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var b Bundle
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&b); err != nil {
		return nil, 0, fmt.Errorf("%s: not an %s bundle: %w", path, rundir.BundleFile, err)
	}
	version := b.BundleVersion
	if version < 1 || version > BundleVersion {
		return nil, 0, fmt.Errorf("%s: bundle version %d; this nel reads versions 1 to %d", path, version, BundleVersion)
	}
	if version == 1 {
		upgrade(&b)
	}
	return &b, version, nil
}

// upgrade turns a version-1 bundle into a version-2 one, as far as its
// contents allow. Version 1 had no outcomes: its failure analysis held
// every failed sample, and its statistics scored them all as wrong.
// Failures are split by the outcome their category implies: the
// infrastructure failures go to Validity (against the default
// max_error_rate, the plan being unknown), the model errors stay. The
// scores cannot be recomputed without the rows, so a note says they
// count the infrastructure failures as wrong answers (ReadDir recomputes
// them from results.parquet when it is there).
func upgrade(b *Bundle) {
	old := b.Failures
	b.BundleVersion = BundleVersion
	b.Validity = Validity{Samples: b.Samples, MaxErrorRate: plan.DefaultMaxErrorRate, MaxErrorRateFrom: "default"}
	b.Failures = Failures{}
	for _, fc := range old.Categories {
		o := failure.Category(fc.Category).Outcome()
		fc.Outcome = string(o)
		if o == failure.InfraError {
			b.Validity.InfraErrors += fc.Count
			b.Validity.Classes = append(b.Validity.Classes, fc)
		} else {
			b.Failures.Failed += fc.Count
			b.Failures.Categories = append(b.Failures.Categories, fc)
		}
	}
	b.ScoredSamples = b.Samples - b.Validity.InfraErrors
	b.ScoredItems = b.Items
	b.Failures.Samples = b.ScoredSamples
	for i := range b.Failures.Categories {
		b.Failures.Categories[i].Share = share(b.Failures.Categories[i].Count, b.ScoredSamples)
	}
	b.Failures.Rate = share(b.Failures.Failed, b.ScoredSamples)
	v := &b.Validity
	v.judge()
	if v.InfraErrors > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("computed by an older nel (bundle version 1), whose scores count the %d infrastructure failures as wrong answers: run nel-run merge again to score without them", v.InfraErrors))
	}
}

func share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// ReadDir reads the bundles of a run: path may be an eval.json, a
// benchmark directory, or a run directory whose benchmark directories hold
// eval.json. A benchmark directory with results.parquet but no eval.json
// (merged by an older nel) is computed from its Parquet files. The
// bundles are sorted by benchmark key.
func ReadDir(path string) ([]*Bundle, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		b, err := ReadFile(path)
		if err != nil {
			return nil, err
		}
		return []*Bundle{b}, nil
	}
	if b, ok, err := readBenchDir(path); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return []*Bundle{b}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []*Bundle
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, ok, err := readBenchDir(filepath.Join(path, e.Name()))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s or %s under %s: run `nel run` or `nel-run merge` first", rundir.BundleFile, rundir.ResultsFile, path)
	}
	slices.SortFunc(out, func(a, b *Bundle) int { return strings.Compare(a.Benchmark, b.Benchmark) })
	return out, nil
}

// readBenchDir reads dir's eval.json, or computes it from its
// results.parquet; ok is false when dir holds neither. A version-1
// eval.json beside results.parquet is recomputed from the rows, which
// leaves the infrastructure failures out of the scores, keeping what it
// knew of the plan.
func readBenchDir(dir string) (b *Bundle, ok bool, err error) {
	p := rundir.Bench(dir).Bundle()
	old, version, err := readFile(p)
	switch {
	case err == nil && version == BundleVersion:
		return old, true, nil
	case err == nil:
		b, err := FromParquet(dir)
		if err != nil {
			// No rows to recompute from: the upgraded bundle says what it can.
			return old, true, nil
		}
		b.Benchmark, b.Name, b.Repeats, b.Methodology = old.Benchmark, old.Name, old.Repeats, old.Methodology
		return b, true, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, true, err
	}
	b, err = FromParquet(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// ErrorTexts returns the error text of every failed row (ErrorCategory
// set) found in the trajectories files at paths, reading only their
// item_id, repeat and error columns; nothing is read when no row failed.
func ErrorTexts(rows []results.Row, paths ...string) (map[RowKey]string, error) {
	failed := map[RowKey]bool{}
	for i := range rows {
		if rows[i].ErrorCategory != "" {
			failed[RowKey{rows[i].ItemID, rows[i].Repeat}] = true
		}
	}
	texts := make(map[RowKey]string, len(failed))
	if len(failed) == 0 {
		return texts, nil
	}
	var ts []results.Trajectory
	for _, p := range paths {
		var err error
		ts, _, err = results.ReadTrajectoryColumns(p, ts, "item_id", "repeat", "error")
		if err != nil {
			return texts, err
		}
		for i := range ts {
			k := RowKey{ts[i].ItemID, ts[i].Repeat}
			if ts[i].Error != "" && failed[k] {
				texts[k] = ts[i].Error
			}
		}
	}
	return texts, nil
}

// FromParquet computes the bundle of a merged benchmark directory from its
// results.parquet (and the error texts in trajectories.parquet and the
// trajectory audit of turns.parquet, when present).
func FromParquet(dir string) (*Bundle, error) {
	p := rundir.Bench(dir).Results()
	if _, err := os.Stat(p); err != nil {
		return nil, err
	}
	rows, meta, err := results.ReadRows(p)
	if err != nil {
		return nil, err
	}
	errs, err := ErrorTexts(rows, rundir.Bench(dir).Trajectories())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	turns, err := ReadAuditTurns(rundir.Bench(dir).Turns())
	if err != nil {
		return nil, err
	}
	return Compute(Input{Rows: rows, Meta: meta, Errors: errs, Turns: turns}), nil
}

// ReadAuditTurns reads the AuditColumns of the turns file at path; none,
// and no error, when there is no such file (a benchmark that takes no
// turns).
func ReadAuditTurns(path string) ([]results.Turn, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	turns, _, err := results.ReadTurnColumns(path, nil, AuditColumns...)
	return turns, err
}
