package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

func ptr[T any](v T) *T { return &v }

// sampleRows returns n rows with the awkward content a real run produces:
// unicode, newlines, quotes, null correct, empty and multi-key scores.
func sampleRows(n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		r := Row{
			RecipeHash:       "sha256:" + strings.Repeat("ab", 32),
			Benchmark:        []string{"gsm8k", "mmlu_pro", "aime_2025"}[i%3],
			ItemID:           fmt.Sprintf("item-%06d", i/4),
			ItemIdx:          int64(i / 4),
			Repeat:           int64(i % 4),
			Category:         []string{"", "math", "histoire ✓", "物理"}[i%4],
			Reward:           float64(i%7) / 6,
			Extracted:        fmt.Sprintf("%d", i*37%1000),
			Expected:         "line1\nline2 \"quoted\" 'single' \\ tab\t😀",
			FinishReason:     []string{"stop", "length", ""}[i%3],
			PromptTokens:     int64(100 + i%50),
			CompletionTokens: int64(i % 1000),
			ReasoningTokens:  int64(-1 + i%3), // negative too: seen as "unknown" by some endpoints
			LatencyMS:        float64(i) * 1.25,
			Attempts:         1 + int64(i%5/4),
			ErrorCategory:    []string{"", "", "", "timeout"}[i%4],
			Outcome:          []string{"scored", "scored", "scored", "infra_error"}[i%4],
			Seed:             int64(i) * 1_000_003,
			Model:            []string{"meta/llama-3.1-8b-instruct", "nel-sim", "org/modèle"}[i%3],
		}
		if r.ErrorCategory != "" {
			r.ErrorMessage = fmt.Sprintf("http://sim:8000/v1: context deadline exceeded after %d ms", i)
		}
		switch i % 3 {
		case 0:
			r.Correct = ptr(i%2 == 0)
		case 1:
			r.Correct = ptr(true)
		}
		switch i % 4 {
		case 1:
			r.Scores = map[string]float64{"scorer:exact_match": float64(i % 2)}
		case 2:
			r.Scores = map[string]float64{"scorer:exact_match": 1, "scorer:f1": 0.5, "z": math.Inf(1), "a": math.Copysign(0, -1)}
		}
		rows[i] = r
	}
	return rows
}

func sampleTrajectories(n int) []Trajectory {
	ts := make([]Trajectory, n)
	for i := range ts {
		ts[i] = Trajectory{
			RecipeHash:     "sha256:" + strings.Repeat("cd", 32),
			Benchmark:      "gsm8k",
			ItemID:         fmt.Sprintf("item-%06d", i),
			ItemIdx:        int64(i),
			Repeat:         int64(i % 2),
			Request:        fmt.Sprintf(`[{"role":"user","content":"Question %d: \"ünïcödé\"\nAnswer?"}]`, i),
			Response:       fmt.Sprintf("The answer is %d.\n\n#### %d 🎉", i, i),
			Reasoning:      []string{"", "think… step 1\nstep 2"}[i%2],
			ScoringDetails: `{"extracted":"` + strconv.Itoa(i) + `","match":true}`,
			Error:          []string{"", "", "HTTP 500: \"upstream\"\n"}[i%3],
			Model:          "meta/llama-3.1-8b-instruct",
			Retries:        int64(i % 3),
			LatencyMS:      float64(i) / 3,
			JudgeCalls:     []string{"", `[{"judge":"correctness","raw":"{\"score\": 4}","score":4}]`}[i%2],
		}
	}
	return ts
}

// normalize maps empty Scores to nil: an empty map and a nil map are the
// same Parquet value and read back as nil.
func normalize(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		if len(r.Scores) == 0 {
			r.Scores = nil
		}
		if r.Outcome == "" && r.ErrorCategory == "" {
			r.Outcome = "scored" // what a row without one reads back as
		}
		out[i] = r
	}
	return out
}

func withRows(meta map[string]string, n int) map[string]string {
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]string{}
	}
	m[MetaRows] = strconv.Itoa(n)
	return m
}

func TestRowsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.parquet")
	rows := sampleRows(1000)
	rows = append(rows, Row{}) // all zero: empty strings, nil correct, nil scores
	rows = append(rows, Row{Scores: map[string]float64{}, Correct: ptr(false), Reward: math.NaN()})
	rows = append(rows, Row{Extracted: strings.Repeat("x€\n", 1<<20/5), Expected: strings.Repeat("y", 1<<20)})
	meta := map[string]string{
		MetaRecipeHash: "sha256:abc",
		MetaBenchmark:  "gsm8k",
		MetaSimulated:  "true",
		"empty":        "",
		"unicode ✓":    "värde\nmed radbrytning",
		MetaRows:       "999", // overridden by the writer
	}
	if err := WriteRows(path, rows, meta); err != nil {
		t.Fatal(err)
	}
	got, gotMeta, err := ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(rows))
	}
	// NaN != NaN, so compare that row by hand and blank it out.
	nan := len(rows) - 2
	if !math.IsNaN(got[nan].Reward) {
		t.Errorf("row %d reward = %v, want NaN", nan, got[nan].Reward)
	}
	want := normalize(rows)
	want[nan].Reward, got[nan].Reward = 0, 0
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if math.Signbit(got[2].Scores["a"]) != true {
		t.Errorf("-0 score lost its sign: %v", got[2].Scores["a"])
	}
	wantMeta := withRows(meta, len(rows))
	if !maps.Equal(gotMeta, wantMeta) {
		t.Errorf("metadata = %v, want %v", gotMeta, wantMeta)
	}
	m, n, err := ReadMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(rows)) || !maps.Equal(m, wantMeta) {
		t.Errorf("ReadMeta = %v, %d; want %v, %d", m, n, wantMeta, len(rows))
	}
}

func TestTrajectoriesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trajectories.parquet")
	ts := sampleTrajectories(500)
	ts = append(ts, Trajectory{}, Trajectory{Response: strings.Repeat("ж", 1<<19), Reasoning: strings.Repeat("\x00\xff", 1<<19)})
	if err := WriteTrajectories(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	got, meta, err := ReadTrajectories(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ts) {
		for i := range ts {
			if i >= len(got) || !reflect.DeepEqual(got[i], ts[i]) {
				t.Fatalf("%d trajectories; first difference at %d", len(got), i)
			}
		}
		t.Fatalf("read %d trajectories, wrote %d", len(got), len(ts))
	}
	if want := withRows(nil, len(ts)); !maps.Equal(meta, want) {
		t.Errorf("metadata = %v, want %v", meta, want)
	}
}

func TestEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.parquet")
	if err := WriteRows(path, nil, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	rows, meta, err := ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 || meta["k"] != "v" || meta[MetaRows] != "0" {
		t.Errorf("got %d rows, meta %v", len(rows), meta)
	}
}

// TestLayout checks the file against the Parquet spec independently of our
// reader: column names, physical and logical types, repetition, the MAP
// annotation, zstd, row groups of at most 64Ki rows and sorted metadata.
func TestLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.parquet")
	const n = 2*maxRowGroupRows + 5
	if err := WriteRows(path, sampleRows(n), map[string]string{"b": "2", "a": "1", "c": "3"}); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	var names []string
	for i := range md.Schema.NumColumns() {
		names = append(names, md.Schema.Column(i).Path())
	}
	wantNames := "recipe_hash benchmark item_id item_idx repeat category reward correct extracted expected finish_reason prompt_tokens completion_tokens reasoning_tokens latency_ms attempts error_category seed scores.key_value.key scores.key_value.value outcome error_message model"
	if got := strings.Join(names, " "); got != wantNames {
		t.Errorf("columns:\n got %s\nwant %s", got, wantNames)
	}
	for i := range md.Schema.NumColumns() {
		c := md.Schema.Column(i)
		var want parquet.Type
		switch c.Name() {
		case "item_idx", "repeat", "prompt_tokens", "completion_tokens", "reasoning_tokens", "attempts", "seed":
			want = parquet.Types.Int64
		case "reward", "latency_ms", "value":
			want = parquet.Types.Double
		case "correct":
			want = parquet.Types.Boolean
		default:
			want = parquet.Types.ByteArray
			if _, ok := c.LogicalType().(schema.StringLogicalType); !ok {
				t.Errorf("%s: logical type %v, want String", c.Path(), c.LogicalType())
			}
		}
		if c.PhysicalType() != want {
			t.Errorf("%s: %v, want %v", c.Path(), c.PhysicalType(), want)
		}
		// correct is NULL where not binary, category where there is none.
		wantOpt := c.Name() == "correct" || c.Name() == "category"
		if got := c.SchemaNode().RepetitionType() == parquet.Repetitions.Optional; got != wantOpt {
			t.Errorf("%s: optional = %v, want %v", c.Path(), got, wantOpt)
		}
	}
	scores := md.Schema.Root().Field(md.Schema.Root().NumFields() - 4) // before outcome, error_message, model
	if _, ok := scores.LogicalType().(schema.MapLogicalType); !ok || scores.Name() != "scores" {
		t.Errorf("field %s has logical type %v, want scores, a MAP", scores.Name(), scores.LogicalType())
	}
	if got := rdr.NumRowGroups(); got != 3 {
		t.Errorf("%d row groups, want 3", got)
	}
	for g := range rdr.NumRowGroups() {
		rg := md.RowGroup(g)
		if rg.NumRows() > maxRowGroupRows {
			t.Errorf("row group %d has %d rows", g, rg.NumRows())
		}
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Compression().String() != "ZSTD" {
				t.Errorf("row group %d column %d: %v", g, c, cc.Compression())
			}
		}
	}
	var keys []string
	for _, kv := range md.KeyValueMetadata() {
		keys = append(keys, kv.Key)
	}
	if got := strings.Join(keys, ","); got != "a,b,c,nel.rows" {
		t.Errorf("metadata keys in order %s", got)
	}
}

func TestDeterministic(t *testing.T) {
	dir := t.TempDir()
	rows := sampleRows(3000)
	meta := map[string]string{"x": "1", "y": "2", "z": "3", MetaModel: "m"}
	var files [][]byte
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("%d.parquet", i))
		if err := WriteRows(p, rows, meta); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	if !bytes.Equal(files[0], files[1]) || !bytes.Equal(files[0], files[2]) {
		t.Error("the same rows and metadata gave different bytes")
	}
}

// failingWriter fails like a full disk after limit bytes.
type failingWriter struct {
	w     io.Writer
	limit int
}

var errDiskFull = errors.New("no space left on device (simulated)")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		n, _ := f.w.Write(p[:f.limit])
		f.limit = 0
		return n, errDiskFull
	}
	f.limit -= len(p)
	return f.w.Write(p)
}

func TestWriteFailureLeavesNothing(t *testing.T) {
	rows := sampleRows(5000)
	var full bytes.Buffer
	if err := encode(&full, rowFields(), rows, nil); err != nil {
		t.Fatal(err)
	}
	// Fail at the start, in the header, in the data, in the footer.
	for _, limit := range []int{0, 3, 1000, full.Len() - 10} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "results.parquet")
			// The whole file passes through bufio in atomicfile.Write, so fail
			// below it: the encoder itself sees the full disk.
			err := atomicfile.Write(path, func(w io.Writer) error {
				return encode(&failingWriter{w: w, limit: limit}, rowFields(), rows, nil)
			})
			if !errors.Is(err, errDiskFull) {
				t.Fatalf("error = %v, want the disk-full error", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			assertDirHolds(t, dir)
		})
	}
}

func TestWriteFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.parquet")
	old := sampleRows(10)
	if err := WriteRows(path, old, map[string]string{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		return encode(&failingWriter{w: w, limit: 2000}, rowFields(), sampleRows(5000), nil)
	})
	if err == nil {
		t.Fatal("write through a failing writer succeeded")
	}
	assertDirHolds(t, dir, "results.parquet")
	got, meta, err := ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(old) || meta["v"] != "1" {
		t.Errorf("old file changed: %d rows, meta %v", len(got), meta)
	}
}

func TestWriteMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "results.parquet")
	err := WriteRows(path, sampleRows(3), nil)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error = %v, want one naming %s", err, path)
	}
}

func TestWriteReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	path := filepath.Join(dir, "results.parquet")
	if err := WriteRows(path, sampleRows(3), nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error = %v, want one naming %s", err, path)
	}
	assertDirHolds(t, dir)
}

// assertDirHolds fails unless dir holds exactly names (no temporary files).
func assertDirHolds(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

func TestWrittenFileIsReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.parquet")
	if err := WriteRows(path, sampleRows(2), nil); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o044 != 0o044 {
		t.Errorf("mode %v: results should be readable by group and others", st.Mode())
	}
}

// TestReadForeign checks that files that are not ours fail with an error
// naming the file and the column.
func TestReadForeign(t *testing.T) {
	dir := t.TempDir()
	traj := filepath.Join(dir, "trajectories.parquet")
	if err := WriteTrajectories(traj, sampleTrajectories(3), nil); err != nil {
		t.Fatal(err)
	}
	rows := filepath.Join(dir, "results.parquet")
	if err := WriteRows(rows, sampleRows(3), nil); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.parquet")
	if err := os.WriteFile(garbage, []byte("not parquet at all, just text"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A results-like file whose reward is a string and correct is required
	// INT32: hand-built with the low-level writer.
	wrong := filepath.Join(dir, "wrong.parquet")
	writeWrongTypes(t, wrong)

	for _, tc := range []struct {
		name string
		read func() error
		want []string
	}{
		{"trajectories as rows", func() error { _, _, err := ReadRows(traj); return err }, []string{traj, `"category"`, "missing"}},
		{"rows as trajectories", func() error { _, _, err := ReadTrajectories(rows); return err }, []string{rows, `"request"`, "missing"}},
		{"garbage", func() error { _, _, err := ReadRows(garbage); return err }, []string{garbage}},
		{"garbage meta", func() error { _, _, err := ReadMeta(garbage); return err }, []string{garbage}},
		{"missing", func() error { _, _, err := ReadRows(filepath.Join(dir, "nope.parquet")); return err }, []string{"nope.parquet"}},
		{"wrong types", func() error { _, _, err := ReadRows(wrong); return err }, []string{wrong, `"item_idx"`, "INT32"}},
	} {
		err := tc.read()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %s", tc.name, err, w)
			}
		}
	}
}

// writeWrongTypes writes Row's columns with item_idx as INT32.
func writeWrongTypes(t *testing.T, path string) {
	t.Helper()
	var fields schema.FieldList
	for _, f := range rowFields() {
		if f.name == "item_idx" {
			fields = append(fields, schema.NewInt32Node(f.name, parquet.Repetitions.Required, -1))
			continue
		}
		sc, err := buildSchema([]field[Row]{f})
		if err != nil {
			t.Fatal(err)
		}
		n := sc.Field(0)
		n.SetParent(nil)
		fields = append(fields, n)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fw, err := file.NewParquetWriterWithError(f, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkWriteRows(b *testing.B) {
	const n = 100_000
	rows := sampleRows(n)
	dir := b.TempDir()
	path := filepath.Join(dir, "results.parquet")
	meta := map[string]string{MetaRecipeHash: "sha256:abc", MetaBenchmark: "gsm8k"}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := WriteRows(path, rows, meta); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkReadRows(b *testing.B) {
	const n = 100_000
	path := filepath.Join(b.TempDir(), "results.parquet")
	if err := WriteRows(path, sampleRows(n), nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := ReadRows(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
