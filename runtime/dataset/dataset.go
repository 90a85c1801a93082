// Package dataset reads benchmark data: local JSONL, JSON, CSV, TSV and
// Parquet files (gzip too), and hf:// datasets downloaded from the Hugging
// Face Hub into a local cache. It records the sha256 of every byte it read.
package dataset

import "fmt"

// Record is one dataset row. Values are string, json.Number (JSON numbers),
// int64, float64, bool, nil, []any or map[string]any.
type Record = map[string]any

// Dataset is what one spec loaded to.
type Dataset struct {
	// Spec is the spec as given (a path or an hf:// URI).
	Spec string
	// Parts holds the records file by file, in load order.
	Parts []Part
	// Digest is "sha256:<hex>" over the files' names and sha256s, in order.
	Digest string
	// Revision is the Hub commit the files came from ("" for local files).
	Revision string
	// Offset is, for a window of a dataset (Stream.Windows), how many
	// of the dataset's records come before the window's first; 0 for a
	// whole dataset.
	Offset int
}

// Part is the records of one file.
type Part struct {
	// Name is the file's name relative to the spec's root (for a Hub
	// dataset, its path in the repository).
	Name    string
	SHA256  string
	Records []Record
	// Lines holds, for line-oriented files (JSONL, CSV, TSV), the line
	// each record starts on, so that messages can point into the file;
	// nil for the other formats.
	Lines []int
	// First is, for a part of a window (Stream.Windows), how many records
	// of its file come before the part's first; 0 for a whole file.
	First int
	// Raw holds, for a window read with LoadOptions.Pick, the JSON text
	// of each record that holds only the picked fields (nil for a record
	// decoded whole); DecodeRecord decodes it. Nil otherwise.
	Raw [][]byte
}

// Where names record i of p for a person: "data.jsonl:12" where the format
// has lines, else "data.parquet record 12" (1-based).
func (p *Part) Where(i int) string {
	if i < len(p.Lines) {
		return fmt.Sprintf("%s:%d", p.Name, p.Lines[i])
	}
	return fmt.Sprintf("%s record %d", p.Name, p.First+i+1)
}

// LoadOptions adjust how files are parsed.
type LoadOptions struct {
	// Columns, when set, names the columns of CSV/TSV files that have no
	// header row.
	Columns []string
	// Pick, for Streamer windows, names the fields a reader needs of
	// every record, each as a string: a JSON record holding them all is
	// then checked but not decoded; its Record holds only them and
	// Part.Raw its text. Other records are decoded whole.
	Pick []string
}

// DecodeRecord decodes the JSON text of a record (Part.Raw) whole, as a
// window without Pick holds it.
func DecodeRecord(raw []byte) (Record, error) { return decodeObject(raw) }

// Records returns all records of d, in order.
func (d *Dataset) Records() []Record {
	var n int
	for _, p := range d.Parts {
		n += len(p.Records)
	}
	out := make([]Record, 0, n)
	for _, p := range d.Parts {
		out = append(out, p.Records...)
	}
	return out
}
