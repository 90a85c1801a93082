package results

import (
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// readAll reads rr to its end in slices of n rows.
func readAll[T any](t *testing.T, rr *Reader[T], n int) []T {
	t.Helper()
	defer rr.Close()
	var out []T
	buf := make([]T, n)
	for {
		k, err := rr.Read(buf)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf[:k]...)
	}
}

// A file written by WriteRowsFrom, its rows given in uneven slices over
// several row groups, reads back (whole, and through a Reader in slices
// that straddle batches and row groups, maps and optional values
// included) as the rows given.
func TestWriteRowsFromReader(t *testing.T) {
	rows := sampleRows(2*streamGroupRows + 777)
	path := filepath.Join(t.TempDir(), "r.parquet")
	next := 0
	fill := func(dst []Row) error {
		// The writer's buffer comes zeroed, whatever it held before.
		for i := range dst {
			if !reflect.DeepEqual(dst[i], Row{}) {
				t.Errorf("fill given a row not zeroed: %+v", dst[i])
				break
			}
		}
		next += copy(dst, rows[next:])
		return nil
	}
	meta := map[string]string{MetaBenchmark: "gsm8k"}
	if err := WriteRowsFrom(path, len(rows), fill, meta, nil); err != nil {
		t.Fatal(err)
	}
	if next != len(rows) {
		t.Fatalf("fill gave %d rows of %d", next, len(rows))
	}
	want := normalize(rows)
	got, gotMeta, err := ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotMeta, withRows(meta, len(rows))) {
		t.Fatalf("ReadRows of WriteRowsFrom's file differs (%d rows, meta %v)", len(got), gotMeta)
	}
	rr, err := OpenRows(path)
	if err != nil {
		t.Fatal(err)
	}
	if rr.NumRows() != int64(len(rows)) || rr.Meta()[MetaBenchmark] != "gsm8k" {
		t.Errorf("NumRows %d, Meta %v", rr.NumRows(), rr.Meta())
	}
	if got := readAll(t, rr, rowReaderBatch+13); !reflect.DeepEqual(got, want) {
		t.Fatal("Reader's rows differ from ReadRows'")
	}

	// Named columns only: the others stay empty.
	rr, err = OpenRows(path, "item_id", "repeat")
	if err != nil {
		t.Fatal(err)
	}
	keys := readAll(t, rr, 999)
	for i, r := range keys {
		if !reflect.DeepEqual(r, Row{ItemID: rows[i].ItemID, Repeat: rows[i].Repeat}) {
			t.Fatalf("row %d read as %+v, want only item_id %s and repeat %d", i, r, rows[i].ItemID, rows[i].Repeat)
		}
	}
	if _, err := OpenRows(path, "item_id", "no_such"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("OpenRows of an unknown column: %v, want an error naming the file", err)
	}
}

// OpenTrajectories reads a trajectories file like ReadTrajectoryColumns.
func TestTrajectoryReader(t *testing.T) {
	ts := sampleTrajectories(5000)
	path := filepath.Join(t.TempDir(), "t.parquet")
	if err := WriteTrajectories(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	want, _, err := ReadTrajectoryColumns(path, nil, "item_id", "repeat", "error")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := OpenTrajectories(path, "item_id", "repeat", "error")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, tr, 700); !reflect.DeepEqual(got, want) {
		t.Fatal("trajectory Reader's rows differ from ReadTrajectoryColumns'")
	}
}
