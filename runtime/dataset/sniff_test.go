package dataset

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSniff: the start of each file is parsed as Load parses it; what lies
// past the first records is not read.
func TestSniff(t *testing.T) {
	dir := t.TempDir()
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.String()
	}
	obj := `{"question": "q", "answer": "a"}` + "\n"
	files := map[string]string{
		"ok.jsonl":       obj + obj,
		"late.jsonl":     strings.Repeat(obj, 6) + "garbage\n",
		"bad.jsonl":      obj + "{\"question\": \"q\",\n",
		"array.jsonl":    "[1, 2]\n",
		"blank.jsonl":    "\n\n",
		"empty.jsonl":    "",
		"ok.jsonl.gz":    gz(obj),
		"bad.jsonl.gz":   gz("nope\n"),
		"notgz.jsonl.gz": obj,
		"ok.csv":         "\ufeffquestion,answer\n\"multi\nline\",a\n",
		"fields.csv":     "question,answer\nq,a,extra\n",
		"dup.csv":        "q,q\n1,2\n",
		"ok.tsv":         "question\tanswer\nq\t\"a\n",
		"ok.json":        "  [" + obj + "]",
		"object.json":    "\ufeff{\"rows\": []}",
		"bad.json":       "question: q\n",
		"ok.parquet":     "PAR1" + strings.Repeat("x", 8) + "PAR1",
		"cut.parquet":    "PAR1" + strings.Repeat("x", 8),
		"text.parquet":   obj,
		"ok.parquet.gz":  gz("PAR1xxxx"),
		"data.xlsx":      "x",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{"ok.jsonl", ""},
		{"late.jsonl", ""}, // the garbage is on line 7, past the first records
		{"bad.jsonl", "bad.jsonl: line 2: "},
		{"array.jsonl", "line 1: not a JSON object (got an array)"},
		{"blank.jsonl", "no records"},
		{"empty.jsonl", "empty file"},
		{"ok.jsonl.gz", ""},
		{"bad.jsonl.gz", "line 1: "},
		{"notgz.jsonl.gz", "gunzip: "},
		{"ok.csv", ""},
		{"fields.csv", "line 2: wrong number of fields"},
		{"dup.csv", `header column "q" appears twice`},
		{"ok.tsv", ""},
		{"ok.json", ""},
		{"object.json", ""},
		{"bad.json", "not JSON: expected an array of objects, or an object holding one"},
		{"ok.parquet", ""},
		{"cut.parquet", "truncated Parquet file (no PAR1 magic at the end)"},
		{"text.parquet", "not a Parquet file (no PAR1 magic at the start)"},
		{"ok.parquet.gz", ""},
		{"data.xlsx", "unknown file type"},
		{"missing.jsonl", "no such file or directory"},
	} {
		err := Sniff(dir, c.spec)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Sniff(%s) = %v, want nil", c.spec, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Sniff(%s) = %v, want %q", c.spec, err, c.want)
		}
	}
}
