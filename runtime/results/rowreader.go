package results

import (
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// rowReaderBatch is how many rows a RowReader decodes at a time: a
// quarter of readBatch, as a merge holds many RowReaders open.
const rowReaderBatch = readBatch / 4

// rowReaderIntern is how many distinct values a RowReader's string column
// shares (runs of one value are shared whatever their number): enough for
// categories, finish reasons and the like; a merge's many open readers
// would hold megabytes each of ids and answers at internMax.
const rowReaderIntern = 256

// Reader reads a results or trajectories file's rows in file order, a
// slice at a time, holding one row group's column readers and never the
// file's rows: what merge streams a million rows through.
type Reader[T any] struct {
	path   string
	rdr    *file.Reader
	fields []field[T]
	leaves [][]int
	meta   map[string]string
	rows   int64
	g      int // the next row group to open
	cur    *groupReader[T]
	fix    func([]T) // applied to the rows read
}

// RowReader reads a results file (OpenRows).
type RowReader = Reader[Row]

// OpenRows opens a results file for reading with Read; only the named
// columns are read (the other fields stay empty), all of them with none
// named. A row without an outcome gets the one its error_category
// implies, as ReadRows gives it (when error_category is read). Close it
// when done.
func OpenRows(path string, columns ...string) (*RowReader, error) {
	rr, err := openReader(path, rowFields(), columns)
	if err == nil && (len(columns) == 0 || slices.Contains(columns, "error_category")) {
		rr.fix = fillOutcomes
	}
	return rr, err
}

// OpenTrajectories opens a trajectories file for reading with Read, like
// OpenRows.
func OpenTrajectories(path string, columns ...string) (*Reader[Trajectory], error) {
	return openReader(path, trajectoryFields(), columns)
}

func openReader[T any](path string, fields []field[T], columns []string) (rr *Reader[T], err error) {
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
	rr = &Reader[T]{path: path, rdr: rdr, meta: kvMap(md.KeyValueMetadata()), rows: md.NumRows}
	rr.fields, rr.leaves = present(fields, leaves)
	return rr, nil
}

// Meta is the file's key-value metadata.
func (rr *Reader[T]) Meta() map[string]string { return rr.meta }

// NumRows is the file's row count, from its footer.
func (rr *Reader[T]) NumRows() int64 { return rr.rows }

// Read fills dst with the next rows, as many as fit or are left, and
// returns how many; io.EOF once every row has been read.
func (rr *Reader[T]) Read(dst []T) (n int, err error) {
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
		// Buffers of a small group's size: a merge of many small shards
		// holds one reader per shard.
		n := int(rg.NumRows())
		gr, err := newGroupReader(rg, rr.fields, rr.leaves, n, max(min(rowReaderBatch, n), 1), rowReaderIntern)
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
	if rr.fix != nil {
		rr.fix(dst[:n])
	}
	return n, nil
}

// Close releases the file.
func (rr *Reader[T]) Close() error { return rr.rdr.Close() }
