package shard

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/plan"
)

// itemsPlan is a one-benchmark gsm8k plan over data (a local path).
func itemsPlan(data string, shards int, maxProblems *int, seed *int64) *plan.Plan {
	return &plan.Plan{
		PlanVersion: plan.Version, ScoringVersion: "1", RecipeHash: "sha256:r", PlanHash: "sha256:p", Shards: shards,
		Services: []plan.Service{{Name: "m", Type: "api", Protocol: "chat_completions", Model: "m", URL: "http://127.0.0.1:1/v1"}},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:b",
			Solver: plan.Solver{Type: "simple", Service: "m"}, Repeats: 1, MaxConcurrent: 1, Timeout: 30,
			MaxProblems: maxProblems, ShuffleSeed: seed, Params: map[string]any{"data_path": data},
		}},
	}
}

// loadShard returns shard of p's items, streamed or whole (a DataCache
// makes a shard load the whole set, as the shards of nel run do), and
// what it logged at warning level.
func loadShard(t *testing.T, p *plan.Plan, shard int, whole bool, window int) (*shardData, string, error) {
	t.Helper()
	var logs bytes.Buffer
	o := Options{Plan: p, Benchmark: "gsm8k", Shard: shard, Of: p.Shards, OutDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: dropTime}))}
	if whole {
		o.Data = &DataCache{}
	}
	r, err := newRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	r.window = window
	d, err := r.shardItems(context.Background())
	if err == nil && d.streamed == whole {
		t.Fatalf("whole=%v, but streamed=%v", whole, d.streamed)
	}
	return d, logs.String(), err
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// gsm8kLines returns n problems as JSONL lines; every 97th repeats
// problem 3 (repeats in windows after the first's), and every 211th plus
// one the problem before it (a repeat in the same window). Some problems
// hold what a shard's quick read of the key fields must get right or
// leave to a whole decode: escapes and HTML characters, a surrogate
// pair, fields besides the key's, a question that is a number.
func gsm8kLines(n int) []string {
	out := make([]string, n)
	for i := range out {
		k := i
		switch {
		case i > 3 && i%97 == 0:
			k = 3
		case i%211 == 1 && i > 1:
			k = i - 1
		}
		q, extra := fmt.Sprintf(`"What is %d plus %d?"`, k, k%7), ""
		switch {
		case k%13 == 5:
			q = fmt.Sprintf(`"What is %d plus %d? \u00e9 <&> \"\\\/"`, k, k%7)
		case k%17 == 6:
			q = fmt.Sprintf(`"What is %d plus %d? \ud83d\ude00"`, k, k%7)
		case k%19 == 7:
			extra = fmt.Sprintf(`, "meta": {"a": [1, -2.5e3, null, true, "x"]}, "id": %d`, k)
		case k%23 == 8:
			q = fmt.Sprint(1000000 + k)
		}
		out[i] = fmt.Sprintf(`{"question": %s, "answer": "%d + %d = %d\n#### %d"%s}`, q, k, k%7, k+k%7, k+k%7, extra)
	}
	return out
}

func writeData(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	data := []byte(text)
	if strings.HasSuffix(path, ".gz") {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		zw.Close()
		data = b.Bytes()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStreamedShardItems: a shard that streams its data gets exactly the
// items the whole-set path gives it (IDs, indices, origins, prompts, in
// the same order), the same counts, digest and duplicate warning, for a
// file, a gzipped file and a folder of two files, across shard counts,
// with max_problems and with shuffle_seed, windows crossing file edges.
func TestStreamedShardItems(t *testing.T) {
	dir := t.TempDir()
	lines := gsm8kLines(1000)
	one := strings.Join(lines[:400], "\n") + "\n\n" + strings.Join(lines[400:], "\n") + "\n"
	writeData(t, filepath.Join(dir, "one.jsonl"), one)
	writeData(t, filepath.Join(dir, "one.jsonl.gz"), one)
	writeData(t, filepath.Join(dir, "two", "a.jsonl"), strings.Join(lines[:333], "\n"))
	writeData(t, filepath.Join(dir, "two", "b.jsonl"), "\n"+strings.Join(lines[333:], "\n")+"\n")
	// The answers hold newlines: quoted CSV fields that span lines.
	writeData(t, filepath.Join(dir, "one.csv"), "\ufeff"+csvOf(t, lines, ','))
	writeData(t, filepath.Join(dir, "one.tsv.gz"), csvOf(t, lines, '\t'))
	writeData(t, filepath.Join(dir, "one.json"), "[\n"+strings.Join(lines, ",\n")+"\n]\n")
	writeData(t, filepath.Join(dir, "pq", "a.parquet"), parquetOf(t, lines[:600], 128))
	writeData(t, filepath.Join(dir, "pq", "b.parquet"), parquetOf(t, lines[600:], 1000))
	ptr := func(n int) *int { return &n }
	seed := func(n int64) *int64 { return &n }
	for _, data := range []string{"one.jsonl", "one.jsonl.gz", "two", "one.csv", "one.tsv.gz", "one.json", "pq"} {
		for _, c := range []struct {
			max  *int
			seed *int64
		}{{nil, nil}, {ptr(250), nil}, {nil, seed(42)}, {ptr(300), seed(7)}, {ptr(5000), seed(1)}} {
			for _, of := range []int{1, 3, 8} {
				p := itemsPlan(filepath.Join(dir, data), of, c.max, c.seed)
				sum := 0
				for shard := range of {
					name := fmt.Sprintf("%s max=%v seed=%v shard %d/%d", data, deref(c.max), deref(c.seed), shard, of)
					want, wantLog, err := loadShard(t, p, shard, true, 0)
					if err != nil {
						t.Fatal(err)
					}
					got, gotLog, err := loadShard(t, p, shard, false, 37)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					sameItems(t, name, got, want)
					// Most records the shard does not keep are numbered
					// by gsm8k's Key alone; those it cannot read (a
					// surrogate pair, a number in JSON) and each
					// window's first are loaded.
					if others := got.total - len(got.mine); got.keyed < others*3/4 || others > 0 && got.keyed >= others {
						t.Errorf("%s: %d of %d records not kept were numbered by the Key alone", name, got.keyed, others)
					}
					if gotLog != wantLog || !strings.Contains(wantLog, "repeats") {
						t.Errorf("%s: warned\n%s\nwant\n%s", name, gotLog, wantLog)
					}
					sum += len(got.mine)
				}
				if want, _, _ := loadShard(t, p, 0, true, 0); sum != want.selected {
					t.Errorf("%s max=%v seed=%v: %d shards hold %d items, %d selected", data, deref(c.max), deref(c.seed), of, sum, want.selected)
				}
			}
		}
	}
}

// A shard that keeps every record reads each once: by windows through
// the benchmark's Load, not by its Key and then whole again (issue 23);
// one that drops records reads them by the Key. The items are the
// whole-set path's either way (TestStreamedShardItems).
func TestStreamReadsKeptRecordsOnce(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "one.jsonl")
	writeData(t, data, strings.Join(gsm8kLines(1000), "\n")+"\n")
	ptr := func(n int) *int { return &n }
	seed := func(n int64) *int64 { return &n }
	for _, c := range []struct {
		name     string
		of       int
		max      *int
		seed     *int64
		windowed bool // Load is called once a window, not once a record
	}{
		{"all", 1, nil, nil, true},
		{"all shuffled", 1, ptr(5000), seed(3), true},
		{"max_problems", 1, ptr(250), nil, false},
		{"3 shards", 3, nil, nil, false},
	} {
		o := Options{Plan: itemsPlan(data, c.of, c.max, c.seed), Benchmark: "gsm8k", Shard: 0, Of: c.of, OutDir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		r, err := newRunner(o)
		if err != nil {
			t.Fatal(err)
		}
		r.window = 100
		def, calls := *r.def, 0
		load := def.Load
		def.Load = func(ctx context.Context, l bench.Loader, params map[string]any) (*bench.Set, error) {
			calls++
			return load(ctx, l, params)
		}
		r.def = &def
		d, err := r.shardItems(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !d.streamed || len(d.mine) == 0 {
			t.Fatalf("%s: streamed=%v, %d items", c.name, d.streamed, len(d.mine))
		}
		if windowed := calls <= 10; windowed != c.windowed {
			t.Errorf("%s: Load called %d times for 1,000 records in windows of 100 (keyed %d)", c.name, calls, d.keyed)
		}
	}
}

// csvOf writes JSONL problem lines as CSV (or TSV) with a header row.
func csvOf(t *testing.T, lines []string, comma rune) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Comma = comma
	w.Write([]string{"question", "answer"})
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		w.Write([]string{fmt.Sprint(rec["question"]), fmt.Sprint(rec["answer"])})
	}
	w.Flush()
	return b.String()
}

// parquetOf writes JSONL problem lines as a Parquet file of string
// columns question and answer, in row groups of rowGroup rows.
func parquetOf(t *testing.T, lines []string, rowGroup int64) string {
	sc := arrow.NewSchema([]arrow.Field{{Name: "question", Type: arrow.BinaryTypes.String}, {Name: "answer", Type: arrow.BinaryTypes.String}}, nil)
	rows := make([]string, len(lines))
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]string{"question": fmt.Sprint(rec["question"]), "answer": fmt.Sprint(rec["answer"])})
		rows[i] = string(b)
	}
	tbl, err := array.TableFromJSON(memory.DefaultAllocator, sc, []string{"[" + strings.Join(rows, ",") + "]"})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, rowGroup, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func deref[T any](p *T) any {
	if p == nil {
		return "none"
	}
	return *p
}

func sameItems(t *testing.T, name string, got, want *shardData) {
	t.Helper()
	if got.selected != want.selected || got.total != want.total || got.digest != want.digest {
		t.Errorf("%s: selected %d, total %d, digest %s; want %d, %d, %s", name, got.selected, got.total, got.digest, want.selected, want.total, want.digest)
	}
	if len(got.mine) != len(want.mine) {
		t.Fatalf("%s: %d items, want %d", name, len(got.mine), len(want.mine))
	}
	for i, w := range want.mine {
		g := got.mine[i]
		if g.ID != w.ID || g.Index != w.Index || g.Origin != w.Origin || g.Prompt != w.Prompt || g.Expected != w.Expected || fmt.Sprint(g.Content) != fmt.Sprint(w.Content) {
			t.Fatalf("%s: item %d is %+v\nwant %+v", name, i, *g, *w)
		}
	}
}

// TestStreamedShardErrors: a shard that streams its data fails as the
// whole-set path fails, word for word: a malformed line with its number
// (also after a record the benchmark refuses, and with shuffle_seed), a
// refused record with its index in the whole dataset, a missing file,
// and data changed since compiling (reported before what the change
// made the benchmark refuse).
func TestStreamedShardErrors(t *testing.T) {
	dir := t.TempDir()
	lines := gsm8kLines(1000)
	with := func(name string, edit func(ls []string)) string {
		ls := append([]string(nil), lines...)
		edit(ls)
		path := filepath.Join(dir, name)
		writeData(t, path, strings.Join(ls, "\n")+"\n")
		return path
	}
	jsonWith := func(name string, edit func(ls []string)) string {
		ls := append([]string(nil), lines...)
		edit(ls)
		path := filepath.Join(dir, name)
		writeData(t, path, "[\n"+strings.Join(ls, ",\n")+"\n]\n")
		return path
	}
	seed := int64(3)
	cases := []struct {
		name, data string
		seed       *int64
		pin        string // a file whose digest the plan pins
		want       string
	}{
		{"malformed", with("bad.jsonl", func(ls []string) { ls[799] = `{"question": "x", ` }), nil, "", "bad.jsonl: line 800: invalid JSON"},
		{"malformed+seed", filepath.Join(dir, "bad.jsonl"), &seed, "", "bad.jsonl: line 800: invalid JSON"},
		{"refused record", with("refused.jsonl", func(ls []string) { ls[700] = `{"question": "x"}` }), nil, "", `record 700: missing field "answer"`},
		{"refused, then malformed", with("both.jsonl", func(ls []string) { ls[5] = `{"question": "x"}`; ls[900] = `[1]` }), nil, "", "both.jsonl: line 901: not a JSON object"},
		{"json refused", jsonWith("refused.json", func(ls []string) { ls[700] = `{"question": "x"}` }), nil, "", `record 700: missing field "answer"`},
		{"json refused, then malformed", jsonWith("both.json", func(ls []string) { ls[5] = `{"question": "x"}`; ls[900] = `{"question": }` }), nil, "", "both.json: invalid JSON"},
		{"json not an object", jsonWith("arr.json", func(ls []string) { ls[300] = `[1]` }), &seed, "", "arr.json: element 300: not a JSON object"},
		{"missing", filepath.Join(dir, "nope.jsonl"), nil, "", "no such file"},
		{"csv fields", filepath.Join(dir, "bad.csv"), nil, "", "bad.csv: line 1504: wrong number of fields"},
		{"csv fields+seed", filepath.Join(dir, "bad.csv"), &seed, "", "bad.csv: line 1504: wrong number of fields"},
		{"changed", with("changed.jsonl", func(ls []string) { ls[5] = `{"question": "x"}` }), nil, filepath.Join(dir, "one.jsonl"), "the data changed since the job was compiled"},
	}
	writeData(t, filepath.Join(dir, "one.jsonl"), strings.Join(lines, "\n")+"\n")
	// Each record takes two lines (the answer's newline): record 751
	// (0-based) starts on line 2 + 2 × 751 = 1504, after the header.
	writeData(t, filepath.Join(dir, "bad.csv"), strings.Replace(csvOf(t, lines, ','), "\nWhat is 751 plus 2?,", "\nWhat is 751 plus 2?,x,", 1))
	for _, c := range cases {
		p := itemsPlan(c.data, 4, nil, c.seed)
		if c.pin != "" {
			d, err := dataset.LocalDigest("", c.pin)
			if err != nil {
				t.Fatal(err)
			}
			d.Spec = c.data
			p.Benchmarks[0].LocalData = dataset.PinsOf([]*dataset.Dataset{d})
		}
		_, _, wantErr := loadShard(t, p, 1, true, 0)
		_, _, gotErr := loadShard(t, p, 1, false, 37)
		if wantErr == nil || !strings.Contains(wantErr.Error(), c.want) {
			t.Fatalf("%s: the whole-set path gave %v, expected %q", c.name, wantErr, c.want)
		}
		if gotErr == nil || gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: streamed: %v\nwant: %v", c.name, gotErr, wantErr)
		}
	}
}

// liveHeap runs f and returns the bytes live on the heap after it, what f
// returned still held.
func liveHeap(f func() any) (uint64, any) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc < before.HeapAlloc {
		return 0, v
	}
	return after.HeapAlloc - before.HeapAlloc, v
}

// TestStreamedShardHeap: shard 0 of 1,000 of a 200,000-item file holds
// its ~200 items, not the dataset: its live heap after loading stays
// under 16 MB (0.2 MB measured). The whole-set path, loading the same
// shard, holds every item (150 MB measured), which the test measures too
// so that the bound is known to tell them apart.
func TestStreamedShardHeap(t *testing.T) {
	const items, bound = 200_000, 16 << 20
	path := filepath.Join(t.TempDir(), "big.jsonl")
	var b strings.Builder
	for i := range items {
		fmt.Fprintf(&b, `{"question": "What is %d plus %d?", "answer": "%d + %d = %d\n#### %d"}`+"\n", i, i%97, i, i%97, i+i%97, i+i%97)
	}
	writeData(t, path, b.String())
	b = strings.Builder{}
	p := itemsPlan(path, 1000, nil, nil)
	for _, whole := range []bool{false, true} {
		n, v := liveHeap(func() any {
			d, _, err := loadShard(t, p, 0, whole, windowRecords)
			if err != nil {
				t.Fatal(err)
			}
			return d
		})
		d := v.(*shardData)
		t.Logf("whole=%v: %d items, %.1f MB live", whole, len(d.mine), float64(n)/1e6)
		if len(d.mine) < items/1000/2 || len(d.mine) > items/1000*2 {
			t.Errorf("whole=%v: shard 0 of 1000 holds %d items, expected about %d", whole, len(d.mine), items/1000)
		}
		if !whole && n > bound {
			t.Errorf("the streamed shard holds %d MB after loading, more than %d MB", n>>20, bound>>20)
		}
		if whole && n <= bound {
			t.Errorf("the whole-set path holds %d MB, within the %d MB bound: the bound tells nothing", n>>20, bound>>20)
		}
		runtime.KeepAlive(d)
	}
}

// Reading a shard's items allocates a bounded number of bytes an item:
// about 5.1 KB a GSM8K line when each line had its own json.Decoder and the
// items' slices grew by appending, 2.0 KB since (issue 23: the dataset is
// read before the first request is sent).
func TestShardItemsAllocBytes(t *testing.T) {
	const n = 10240
	var data strings.Builder
	for i := range n {
		fmt.Fprintf(&data, `{"question": "Item %d: what is %d times 3?", "answer": "It is three times.\n#### %d"}`+"\n", i, i, 3*i)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(path, []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := itemsPlan(path, 1, nil, nil)
	load := func() {
		r, err := newRunner(Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.shardItems(context.Background())
		if err != nil || len(d.mine) != n {
			t.Fatalf("%v items, %v", len(d.mine), err)
		}
	}
	load() // the first run also compiles the benchmark's patterns
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	load()
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f bytes allocated an item", per)
	if per > 3000 {
		t.Errorf("%.0f bytes allocated an item, want at most 3000", per)
	}
}
