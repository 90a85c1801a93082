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
	"github.com/nel-eval/nel/runtime/results"
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

// ReadFile reads one eval.json.
func ReadFile(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b Bundle
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%s: not an eval.json bundle: %w", path, err)
	}
	if b.BundleVersion < 1 || b.BundleVersion > BundleVersion {
		return nil, fmt.Errorf("%s: bundle version %d; this nel reads versions 1 to %d", path, b.BundleVersion, BundleVersion)
	}
	return &b, nil
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
		return nil, fmt.Errorf("no %s or results.parquet under %s: run `nel run` or `nel-run merge` first", FileName, path)
	}
	slices.SortFunc(out, func(a, b *Bundle) int { return strings.Compare(a.Benchmark, b.Benchmark) })
	return out, nil
}

// readBenchDir reads dir's eval.json, or computes it from its
// results.parquet; ok is false when dir holds neither.
func readBenchDir(dir string) (b *Bundle, ok bool, err error) {
	p := filepath.Join(dir, FileName)
	if b, err := ReadFile(p); err == nil {
		return b, true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
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
// results.parquet (and the error texts in trajectories.parquet, when
// present).
func FromParquet(dir string) (*Bundle, error) {
	p := filepath.Join(dir, "results.parquet")
	if _, err := os.Stat(p); err != nil {
		return nil, err
	}
	rows, meta, err := results.ReadRows(p)
	if err != nil {
		return nil, err
	}
	errs, err := ErrorTexts(rows, filepath.Join(dir, "trajectories.parquet"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return Compute(Input{Rows: rows, Meta: meta, Errors: errs}), nil
}
