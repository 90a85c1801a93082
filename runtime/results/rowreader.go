package results

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// rowReaderBatch is how many rows a RowReader decodes at a time: a
// quarter of readBatch, as a merge holds many RowReaders open.
const rowReaderBatch = readBatch / 4

// RowReader reads a results file's rows in file order, a slice at a time,
// holding one row group's column readers and never the file's rows: what
// merge streams a million rows through.
type RowReader struct {
	path   string
	rdr    *file.Reader
	fields []field[Row]
	leaves [][]int
	meta   map[string]string
	rows   int64
	g      int // the next row group to open
	cur    *groupReader[Row]
}

// OpenRows opens a results file for reading with Read; only the named
// columns are read (the other fields stay empty), all of them with none
// named. Close it when done.
func OpenRows(path string, columns ...string) (rr *RowReader, err error) {
	fields := rowFields()
	if len(columns) > 0 {
		var err error
		if fields, err = selectFields(fields, columns); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
	defer func() { // arrow-go panics on some malformed files
		if r := recover(); r != nil {
			rr, err = nil, fmt.Errorf("read %s: parquet reader: %v", path, r)
		}
	}()
	// A column chunk is read through a small buffer, not whole: a merge
	// holds every shard's chunks open at once.
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled, props.BufferSize = true, 16<<10
	rdr, err := file.OpenParquetFile(path, false, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	md := rdr.MetaData()
	leaves, err := resolveColumns(md.Schema, fields)
	if err != nil {
		rdr.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rr = &RowReader{path: path, rdr: rdr, meta: kvMap(md.KeyValueMetadata()), rows: md.NumRows}
	rr.fields, rr.leaves = present(fields, leaves)
	return rr, nil
}

// Meta is the file's key-value metadata.
func (rr *RowReader) Meta() map[string]string { return rr.meta }

// NumRows is the file's row count, from its footer.
func (rr *RowReader) NumRows() int64 { return rr.rows }

// Read fills dst with the next rows, as many as fit or are left, and
// returns how many; io.EOF once every row has been read. A row without an
// outcome gets the one its error_category implies, as ReadRows gives it
// (when error_category is read).
func (rr *RowReader) Read(dst []Row) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("read %s: row group %d: parquet reader: %v", rr.path, rr.g-1, r)
		}
	}()
	for rr.cur == nil || rr.cur.pos == rr.cur.rows {
		if rr.cur != nil {
			if err := rr.cur.close(); err != nil {
				return 0, fmt.Errorf("read %s: row group %d: %w", rr.path, rr.g-1, err)
			}
			rr.cur = nil
		}
		if rr.g == rr.rdr.NumRowGroups() {
			return 0, io.EOF
		}
		rg := rr.rdr.RowGroup(rr.g)
		rr.g++
		gr, err := newGroupReader(rg, rr.fields, rr.leaves, int(rg.NumRows()), rowReaderBatch)
		if err != nil {
			return 0, fmt.Errorf("read %s: row group %d: %w", rr.path, rr.g-1, err)
		}
		rr.cur = gr
	}
	n = min(len(dst), rr.cur.rows-rr.cur.pos)
	clear(dst[:n])
	if err := rr.cur.read(dst[:n]); err != nil {
		return 0, fmt.Errorf("read %s: row group %d: %w", rr.path, rr.g-1, err)
	}
	if rr.has("error_category") {
		fillOutcomes(dst[:n])
	}
	return n, nil
}

func (rr *RowReader) has(column string) bool {
	for _, f := range rr.fields {
		if f.name == column {
			return true
		}
	}
	return false
}

// Close releases the file.
func (rr *RowReader) Close() error { return rr.rdr.Close() }
