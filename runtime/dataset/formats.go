package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/jsonany"
)

type format int

const (
	fmtJSONL format = iota + 1
	fmtJSON
	fmtCSV
	fmtTSV
	fmtParquet
)

// extensions maps a file extension (before an optional .gz) to its format.
var extensions = map[string]format{
	".jsonl":   fmtJSONL,
	".ndjson":  fmtJSONL,
	".json":    fmtJSON,
	".csv":     fmtCSV,
	".tsv":     fmtTSV,
	".tab":     fmtTSV,
	".parquet": fmtParquet,
}

func supportedList() string {
	return "supported: .jsonl, .ndjson, .json, .csv, .tsv, .tab, .parquet, each optionally .gz"
}

// formatOf returns the format of a file name and whether it is known.
func formatOf(name string) (format, bool) {
	lower := strings.ToLower(name)
	lower = strings.TrimSuffix(lower, ".gz")
	f, ok := extensions[filepath.Ext(lower)]
	return f, ok
}

func isGzip(name string) bool {
	return strings.HasSuffix(strings.ToLower(name), ".gz")
}

// MaxLineBytes is the most a line of a JSONL file may hold. A longer line
// is refused with its number, before it is read whole: one runaway line
// (a 50 MB base64 blob) must not cost the loader a gigabyte. Real items,
// long-context ones included, are far below it.
const MaxLineBytes = 32 << 20

// parseFile parses r, the bytes of the file at path, by its extension. It
// returns the records and, for line-oriented formats (JSONL, CSV, TSV), the
// line each record starts on (nil otherwise). JSONL is read line by line;
// the other formats are read whole.
func parseFile(path string, r io.Reader, opts LoadOptions) ([]Record, []int, error) {
	f, ok := formatOf(filepath.Base(path))
	if !ok {
		return nil, nil, fmt.Errorf("dataset %s: unknown file type (%s)", path, supportedList())
	}
	in, err := openText(path, r)
	if err != nil {
		return nil, nil, err
	}
	var (
		recs  []Record
		lines []int
	)
	if f == fmtJSONL {
		recs, lines, err = parseJSONL(in)
	} else {
		var data []byte
		if data, err = io.ReadAll(in); err != nil {
			return nil, nil, fmt.Errorf("dataset %s: %w", path, err)
		}
		switch f {
		case fmtJSON:
			recs, err = parseJSON(data)
		case fmtCSV:
			recs, lines, err = parseCSV(data, ',', opts.Columns)
		case fmtTSV:
			recs, lines, err = parseCSV(data, '\t', opts.Columns)
		case fmtParquet:
			recs, err = parseParquet(data)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("dataset %s: no records", path)
	}
	return recs, lines, nil
}

// openText returns a buffered reader of r's content (gunzipped when path
// ends in .gz), refusing a file that is empty, before or after gunzip.
func openText(path string, r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if _, err := br.Peek(1); err == io.EOF {
		return nil, fmt.Errorf("dataset %s: empty file", path)
	}
	if !isGzip(path) {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: gunzip: %w", path, err)
	}
	zbr := bufio.NewReaderSize(gunzipErrors{zr}, 64<<10)
	if _, err := zbr.Peek(1); err == io.EOF {
		return nil, fmt.Errorf("dataset %s: empty file (after gunzip)", path)
	}
	return zbr, nil
}

// gunzipErrors words the errors of a gzip stream as such: a truncated
// file reads as "gunzip: truncated gzip data" wherever the parser was.
type gunzipErrors struct{ r io.Reader }

func (g gunzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	switch {
	case err == nil, err == io.EOF:
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("gunzip: truncated gzip data: %w", err)
	default:
		err = fmt.Errorf("gunzip: %w", err)
	}
	return n, err
}

// parseJSONL reads one JSON object per line; blank lines are skipped. It
// holds one line at a time, and refuses a line above MaxLineBytes as soon
// as it has read that much of it.
func parseJSONL(r io.Reader) ([]Record, []int, error) { return readJSONL(r, 0) }

// readJSONL is parseJSONL that stops after limit records (0: none).
func readJSONL(r io.Reader, limit int) ([]Record, []int, error) {
	return collect(limit, func(fn func(Record, int) error) error { return scanJSONL(r, fn) })
}

// collect keeps the records a scan hands out, and their lines, stopping
// it after limit records (0: none).
func collect(limit int, scan func(fn func(rec Record, line int) error) error) ([]Record, []int, error) {
	var (
		recs  []Record
		lines []int
	)
	err := scan(func(rec Record, line int) error {
		recs = append(recs, rec)
		lines = append(lines, line)
		if len(recs) == limit {
			return errStop
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return recs, lines, nil
}

// errStop, returned by a scan's callback, ends the scan without error.
var errStop = errors.New("stop")

// scanJSONL hands fn each record of r with the line it is on, in order,
// holding one line at a time. An error of fn ends the scan and is
// returned (errStop: nil).
func scanJSONL(r io.Reader, fn func(rec Record, line int) error) error {
	return scanLines(r, func(buf []byte, line int) error {
		rec, err := decodeObject(buf)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return fn(rec, line)
	})
}

// scanLines hands fn each line of r that is not blank, with its number;
// the slice is reused. A line above MaxLineBytes is refused as soon as
// that much of it is read. An error of fn ends the scan and is returned
// (errStop: nil).
func scanLines(r io.Reader, fn func(buf []byte, line int) error) error {
	var buf []byte
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	for line := 1; ; line++ {
		buf = buf[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if len(buf)+len(chunk) > MaxLineBytes {
				return fmt.Errorf("line %d: longer than %d MiB, the most a dataset line may hold", line, MaxLineBytes>>20)
			}
			if len(buf)+len(chunk) > cap(buf) {
				// Grow by doubling: append's gentler growth for large
				// slices would allocate five times a long line.
				grown := make([]byte, len(buf), min(max(2*cap(buf), len(buf)+len(chunk)), MaxLineBytes))
				copy(grown, buf)
				buf = grown
			}
			buf = append(buf, chunk...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			// A read error (a truncated gzip stream) explains a cut line
			// better than the JSON error the cut would give.
			return fmt.Errorf("line %d: %w", line, err)
		}
		if len(bytes.TrimSpace(buf)) > 0 {
			if ferr := fn(buf, line); ferr == errStop {
				return nil
			} else if ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// decodeObject decodes b, which must hold exactly one JSON object. Numbers
// stay json.Number so hashing later keeps them exact.
func decodeObject(b []byte) (Record, error) {
	v, err := decodeValue(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object (got %s)", jsonKind(v))
	}
	return m, nil
}

func decodeValue(b []byte) (any, error) {
	if v, ok := jsonany.Decode(b); ok {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("invalid JSON: unexpected end of data")
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid JSON: data after the first value")
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// parseJSON reads an array of objects, or an object with exactly one field
// that is an array of objects (e.g. {"data": [...]}, {"version": ..., "data": [...]}).
func parseJSON(data []byte) ([]Record, error) {
	v, err := decodeValue(data)
	if err != nil {
		return nil, err
	}
	arr, field := []any(nil), ""
	switch t := v.(type) {
	case []any:
		arr = t
	case map[string]any:
		var found []string
		for k, fv := range t {
			if a, ok := fv.([]any); ok && len(a) > 0 && allObjects(a) {
				found = append(found, k)
				arr, field = a, k
			}
		}
		if len(found) != 1 {
			return nil, fmt.Errorf("JSON object must have exactly one field holding an array of objects (found %d: %s)", len(found), strings.Join(found, ", "))
		}
	default:
		return nil, fmt.Errorf("JSON must be an array of objects or an object holding one (got %s)", jsonKind(v))
	}
	recs := make([]Record, 0, len(arr))
	for i, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			where := fmt.Sprintf("element %d", i)
			if field != "" {
				where = fmt.Sprintf("%s[%d]", field, i)
			}
			return nil, fmt.Errorf("%s: not a JSON object (got %s)", where, jsonKind(e))
		}
		recs = append(recs, m)
	}
	return recs, nil
}

func allObjects(a []any) bool {
	for _, e := range a {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// parseCSV reads comma- or tab-separated values. The first row is the
// header unless columns is set. Tab-separated files are read with lazy
// quotes: real TSVs (MGSM) have bare quotes inside fields.
func parseCSV(data []byte, comma rune, columns []string) ([]Record, []int, error) {
	return readCSV(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))), comma, columns, 0)
}

// readCSV is parseCSV over a reader (its byte order mark removed) that
// stops after limit records (0: none).
func readCSV(in io.Reader, comma rune, columns []string, limit int) ([]Record, []int, error) {
	return collect(limit, func(fn func(Record, int) error) error { return scanCSV(in, comma, columns, fn) })
}

// scanCSV hands fn each record of in (its byte order mark removed) with
// the line it starts on, in order. An error of fn ends the scan and is
// returned (errStop: nil).
func scanCSV(in io.Reader, comma rune, columns []string, fn func(rec Record, line int) error) error {
	r := csv.NewReader(in)
	r.Comma = comma
	r.ReuseRecord = false
	if comma == '\t' {
		r.LazyQuotes = true
	}
	header := columns
	if len(header) == 0 {
		h, err := r.Read()
		if err == io.EOF {
			return fmt.Errorf("no header row")
		}
		if err != nil {
			return csvErr(err)
		}
		header = h
	}
	seen := map[string]bool{}
	for i, h := range header {
		if h == "" {
			return fmt.Errorf("header column %d is empty", i+1)
		}
		if seen[h] {
			return fmt.Errorf("header column %q appears twice", h)
		}
		seen[h] = true
	}
	r.FieldsPerRecord = len(header)
	for {
		row, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvErr(err)
		}
		rec := make(Record, len(header))
		for i, h := range header {
			rec[h] = row[i]
		}
		line, _ := r.FieldPos(0)
		if ferr := fn(rec, line); ferr == errStop {
			return nil
		} else if ferr != nil {
			return ferr
		}
	}
}

// skipBOM drops a UTF-8 byte order mark at the start of r.
func skipBOM(r io.Reader) io.Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\ufeff")) {
		br.Discard(3)
	}
	return br
}

// csvErr words csv errors as "line N: ...".
func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return fmt.Errorf("line %d: wrong number of fields", pe.StartLine)
		}
		return fmt.Errorf("line %d, column %d: %w", pe.Line, pe.Column, pe.Err)
	}
	return err
}
