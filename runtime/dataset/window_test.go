package dataset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestWindowsMatchLoad: the windows of a streamed spec, put together, are
// the records Load gives, with the same lines, file names and digest;
// each window's Offset counts the records before it; Count counts them;
// with Pick, a record read as its picked fields decodes (DecodeRecord)
// to the record Load gives; a JSON array and Parquet row groups stream
// too, and what is read whole (a JSON object holding the records, a
// gzipped Parquet file, Hub specs) is not streamed.
func TestWindowsMatchLoad(t *testing.T) {
	dir := t.TempDir()
	var jl, cs strings.Builder
	cs.WriteString("\ufeffq,a\n")
	for i := range 50 {
		fmt.Fprintf(&jl, "{\"q\": \"%d\", \"a\": %d}\n", i, i*i)
		if i%7 == 0 {
			jl.WriteString("\n")
		}
		fmt.Fprintf(&cs, "\"line\n%d\",%d\n", i, i*i)
	}
	writeFile(t, dir, "a.jsonl", []byte(jl.String()))
	writeFile(t, dir, "set/x.jsonl.gz", gz(t, []byte(jl.String())))
	writeFile(t, dir, "set/y.csv", []byte(cs.String()))
	writeFile(t, dir, "set/z.tsv", []byte("q\ta\n1\t\"2\n"))
	writeFile(t, dir, "c.json", []byte(`{"data": [{"q":"1"}]}`))
	writeFile(t, dir, "pq/p.parquet.gz", gz(t, []byte("x")))
	writeFile(t, dir, "arr/b.json", []byte(arrayOf(50)))
	sc := arrow.NewSchema([]arrow.Field{{Name: "q", Type: arrow.BinaryTypes.String}, {Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	writeFile(t, dir, "arr/c.parquet", writeParquet(t, sc, arrayOf(40), compress.Codecs.Snappy, 7))
	ctx := context.Background()
	l := localLoader(dir)
	for _, spec := range []string{"a.jsonl", "set", "arr"} {
		want, err := l.Load(ctx, spec, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := stream(t, l, spec)
		for _, size := range []int{1, 9, 1000} {
			got, recs, where := readWindows(t, st, size)
			wantWhere := wheres(want)
			if !reflect.DeepEqual(recs, want.Records()) || !reflect.DeepEqual(where, wantWhere) {
				t.Errorf("%s/%d: windows hold %d records at %v…, Load %d at %v…", spec, size, len(recs), where[:3], len(want.Records()), wantWhere[:3])
			}
			if got.Digest != want.Digest || len(got.Parts) != len(want.Parts) || got.Parts[0].Records != nil {
				t.Errorf("%s/%d: digest %s, %d parts; Load: %s, %d parts", spec, size, got.Digest, len(got.Parts), want.Digest, len(want.Parts))
			}
		}
		if n, err := st.Count(ctx, LoadOptions{}); err != nil || n != len(want.Records()) {
			t.Errorf("%s: Count = %d, %v; Load read %d", spec, n, err, len(want.Records()))
		}
		checkPicked(t, st, spec, want.Records())
	}
	for _, spec := range []string{"c.json", "pq", "hf://org/x", "nope.jsonl"} {
		if _, ok := l.Stream(context.Background(), spec); ok {
			t.Errorf("Stream(%s): expected local JSONL/CSV/TSV only", spec)
		}
	}
	// An error of fn stops the windows, not the reading: the digest still
	// comes back, and fn's error with it.
	refuse := errors.New("refused")
	calls := 0
	ds, err := stream(t, l, "a.jsonl").Windows(ctx, LoadOptions{}, 10, func(*Dataset) error { calls++; return refuse })
	if !errors.Is(err, refuse) || ds == nil || calls != 1 {
		t.Errorf("fn refusing: %v, dataset %v, %d calls", err, ds != nil, calls)
	}
}

// arrayOf is a JSON array of n records {"q": "<i>", "a": i*i}.
func arrayOf(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"q": "%d", "a": %d}`, i, i*i)
	}
	return b.String() + "]"
}

// checkPicked reads st with Pick ["q"]: each record holds q as Load
// gives it, and, when read as its picked fields, its text decodes to
// the whole record.
func checkPicked(t *testing.T, st Stream, spec string, want []Record) {
	t.Helper()
	i, picked := 0, 0
	_, err := st.Windows(context.Background(), LoadOptions{Pick: []string{"q"}}, 8, func(w *Dataset) error {
		for _, p := range w.Parts {
			for j, rec := range p.Records {
				whole := rec
				if p.Raw[j] != nil {
					picked++
					var err error
					if whole, err = DecodeRecord(p.Raw[j]); err != nil {
						return err
					}
				}
				if !reflect.DeepEqual(whole, want[i]) || rec["q"] != want[i]["q"] {
					t.Errorf("%s: record %d with Pick is %v (whole %v), Load's %v", spec, i, rec, whole, want[i])
				}
				i++
			}
		}
		return nil
	})
	if err != nil || i != len(want) {
		t.Fatalf("%s: Pick read %d records, %v", spec, i, err)
	}
	if picked == 0 && !strings.HasSuffix(spec, ".parquet") && spec != "set" {
		t.Errorf("%s: no record read as its picked fields", spec)
	}
}

func stream(t *testing.T, l *Loader, spec string) Stream {
	t.Helper()
	st, ok := l.Stream(context.Background(), spec)
	if !ok {
		t.Fatalf("%s is not streamed", spec)
	}
	return st
}

// TestStreamListsOnce: a Stream reads the files its spec had when it was
// made: a file added to the folder after is neither counted nor read, so
// Count and Windows agree with each other (the folder is listed once).
func TestStreamListsOnce(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "set/a.jsonl", []byte("{\"q\": \"1\"}\n{\"q\": \"2\"}\n"))
	l := localLoader(dir)
	st := stream(t, l, "set")
	before, err := l.Load(context.Background(), "set", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "set/b.jsonl", []byte("{\"q\": \"3\"}\n"))
	n, err := st.Count(context.Background(), LoadOptions{})
	if err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want the 2 records listed", n, err)
	}
	ds, err := st.Windows(context.Background(), LoadOptions{}, 10, func(*Dataset) error { return nil })
	if err != nil || ds.Digest != before.Digest || len(ds.Parts) != 1 {
		t.Errorf("Windows read %d files (digest %s, %v), want a.jsonl only (%s)", len(ds.Parts), ds.Digest, err, before.Digest)
	}
}
