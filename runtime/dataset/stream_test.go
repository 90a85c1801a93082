package dataset

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// allocated runs f and returns the bytes it allocated on the heap.
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestJSONLHugeLineRefused: a 50 MB line is refused with its number, and
// refusing it costs a bounded amount of memory: the line is never read
// whole, let alone decoded (reading the file whole and decoding the line
// allocated about 330 MB).
func TestJSONLHugeLineRefused(t *testing.T) {
	dir := t.TempDir()
	huge := `{"question":"` + strings.Repeat("x", 50<<20) + `","answer":"1"}` + "\n"
	small := `{"question":"q","answer":"1"}` + "\n"
	writeFile(t, dir, "big.jsonl", []byte(small+"\n"+huge+small))
	writeFile(t, dir, "big.jsonl.gz", gz(t, []byte(small+"\n"+huge+small)))
	for _, name := range []string{"big.jsonl", "big.jsonl.gz"} {
		var err error
		n := allocated(func() {
			_, err = localLoader(dir).Load(context.Background(), name, LoadOptions{})
		})
		if err == nil || !strings.Contains(err.Error(), name+": line 3: longer than 32 MiB") {
			t.Errorf("%s: error %v, expected line 3 refused as longer than 32 MiB", name, err)
		}
		// At most the line's allowed prefix, grown by doubling, and the
		// readers' buffers.
		if limit := uint64(3 * MaxLineBytes); n > limit {
			t.Errorf("%s: refusing the line allocated %d MB, more than %d MB", name, n>>20, limit>>20)
		}
	}
}

// TestJSONLLongLineBounded: a line under the limit loads, and the loader
// allocates a small multiple of it: the line, grown by doubling, the JSON
// decoder's copy, also grown by doubling, and the decoded string (about
// 7×); the file itself is never held whole.
func TestJSONLLongLineBounded(t *testing.T) {
	dir := t.TempDir()
	const size = 20 << 20
	writeFile(t, dir, "long.jsonl", []byte(`{"q":"`+strings.Repeat("y", size)+`"}`+"\n"))
	var (
		ds  *Dataset
		err error
	)
	n := allocated(func() {
		ds, err = localLoader(dir).Load(context.Background(), "long.jsonl", LoadOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(ds.Records()[0]["q"].(string)); got != size {
		t.Fatalf("the line's string has %d bytes, expected %d", got, size)
	}
	if n > 8*size {
		t.Errorf("loading a %d MB line allocated %d MB, more than 8×", size>>20, n>>20)
	}
}

// TestRecordLines: records know the line they start on, blank lines and
// quoted newlines included, so messages can point into the file.
func TestRecordLines(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.jsonl", []byte("{\"a\":1}\n\n{\"a\":2}\n\n\n{\"a\":3}"))
	writeFile(t, dir, "b.csv", []byte("q,a\nx,1\n\"two\nlines\",2\ny,3\n"))
	writeFile(t, dir, "c.json", []byte(`[{"a":1},{"a":2}]`))
	for _, c := range []struct {
		name  string
		lines []int
		where string // of the last record
	}{
		{"a.jsonl", []int{1, 3, 6}, "a.jsonl:6"},
		{"b.csv", []int{2, 3, 5}, "b.csv:5"},
		{"c.json", nil, "c.json record 2"},
	} {
		ds, err := localLoader(dir).Load(context.Background(), c.name, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := ds.Parts[0]
		if !reflect.DeepEqual(p.Lines, c.lines) {
			t.Errorf("%s: lines %v, expected %v", c.name, p.Lines, c.lines)
		}
		if got := p.Where(len(p.Records) - 1); got != c.where {
			t.Errorf("%s: Where = %q, expected %q", c.name, got, c.where)
		}
	}
}

// TestLocalDigest: the digest the compiler hashes is the one Load records,
// for a file and a folder; it follows the content, not the location.
func TestLocalDigest(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	data := []byte("{\"question\":\"1+1\",\"answer\":\"2\"}\n")
	writeFile(t, a, "q.jsonl", data)
	writeFile(t, b, "elsewhere/q.jsonl", data)
	writeFile(t, a, "set/x.jsonl", data)
	writeFile(t, a, "set/y.csv", []byte("question,answer\n2+2,4\n"))
	writeFile(t, a, "set/README.md", []byte("not data"))

	for _, spec := range []string{"q.jsonl", "set", filepath.Join(a, "q.jsonl")} {
		d, err := LocalDigest(a, spec)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := localLoader(a).Load(context.Background(), spec, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Digest != ds.Digest || len(d.Parts) != len(ds.Parts) {
			t.Errorf("%s: LocalDigest %s (%d files), Load %s (%d files)", spec, d.Digest, len(d.Parts), ds.Digest, len(ds.Parts))
		}
	}
	here, _ := LocalDigest(a, "q.jsonl")
	there, _ := LocalDigest(b, "elsewhere/q.jsonl")
	if here.Digest != there.Digest {
		t.Errorf("the same bytes at two paths: %s and %s", here.Digest, there.Digest)
	}
	changed := append([]byte(nil), data...)
	changed[len(changed)-3] = '3'
	writeFile(t, b, "elsewhere/q.jsonl", changed)
	if there, _ := LocalDigest(b, "elsewhere/q.jsonl"); there.Digest == here.Digest {
		t.Error("one changed byte kept the digest")
	}
	if _, err := LocalDigest(a, "nope.jsonl"); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing file: %v", err)
	}
	for spec, local := range map[string]bool{"q.jsonl": true, "/abs/q.jsonl": true, "hf://org/x?split=test": false, "https://x.org/q.jsonl": false, "": false} {
		if IsLocal(spec) != local {
			t.Errorf("IsLocal(%q) = %v", spec, !local)
		}
	}
}

// TestPinnedLocalOnly: an unlocked recipe's plan pins only its local data;
// other specs load unchecked, and a local file changed since compiling is
// refused as such.
func TestPinnedLocalOnly(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "d.jsonl", []byte(`{"q":"1+1","a":"2"}`+"\n"))
	writeFile(t, dir, "other.jsonl", []byte(`{"q":"2+2","a":"4"}`+"\n"))
	d, err := LocalDigest(dir, "d.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := &Pinned{Loader: localLoader(dir), Pins: PinsOf([]*Dataset{d}), Local: true}
	ctx := context.Background()
	if _, err := p.Load(ctx, "d.jsonl", LoadOptions{}); err != nil {
		t.Fatalf("unchanged data: %v", err)
	}
	if _, err := p.Load(ctx, "other.jsonl", LoadOptions{}); err != nil {
		t.Errorf("a spec the plan does not pin: %v", err)
	}
	writeFile(t, dir, "d.jsonl", []byte(`{"q":"1+1","a":"3"}`+"\n"))
	_, err = p.Load(ctx, "d.jsonl", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "differs from the "+d.Digest+" the recipe hash covers") || !strings.Contains(err.Error(), "changed since the job was compiled") {
		t.Errorf("changed data: %v", err)
	}
}
