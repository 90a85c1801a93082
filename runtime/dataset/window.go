package dataset

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// Streamer reads a dataset a window of records at a time, so that a
// reader that keeps few of them (one shard of many) holds only those.
type Streamer interface {
	// Stream lists spec's files, once, and returns what reads them a
	// window at a time; false when it cannot stream spec (Load reads it,
	// and says what is wrong with it). For a Hub spec, listing the files
	// resolves its revision and downloads what the cache lacks.
	Stream(ctx context.Context, spec string) (Stream, bool)
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

// Stream streams spec when its data files, local or a Hub dataset's,
// are all files scanFile reads a record at a time (streamable).
func (l *Loader) Stream(ctx context.Context, spec string) (Stream, bool) {
	if strings.HasPrefix(spec, "hf://") {
		return l.hubStream(ctx, spec)
	}
	if !IsLocal(spec) {
		return nil, false
	}
	paths, names, err := localFiles(l.opts.BaseDir, spec)
	if err != nil {
		return nil, false
	}
	for i, n := range names {
		if !streamable(paths[i], n) {
			return nil, false
		}
	}
	return &localStream{spec: spec, paths: paths, names: names}, true
}

// streamable says whether scanFile reads the file at path a record at a
// time: JSONL, CSV and TSV files, JSON files whose top level is an array
// (an object holding the array is read whole: which of its fields holds
// the records is known only at its end), Parquet files not gzipped.
func streamable(path, name string) bool {
	switch f, _ := formatOf(name); f {
	case fmtJSONL, fmtCSV, fmtTSV:
		return true
	case fmtParquet:
		return !isGzip(name)
	case fmtJSON:
		return jsonArray(path)
	}
	return false
}

// jsonArray says whether the JSON file at path starts with '[' (after
// white space, a byte order mark being an error Load reports).
func jsonArray(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	in, err := openText(path, f)
	if err != nil {
		return false
	}
	br := in.(*bufio.Reader)
	for {
		c, err := br.ReadByte()
		switch {
		case err != nil:
			return false
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		return c == '['
	}
}

// localStream is a spec's files, listed once: a local spec's, or a Hub
// spec's in the cache.
type localStream struct {
	spec         string
	paths, names []string
	// For a Hub spec: the commit, and each file's sha256 as the Hub gave
	// it ("" when it did not).
	revision string
	hubSHA   []string
}

// Count returns how many records the files hold: a JSONL file's lines
// that are not blank (not decoded: a malformed line is counted, and
// Windows reports it), a CSV or TSV file's rows.
func (s *localStream) Count(ctx context.Context, opts LoadOptions) (int, error) {
	n := 0
	for i, path := range s.paths {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := countRecords(path, opts, &n); err != nil {
			if i < len(s.hubSHA) && s.hubSHA[i] != "" {
				_, err = s.checkHub(i, "", err)
			}
			return 0, err
		}
	}
	return n, nil
}

func countRecords(path string, opts LoadOptions, n *int) error {
	if isFormat(path, fmtParquet) {
		return countParquet(path, n)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	in, err := openText(path, f)
	if err != nil {
		return err
	}
	switch f, _ := formatOf(path); f {
	case fmtCSV, fmtTSV:
		// A quoted field may span lines: the records are counted by
		// reading them (their values are not kept).
		err = scanCSV(skipBOM(in), csvComma(f), opts.Columns, func(Record, int) error { *n++; return nil })
	case fmtJSON:
		if err = countJSONArray(in, n); err != nil {
			// Load words what is wrong with the file.
			if _, _, _, lerr := readFile(path, opts); lerr != nil {
				return lerr
			}
		}
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
	// inFile counts the records of the file being read so far.
	inFile int
}

func (w *window) add(name string, rec Record, raw []byte, line int) {
	if k := len(w.cur.Parts); k == 0 || w.cur.Parts[k-1].Name != name {
		w.cur.Parts = append(w.cur.Parts, Part{Name: name, First: w.inFile})
	}
	p := &w.cur.Parts[len(w.cur.Parts)-1]
	p.Records = append(p.Records, rec)
	if line > 0 {
		p.Lines = append(p.Lines, line)
	}
	w.inFile++
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
	ds := &Dataset{Spec: s.spec, Revision: s.revision}
	w := &window{spec: s.spec, size: max(size, 1), cur: &Dataset{Spec: s.spec}, fn: fn, pick: len(opts.Pick) > 0}
	for i, path := range s.paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w.inFile = 0
		sum, err := scanFile(ctx, path, opts, func(rec Record, raw []byte, line int) error {
			w.add(s.names[i], rec, raw, line)
			if w.n == 0 {
				return ctx.Err() // between windows
			}
			return nil
		})
		if i < len(s.hubSHA) && s.hubSHA[i] != "" {
			sum, err = s.checkHub(i, sum, err)
		}
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

// scanFile is readFile for a file Stream reads (streamable), handing fn
// each record instead of keeping it (with opts.Pick, a JSON record as its
// picked fields and its text, see LoadOptions); it returns the sha256 of
// the file's bytes.
func scanFile(ctx context.Context, path string, opts LoadOptions, fn func(rec Record, raw []byte, line int) error) (string, error) {
	n := 0
	counted := func(rec Record, raw []byte, line int) error {
		n++
		return fn(rec, raw, line)
	}
	var sum string
	err := func() error {
		if f, _ := formatOf(path); f == fmtParquet {
			var err error
			sum, err = scanParquetFile(path, counted)
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
		defer f.Close()
		h := sha256.New()
		in := io.TeeReader(f, h)
		text, err := openText(path, in)
		if err != nil {
			return err
		}
		if err := scanText(path, text, opts, counted); err != nil {
			return err
		}
		// What the parser left unread (bytes after a gzip stream) is
		// content too.
		if _, err := io.Copy(io.Discard, in); err != nil {
			return fmt.Errorf("dataset %s: %w", path, err)
		}
		sum = hex.EncodeToString(h.Sum(nil))
		return nil
	}()
	switch {
	case err != nil && ctx.Err() == nil && isFormat(path, fmtJSON):
		// The JSON decoder words some errors of a stream unlike those of
		// a whole value: Load, reading the file again, says what it
		// says.
		if _, _, _, lerr := readFile(path, opts); lerr != nil {
			return "", lerr
		}
		return "", err
	case err != nil:
		return "", err
	case n == 0:
		return "", fmt.Errorf("dataset %s: no records", path)
	}
	return sum, nil
}

func isFormat(path string, want format) bool {
	f, _ := formatOf(path)
	return f == want
}

// scanText hands fn each record of text, the content of the JSONL, CSV,
// TSV or JSON array file at path.
func scanText(path string, text io.Reader, opts LoadOptions, fn func(rec Record, raw []byte, line int) error) error {
	var err error
	switch f, _ := formatOf(path); {
	case f == fmtCSV, f == fmtTSV:
		err = scanCSV(skipBOM(text), csvComma(f), opts.Columns, func(rec Record, line int) error { return fn(rec, nil, line) })
	case f == fmtJSON:
		err = scanJSONArray(text, opts.Pick, fn)
	default:
		err = pickJSONL(text, opts.Pick, fn)
	}
	if err != nil {
		return fmt.Errorf("dataset %s: %w", path, err)
	}
	return nil
}

// pickJSONL is scanJSONL that hands fn, for a line pick reads (names
// set), a Record of the picked fields and a copy of the line; other lines
// are decoded whole (raw nil), or refused as scanJSONL refuses them.
func pickJSONL(r io.Reader, names []string, fn func(rec Record, raw []byte, line int) error) error {
	p := newPicker(names)
	return scanLines(r, func(buf []byte, line int) error {
		rec, raw, err := p.record(buf)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return fn(rec, raw, line)
	})
}

// recordPicker reads records with pick when it is given names.
type recordPicker struct {
	names, vals []string
}

func newPicker(names []string) *recordPicker {
	if len(names) > 32 {
		names = nil // more than pick's bit set holds: decoded whole
	}
	return &recordPicker{names: names, vals: make([]string, len(names))}
}

// record returns the record whose JSON text is buf: its picked fields and
// a copy of buf when pick reads it, else the whole record (raw nil).
func (p *recordPicker) record(buf []byte) (rec Record, raw []byte, err error) {
	if len(p.names) > 0 && pick(buf, p.names, p.vals) {
		rec := make(Record, len(p.names))
		for i, n := range p.names {
			rec[n] = p.vals[i]
		}
		return rec, bytes.Clone(buf), nil
	}
	rec, err = decodeObject(buf)
	return rec, nil, err
}
