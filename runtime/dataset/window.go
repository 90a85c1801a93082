package dataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Streamer reads a dataset a window of records at a time, so that a
// reader that keeps few of them (one shard of many) holds only those.
type Streamer interface {
	// Stream lists spec's files, once, and returns what reads them a
	// window at a time; false when it cannot stream spec (Load reads it).
	Stream(spec string) (Stream, bool)
}

// Stream reads the files of one spec, as listed when it was made.
type Stream interface {
	// Count returns how many records the files hold, without keeping
	// them.
	Count(ctx context.Context, opts LoadOptions) (int, error)
	// Windows reads the files as Load does and hands fn their records,
	// in order, at most size at a time, each window a Dataset whose
	// Offset says where it starts. It returns what Load returns, less
	// the records. An error of fn stops the calls to fn, not the
	// reading: the files are still read to their end, so that a
	// malformed line after the record fn refused is reported as Load
	// would report it, and the Dataset (digest included) comes back
	// with fn's error.
	Windows(ctx context.Context, opts LoadOptions, size int, fn func(w *Dataset) error) (*Dataset, error)
}

var _ Streamer = (*Loader)(nil)

// Stream streams spec when it is a local file or folder whose data files
// are all JSONL, CSV or TSV (gzipped or not). JSON and Parquet files are
// read whole by Load.
func (l *Loader) Stream(spec string) (Stream, bool) {
	if !IsLocal(spec) {
		return nil, false
	}
	paths, names, err := localFiles(l.opts.BaseDir, spec)
	if err != nil {
		return nil, false
	}
	for _, n := range names {
		if f, _ := formatOf(n); f != fmtJSONL && f != fmtCSV && f != fmtTSV {
			return nil, false
		}
	}
	return &localStream{spec: spec, paths: paths, names: names}, true
}

// localStream is a local spec's files, listed once.
type localStream struct {
	spec         string
	paths, names []string
}

// Count returns how many records the files hold: a JSONL file's lines
// that are not blank (not decoded: a malformed line is counted, and
// Windows reports it), a CSV or TSV file's rows.
func (s *localStream) Count(ctx context.Context, opts LoadOptions) (int, error) {
	n := 0
	for _, path := range s.paths {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := countRecords(path, opts, &n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func countRecords(path string, opts LoadOptions, n *int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	in, err := openText(path, f)
	if err != nil {
		return err
	}
	count := func(Record, int) error { *n++; return nil }
	switch f, _ := formatOf(path); f {
	case fmtCSV, fmtTSV:
		// A quoted field may span lines: the records are counted by
		// reading them (their values are not kept).
		err = scanCSV(skipBOM(in), csvComma(f), opts.Columns, count)
	default:
		err = scanLines(in, func([]byte, int) error { *n++; return nil })
	}
	if err != nil {
		return fmt.Errorf("dataset %s: %w", path, err)
	}
	return nil
}

// window collects records into Datasets of at most size records.
type window struct {
	spec  string
	size  int
	cur   *Dataset
	n     int // records in cur
	fn    func(*Dataset) error
	fnErr error
	pick  bool // the Parts hold Raw
}

func (w *window) add(name string, rec Record, raw []byte, line int) {
	if k := len(w.cur.Parts); k == 0 || w.cur.Parts[k-1].Name != name {
		w.cur.Parts = append(w.cur.Parts, Part{Name: name})
	}
	p := &w.cur.Parts[len(w.cur.Parts)-1]
	p.Records = append(p.Records, rec)
	p.Lines = append(p.Lines, line)
	if w.pick {
		p.Raw = append(p.Raw, raw)
	}
	if w.n++; w.n == w.size {
		w.flush()
	}
}

// flush hands the window to fn (unless fn failed before) and starts the
// next one.
func (w *window) flush() {
	if w.n > 0 && w.fnErr == nil {
		w.fnErr = w.fn(w.cur)
	}
	w.cur = &Dataset{Spec: w.spec, Offset: w.cur.Offset + w.n}
	w.n = 0
}

// Windows implements Stream.
func (s *localStream) Windows(ctx context.Context, opts LoadOptions, size int, fn func(w *Dataset) error) (*Dataset, error) {
	ds := &Dataset{Spec: s.spec}
	w := &window{spec: s.spec, size: max(size, 1), cur: &Dataset{Spec: s.spec}, fn: fn, pick: len(opts.Pick) > 0}
	for i, path := range s.paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum, err := scanFile(path, opts, func(rec Record, raw []byte, line int) error {
			w.add(s.names[i], rec, raw, line)
			if w.n == 0 {
				return ctx.Err() // between windows
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		ds.Parts = append(ds.Parts, Part{Name: s.names[i], SHA256: sum})
	}
	w.flush()
	ds.Digest = Digest(ds.Parts)
	return ds, w.fnErr
}

// csvComma is the separator of a CSV or TSV file.
func csvComma(f format) rune {
	if f == fmtTSV {
		return '\t'
	}
	return ','
}

// scanFile is readFile for a JSONL, CSV or TSV file, handing fn each record instead
// of keeping it (with opts.Pick, a JSONL record as its picked fields and
// its text, see LoadOptions); it returns the sha256 of the file's bytes.
func scanFile(path string, opts LoadOptions, fn func(rec Record, raw []byte, line int) error) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	in := io.TeeReader(f, h)
	text, err := openText(path, in)
	if err != nil {
		return "", err
	}
	n := 0
	counted := func(rec Record, line int) error {
		n++
		return fn(rec, nil, line)
	}
	switch f, _ := formatOf(path); {
	case f == fmtCSV, f == fmtTSV:
		err = scanCSV(skipBOM(text), csvComma(f), opts.Columns, counted)
	case len(opts.Pick) > 0:
		err = pickJSONL(text, opts.Pick, func(rec Record, raw []byte, line int) error {
			n++
			return fn(rec, raw, line)
		})
	default:
		err = scanJSONL(text, counted)
	}
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", path, err)
	}
	if n == 0 {
		return "", fmt.Errorf("dataset %s: no records", path)
	}
	// What the parser left unread (bytes after a gzip stream) is content too.
	if _, err := io.Copy(io.Discard, in); err != nil {
		return "", fmt.Errorf("dataset %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pickJSONL is scanJSONL that hands fn, for a line pick reads, a Record of
// the picked fields and a copy of the line; other lines are decoded whole
// (raw nil), or refused as scanJSONL refuses them.
func pickJSONL(r io.Reader, names []string, fn func(rec Record, raw []byte, line int) error) error {
	if len(names) > 32 {
		return scanJSONL(r, func(rec Record, line int) error { return fn(rec, nil, line) })
	}
	vals := make([]string, len(names))
	return scanLines(r, func(buf []byte, line int) error {
		if pick(buf, names, vals) {
			rec := make(Record, len(names))
			for i, n := range names {
				rec[n] = vals[i]
			}
			return fn(rec, bytes.Clone(buf), line)
		}
		rec, err := decodeObject(buf)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return fn(rec, nil, line)
	})
}
