package results

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// concatFixture writes trajectory files of the given sizes (0 included: a
// file without row groups) and returns their paths and all trajectories in
// order.
func concatFixture(t *testing.T, dir string, sizes ...int) ([]string, []Trajectory) {
	t.Helper()
	var paths []string
	var all []Trajectory
	off := 0
	for i, n := range sizes {
		ts := sampleTrajectories(off + n)[off:]
		off += n
		p := filepath.Join(dir, "part"+string(rune('a'+i))+".parquet")
		if err := WriteTrajectories(p, ts, map[string]string{MetaShard: "x"}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		all = append(all, ts...)
	}
	return paths, all
}

func TestConcat(t *testing.T) {
	dir := t.TempDir()
	// 70,000 rows: two row groups in one part.
	paths, want := concatFixture(t, dir, 1000, 0, 70_000, 3)
	out := filepath.Join(dir, "all.parquet")
	meta := map[string]string{MetaBenchmark: "gsm8k", MetaShard: "merged/4"}
	n, err := Concat(out, paths, meta)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(want)) {
		t.Errorf("Concat: %d rows, want %d", n, len(want))
	}
	got, gotMeta, err := ReadTrajectories(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("concatenated trajectories differ from the parts' (%d vs %d rows)", len(got), len(want))
	}
	if !reflect.DeepEqual(gotMeta, withRows(meta, len(want))) {
		t.Errorf("metadata %v, want %v", gotMeta, withRows(meta, len(want)))
	}
	rdr, err := file.OpenParquetFile(out, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	if g := rdr.NumRowGroups(); g != 4 {
		t.Errorf("%d row groups, want 4 (1 + 0 + 2 + 1)", g)
	}
	for g := range rdr.NumRowGroups() {
		if o := rdr.MetaData().RowGroup(g).Ordinal(); int(o) != g {
			t.Errorf("row group %d has ordinal %d", g, o)
		}
	}

	// The projected reader, reusing its buffer.
	cols, _, err := ReadTrajectoryColumns(out, make([]Trajectory, 0, len(want)+1), "item_id", "error")
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		w := Trajectory{ItemID: want[i].ItemID, Error: want[i].Error}
		if cols[i] != w {
			t.Fatalf("ReadTrajectoryColumns row %d = %+v, want %+v", i, cols[i], w)
		}
	}
	if _, _, err := ReadTrajectoryColumns(out, nil, "item_id", "nope"); err == nil {
		t.Error("ReadTrajectoryColumns accepted an unknown column")
	}
}

func TestConcatRejects(t *testing.T) {
	dir := t.TempDir()
	paths, _ := concatFixture(t, dir, 10, 10)
	rows := filepath.Join(dir, "rows.parquet")
	if err := WriteRows(rows, sampleRows(5), nil); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.parquet")
	if err := os.WriteFile(junk, []byte("PAR1 not really a parquet file PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	for _, tc := range []struct {
		name string
		srcs []string
		want string
	}{
		{"schemas differ", []string{paths[0], rows}, "schema differs"},
		{"not parquet", []string{paths[0], junk}, junk},
		{"missing", []string{paths[0], filepath.Join(dir, "absent.parquet")}, "absent.parquet"},
		{"none", nil, "no input"},
	} {
		if _, err := Concat(out, tc.srcs, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one mentioning %q", tc.name, err, tc.want)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a failed Concat left %s", tc.name, out)
		}
	}
	// No temporary files left behind either.
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// A gate that says no abandons the file, leaving the old one in place; its
// error comes back as it is.
func TestGates(t *testing.T) {
	dir := t.TempDir()
	paths, _ := concatFixture(t, dir, 10)
	out := filepath.Join(dir, "out.parquet")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	no := errors.New("checks failed")
	if _, err := ConcatGated(out, paths, nil, func() error { return no }); err != no {
		t.Errorf("ConcatGated: err %v, want the gate's", err)
	}
	if err := WriteRowsGated(out, sampleRows(10), nil, func() error { return no }); err != no {
		t.Errorf("WriteRowsGated: err %v, want the gate's", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("a refused gate replaced %s", out)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
	rows := sampleRows(100_000) // two row groups, encoded in parallel
	if err := WriteRowsGated(out, rows, nil, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	got := make([]Row, len(rows))
	if _, err := ReadRowsInto(out, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, normalize(rows)) {
		t.Error("WriteRowsGated + ReadRowsInto: rows differ")
	}
	if _, err := ReadRowsInto(out, got[:10]); err == nil || !strings.Contains(err.Error(), "expected 10") {
		t.Errorf("ReadRowsInto into a short slice: %v", err)
	}
}

// TestDuckDBReadsConcat checks a concatenated file with a real DuckDB.
func TestDuckDBReadsConcat(t *testing.T) {
	testenv.DuckDBReader(t) // before the work, not after it
	dir := t.TempDir()
	paths, want := concatFixture(t, dir, 2000, 0, 70_000)
	out := filepath.Join(dir, "trajectories.parquet")
	meta := map[string]string{MetaBenchmark: "gsm8k"}
	if _, err := Concat(out, paths, meta); err != nil {
		t.Fatal(err)
	}
	d := readWithDuckDB(t, out)[0]
	if d.Rows != int64(len(want)) {
		t.Errorf("DuckDB sees %d rows, want %d", d.Rows, len(want))
	}
	checkMeta(t, d, withRows(meta, len(want)))
	text := map[string]func(Trajectory) string{
		"recipe_hash": func(t Trajectory) string { return t.RecipeHash }, "benchmark": func(t Trajectory) string { return t.Benchmark },
		"item_id": func(t Trajectory) string { return t.ItemID }, "request": func(t Trajectory) string { return t.Request },
		"response": func(t Trajectory) string { return t.Response }, "reasoning": func(t Trajectory) string { return t.Reasoning },
		"scoring_details": func(t Trajectory) string { return t.ScoringDetails }, "error": func(t Trajectory) string { return t.Error },
		"model": func(t Trajectory) string { return t.Model }, "judge_calls": func(t Trajectory) string { return t.JudgeCalls },
	}
	ints := map[string]func(Trajectory) int64{
		"item_idx": func(t Trajectory) int64 { return t.ItemIdx }, "repeat": func(t Trajectory) int64 { return t.Repeat },
		"retries": func(t Trajectory) int64 { return t.Retries },
	}
	floats := map[string]func(Trajectory) float64{
		"latency_ms": func(t Trajectory) float64 { return t.LatencyMS },
	}
	checkAggregates(t, d, want, text, ints, floats)
}
