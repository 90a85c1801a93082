package dataset

import (
	"github.com/nel-eval/nel/internal/sharedtest"

	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func localLoader(dir string) *Loader {
	return NewLoader(Options{BaseDir: dir, CacheDir: filepath.Join(dir, ".cache"), Offline: true})
}

func TestLocalFormats(t *testing.T) {
	dir := t.TempDir()
	want := []Record{
		{"q": "a, \"b\"", "n": json.Number("12345678901234567890"), "f": json.Number("1.50")},
		{"q": "second", "n": json.Number("-2"), "f": json.Number("0")},
	}
	wantStr := []Record{{"q": "a, \"b\"", "n": "12345678901234567890"}, {"q": "second", "n": "-2"}}
	jsonl := []byte("{\"q\":\"a, \\\"b\\\"\",\"n\":12345678901234567890,\"f\":1.50}\n\n  \r\n{\"q\":\"second\",\"n\":-2,\"f\":0}")
	arr := []byte(`[{"q":"a, \"b\"","n":12345678901234567890,"f":1.50},{"q":"second","n":-2,"f":0}]`)
	wrapped := []byte(`{"version":"1","count":2,"data":[{"q":"a, \"b\"","n":12345678901234567890,"f":1.50},{"q":"second","n":-2,"f":0}]}`)
	csvData := []byte("\ufeffq,n\r\n\"a, \"\"b\"\"\",12345678901234567890\r\nsecond,-2\r\n")
	tsvData := []byte("q\tn\na, \"b\"\t12345678901234567890\nsecond\t-2\n")
	for _, tc := range []struct {
		name string
		data []byte
		want []Record
	}{
		{"x.jsonl", jsonl, want},
		{"x.ndjson", jsonl, want},
		{"x.jsonl.gz", gz(t, jsonl), want},
		{"x.json", arr, want},
		{"wrapped.json", wrapped, want},
		{"x.JSON.GZ", gz(t, arr), want},
		{"x.csv", csvData, wantStr},
		{"x.csv.gz", gz(t, csvData), wantStr},
		{"x.tsv", tsvData, wantStr},
		{"x.tab", tsvData, wantStr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, dir, tc.name, tc.data)
			ds, err := localLoader(dir).Load(context.Background(), tc.name, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ds.Records(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
			sum := sha256.Sum256(tc.data)
			if len(ds.Parts) != 1 || ds.Parts[0].Name != tc.name || ds.Parts[0].SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("parts = %+v, want one named %s with the sha256 of the stored bytes", ds.Parts, tc.name)
			}
			line := tc.name + "\t" + hex.EncodeToString(sum[:]) + "\n"
			d := sha256.Sum256([]byte(line))
			if ds.Digest != "sha256:"+hex.EncodeToString(d[:]) || ds.Spec != tc.name || ds.Revision != "" {
				t.Errorf("digest %s spec %s revision %q", ds.Digest, ds.Spec, ds.Revision)
			}
		})
	}
}

func TestLocalColumnsAndAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "h.tsv", []byte("What is \"2\"+2?\t4\nand 3+3?\t6\n"))
	ds, err := NewLoader(Options{BaseDir: "/nonexistent", Offline: true}).Load(context.Background(), p, LoadOptions{Columns: []string{"question", "answer"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{{"question": "What is \"2\"+2?", "answer": "4"}, {"question": "and 3+3?", "answer": "6"}}
	if got := ds.Records(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v", got)
	}
}

func TestLocalDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "d/b_test.csv", []byte("x\n2\n3\n"))
	writeFile(t, dir, "d/a_test.csv", []byte("x\n1\n"))
	writeFile(t, dir, "d/c.jsonl", []byte("{\"x\":\"4\"}\n"))
	writeFile(t, dir, "d/LICENSE", []byte("MIT"))
	writeFile(t, dir, "d/SHA256SUMS", []byte("..."))
	writeFile(t, dir, "d/sub/z.csv", []byte("x\n9\n"))
	ds, err := localLoader(dir).Load(context.Background(), "d", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ds.Parts {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"a_test.csv", "b_test.csv", "c.jsonl"}) {
		t.Errorf("parts %v", names)
	}
	if got := ds.Records(); !reflect.DeepEqual(got, []Record{{"x": "1"}, {"x": "2"}, {"x": "3"}, {"x": "4"}}) {
		t.Errorf("records %v", got)
	}
	// Empty directory.
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	if _, err := localLoader(dir).Load(context.Background(), "empty", LoadOptions{}); err == nil || !strings.Contains(err.Error(), "no data files") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestLocalBadInput(t *testing.T) {
	good := gz(t, []byte(strings.Repeat("{\"a\":1}\n", 2000)))
	streamed := 0
	for _, tc := range []struct {
		name string
		data []byte
		want []string // all must appear in the error
	}{
		{"trunc.jsonl.gz", good[:len(good)/2], []string{"trunc.jsonl.gz", "truncated"}},
		{"notgz.jsonl.gz", []byte("{\"a\":1}\n"), []string{"notgz.jsonl.gz", "gunzip"}},
		{"arr.jsonl", []byte("{\"a\":1}\n[1,2]\n"), []string{"arr.jsonl", "line 2", "not a JSON object"}},
		{"str.jsonl", []byte("{\"a\":1}\n\n\"x\"\n"), []string{"line 3", "not a JSON object"}},
		{"half.jsonl", []byte("{\"a\":1}\n{\"a\":"), []string{"half.jsonl", "line 2", "invalid JSON"}},
		{"two.jsonl", []byte("{\"a\":1} {\"b\":2}\n"), []string{"line 1", "after the first value"}},
		{"fields.csv", []byte("a,b\n1,2\n3\n"), []string{"fields.csv", "line 3", "wrong number of fields"}},
		{"fields.tsv", []byte("a\tb\n1\t2\n3\t4\t5\n"), []string{"fields.tsv", "line 3", "wrong number of fields"}},
		{"quote.csv", []byte("a,b\n1,\"2\n"), []string{"quote.csv", "line"}},
		{"dup.csv", []byte("a,a\n1,2\n"), []string{"dup.csv", "twice"}},
		{"empty.jsonl", nil, []string{"empty.jsonl", "empty file"}},
		{"empty.csv", nil, []string{"empty.csv", "empty file"}},
		{"blank.jsonl", []byte("\n\n"), []string{"blank.jsonl", "no records"}},
		{"header.csv", []byte("a,b\n"), []string{"header.csv", "no records"}},
		{"emptygz.jsonl.gz", gz(t, nil), []string{"emptygz.jsonl.gz", "empty"}},
		{"scalar.json", []byte("3"), []string{"scalar.json", "array of objects"}},
		{"mixed.json", []byte(`[{"a":1},2]`), []string{"mixed.json", "element 1", "not a JSON object"}},
		{"twoarrays.json", []byte(`{"x":[{"a":1}],"y":[{"a":2}]}`), []string{"twoarrays.json", "exactly one"}},
		{"data.xlsx", []byte("PK.."), []string{"data.xlsx", "unknown file type", ".jsonl", ".parquet"}},
		{"bad.parquet", []byte("a,b\n1,2\n"), []string{"bad.parquet", "not a Parquet file"}},
		{"trunc.parquet", []byte("PAR1\x00\x00\x00\x00\x10\x00\x00\x00PAR1"), []string{"trunc.parquet", "truncated"}},
		{"short.parquet", []byte("PAR1\x00"), []string{"short.parquet", "truncated"}},
		{"empty.parquet", nil, []string{"empty.parquet", "empty file"}},
		{"none.json", []byte(" [ ] "), []string{"none.json", "no records"}},
		{"comma.json", []byte(`[{"a":1},]`), []string{"comma.json", "invalid JSON"}},
		{"open.json", []byte(`[{"a":1}`), []string{"open.json", "invalid JSON"}},
		{"after.json", []byte(`[{"a":1}] [2]`), []string{"after.json", "after the first value"}},
		{"nested.json", []byte(`[{"a":1},[{"b":2}]]`), []string{"nested.json", "element 1", "not a JSON object"}},
		{"bad.json.gz", gz(t, []byte(`[{"a":1}, {"a":}]`)), []string{"bad.json.gz", "invalid JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, tc.name, tc.data)
			l := localLoader(dir)
			ds, err := l.Load(context.Background(), tc.name, LoadOptions{})
			if err == nil {
				t.Fatalf("no error; %d records", len(ds.Records()))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			// A file read a window at a time fails as Load does.
			if st, ok := l.Stream(context.Background(), tc.name); ok {
				streamed++
				_, serr := st.Windows(context.Background(), LoadOptions{Pick: []string{"a"}}, 2, func(*Dataset) error { return nil })
				if serr == nil || serr.Error() != err.Error() {
					t.Errorf("streamed: %v\nLoad: %v", serr, err)
				}
			}
		})
	}
	if streamed < 20 {
		t.Errorf("%d of the files were streamed, want the JSONL, CSV, TSV, JSON array and Parquet ones", streamed)
	}
	t.Run("missing", func(t *testing.T) {
		_, err := localLoader(t.TempDir()).Load(context.Background(), "nope.jsonl", LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), "nope.jsonl") || !os.IsNotExist(unwrapAll(err)) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("empty-spec", func(t *testing.T) {
		if _, err := localLoader(t.TempDir()).Load(context.Background(), "", LoadOptions{}); err == nil {
			t.Error("no error")
		}
	})
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// sharedDatasets is the project's folder of real benchmark files.
func sharedDatasets(t *testing.T) string { return sharedtest.Datasets(t) }

func TestRealDatasets(t *testing.T) {
	dir := sharedDatasets(t)
	l := localLoader(dir)
	for _, tc := range []struct {
		spec  string
		cols  []string
		parts int
		rows  int
		keys  []string
	}{
		{"gsm8k/test.jsonl", nil, 1, 1319, []string{"question", "answer"}},
		{"mgsm", []string{"question", "answer"}, 11, 11 * 250, []string{"question", "answer"}},
		{"mmlu/test", nil, 57, 14042, []string{"question", "choice0", "choice1", "choice2", "choice3", "answer"}},
		{"mmlu_pro/test.jsonl", nil, 1, 12032, []string{"question_id", "question", "options", "answer", "answer_index", "category", "src"}},
		{"math500/test.jsonl", nil, 1, 500, []string{"problem", "solution", "answer", "subject", "level", "unique_id"}},
		{"xstest/xstest_prompts.csv", nil, 1, 450, []string{"id", "prompt", "type", "label", "focus", "note"}},
		{"simpleqa/simple_qa_test_set.csv", nil, 1, 4326, []string{"metadata", "problem", "answer"}},
		{"humaneval/HumanEval.jsonl.gz", nil, 1, 164, []string{"task_id", "prompt", "canonical_solution", "test", "entry_point"}},
		{"ifeval/input_data.jsonl", nil, 1, 541, []string{"key", "prompt", "instruction_id_list", "kwargs"}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			ds, err := l.Load(context.Background(), tc.spec, LoadOptions{Columns: tc.cols})
			if err != nil {
				t.Fatal(err)
			}
			recs := ds.Records()
			if len(ds.Parts) != tc.parts || len(recs) != tc.rows {
				t.Fatalf("%d parts, %d rows; want %d, %d", len(ds.Parts), len(recs), tc.parts, tc.rows)
			}
			for i, r := range recs {
				for _, k := range tc.keys {
					if _, ok := r[k]; !ok {
						t.Fatalf("row %d has no %q: %v", i, k, r)
					}
				}
			}
			for _, p := range ds.Parts {
				file := filepath.Join(dir, tc.spec)
				if tc.parts > 1 || p.Name != filepath.Base(tc.spec) {
					file = filepath.Join(dir, tc.spec, p.Name)
				}
				if want := sha256sum(t, file); p.SHA256 != want {
					t.Errorf("%s: SHA256 %s, sha256sum says %s", p.Name, p.SHA256, want)
				}
			}
			again, err := l.Load(context.Background(), tc.spec, LoadOptions{Columns: tc.cols})
			if err != nil || again.Digest != ds.Digest {
				t.Errorf("digest not reproducible: %s then %s (%v)", ds.Digest, again.Digest, err)
			}
		})
	}
}

// sha256sum hashes path with the sha256sum tool when installed (an
// independent implementation), else with crypto/sha256.
func sha256sum(t *testing.T, path string) string {
	t.Helper()
	if out, err := exec.Command("sha256sum", path).Output(); err == nil {
		return strings.Fields(string(out))[0]
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestRealMGSM checks the TSVs, which hold bare quotes, field by field
// against a plain split of each line on the tab.
func TestRealMGSM(t *testing.T) {
	dir := filepath.Join(sharedDatasets(t), "mgsm")
	names, _ := filepath.Glob(filepath.Join(dir, "*.tsv"))
	if len(names) != 11 {
		t.Fatalf("%d mgsm TSVs, want 11", len(names))
	}
	l := localLoader(dir)
	for _, name := range names {
		ds, err := l.Load(context.Background(), filepath.Base(name), LoadOptions{Columns: []string{"question", "answer"}})
		if err != nil {
			t.Fatal(err)
		}
		recs := ds.Records()
		if len(recs) != 250 {
			t.Fatalf("%s: %d rows, want 250", name, len(recs))
		}
		f, _ := os.Open(name)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		i := 0
		for sc.Scan() {
			cells := strings.Split(sc.Text(), "\t")
			if len(cells) != 2 {
				t.Fatalf("%s line %d: %d cells", name, i+1, len(cells))
			}
			if recs[i]["question"] != cells[0] || recs[i]["answer"] != cells[1] {
				t.Errorf("%s line %d: got %q / %q, the line has %q / %q", name, i+1, recs[i]["question"], recs[i]["answer"], cells[0], cells[1])
			}
			i++
		}
		f.Close()
		if i != 250 {
			t.Errorf("%s: %d lines", name, i)
		}
	}
}
