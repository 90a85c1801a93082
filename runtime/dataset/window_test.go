package dataset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestWindowsMatchLoad: the windows of a streamed spec, put together, are
// the records Load gives, with the same lines, file names and digest;
// each window's Offset counts the records before it; Count counts them;
// and a spec Load reads whole (JSON, Parquet) is not streamed.
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
	writeFile(t, dir, "c.json", []byte(`[{"q":"1"}]`))
	ctx := context.Background()
	l := localLoader(dir)
	for _, spec := range []string{"a.jsonl", "set"} {
		want, err := l.Load(ctx, spec, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 9, 1000} {
			var recs []Record
			var where []string
			got, err := l.Windows(ctx, spec, LoadOptions{}, size, func(w *Dataset) error {
				if w.Offset != len(recs) {
					t.Errorf("%s/%d: window at offset %d after %d records", spec, size, w.Offset, len(recs))
				}
				for _, p := range w.Parts {
					for i := range p.Records {
						where = append(where, p.Where(i))
					}
					recs = append(recs, p.Records...)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var wantWhere []string
			for _, p := range want.Parts {
				for i := range p.Records {
					wantWhere = append(wantWhere, p.Where(i))
				}
			}
			if !reflect.DeepEqual(recs, want.Records()) || !reflect.DeepEqual(where, wantWhere) {
				t.Errorf("%s/%d: windows hold %d records at %v…, Load %d at %v…", spec, size, len(recs), where[:3], len(want.Records()), wantWhere[:3])
			}
			if got.Digest != want.Digest || len(got.Parts) != len(want.Parts) || got.Parts[0].Records != nil {
				t.Errorf("%s/%d: digest %s, %d parts; Load: %s, %d parts", spec, size, got.Digest, len(got.Parts), want.Digest, len(want.Parts))
			}
		}
		if n, err := l.Count(ctx, spec, LoadOptions{}); err != nil || n != len(want.Records()) {
			t.Errorf("%s: Count = %d, %v; Load read %d", spec, n, err, len(want.Records()))
		}
	}
	if !l.Streams("set") || l.Streams("c.json") || l.Streams("hf://org/x") || l.Streams("nope.jsonl") {
		t.Error("Streams: expected local JSONL/CSV/TSV only")
	}
	// An error of fn stops the windows, not the reading: the digest still
	// comes back, and fn's error with it.
	refuse := errors.New("refused")
	calls := 0
	ds, err := l.Windows(ctx, "a.jsonl", LoadOptions{}, 10, func(*Dataset) error { calls++; return refuse })
	if !errors.Is(err, refuse) || ds == nil || calls != 1 {
		t.Errorf("fn refusing: %v, dataset %v, %d calls", err, ds != nil, calls)
	}
}
