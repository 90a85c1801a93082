package results

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

// maxRowGroupRows bounds a row group so that readers can parallelise over
// row groups and a reader's memory stays bounded.
const maxRowGroupRows = 64 * 1024

// streamGroupRows is the row group of WriteRowsFrom, whose memory is that
// of the groups it holds.
const streamGroupRows = 16 * 1024

// WriteRows writes rows to path as results.parquet-style Parquet (zstd,
// one column per Row field), with meta as the file's key-value metadata
// plus MetaRows. The file appears at path complete or not at all.
func WriteRows(path string, rows []Row, meta map[string]string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		return encodeParallel(w, rowFields(), rows, meta)
	})
}

// WriteRowsGated is WriteRows, except that once the file is complete and
// durable under its temporary name, gate decides: nil renames it to path,
// an error abandons it (path keeps its old content) and is returned. Merge
// uses it to make results.parquet appear only after trajectories.parquet,
// while both are written at once.
func WriteRowsGated(path string, rows []Row, meta map[string]string, gate func() error) error {
	return atomicfile.Create(path, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := encodeParallel(bw, rowFields(), rows, meta); err != nil {
			return err
		}
		return bw.Flush()
	}, gate)
}

// WriteRowsFrom is WriteRowsGated for total rows that fill gives in
// order, a slice at a time, instead of a slice of them: merge streams the
// merged rows through it. fill must fill all of dst (the writer's buffer,
// its rows zero) and is called from one goroutine at a time; the writer
// holds a few row groups of rows (not all of them) and encodes them on
// every CPU. Its row groups are of streamGroupRows rows.
func WriteRowsFrom(path string, total int, fill func(dst []Row) error, meta map[string]string, gate func() error) error {
	// Fewer, smaller groups in flight than WriteRows holds: a group of
	// maxRowGroupRows rows takes ~40 MB to hold and encode.
	const perWorker = 1
	workers := max(runtime.GOMAXPROCS(0), 1)
	free := make(chan []Row, perWorker*workers+1)
	left := total
	next := func() ([]Row, error) {
		if left == 0 {
			return nil, nil
		}
		var group []Row
		select {
		case group = <-free:
		default:
			group = make([]Row, streamGroupRows)
		}
		group = group[:min(left, streamGroupRows)]
		clear(group)
		left -= len(group)
		return group, fill(group)
	}
	release := func(group []Row) {
		select {
		case free <- group[:cap(group)]:
		default:
		}
	}
	return atomicfile.Create(path, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := encodeGroups(bw, rowFields(), total, streamGroupRows, next, release, perWorker, meta); err != nil {
			return err
		}
		return bw.Flush()
	}, gate)
}

// WriteTrajectories writes ts to path like WriteRows, one column per
// Trajectory field.
func WriteTrajectories(path string, ts []Trajectory, meta map[string]string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		return encodeParallel(w, trajectoryFields(), ts, meta)
	})
}

// writerProps are the Parquet settings for every nel file. Dictionary
// encoding is off: zstd alone compresses the repetitive key columns as
// well or better (a gsm8k-like results file is ~35% smaller than with
// arrow-go's default dictionaries), and arrow-go's dictionary encoder
// costs two allocations per string value, which made it most of the
// writer's time (measured: ~1.7× the rows per CPU second without).
func writerProps(level int, pageBytes int64) *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(level),
		parquet.WithMaxRowGroupLength(maxRowGroupRows),
		parquet.WithDictionaryDefault(false),
		parquet.WithDataPageSize(pageBytes),
	)
}

// pageBytes bounds a data page of T's files (before compression). A
// reader holds one decompressed page per column it reads; merge reads
// every shard's results at once (a k-way merge), so with Parquet's usual
// 1 MB pages it held about the whole of every shard's results
// decompressed (~190 MB for 1,000,000 rows in 16 shards), with 64 KB
// pages a few MB. Trajectories (text, never read all at once) keep 1 MB
// pages, which compress better.
func pageBytes[T any]() int64 {
	var t T
	if _, ok := any(t).(Row); ok {
		return 64 << 10
	}
	return parquet.DefaultDataPageSize
}

// zstdLevel is the compression level of T's files. Results files (small,
// rewritten by every merge) use zstd's fastest level: ~12% larger than
// the default level, but compression was a third of the writer's time.
// Trajectories (mostly text, written once per shard, and copied without
// re-encoding at merge) keep the default.
func zstdLevel[T any]() int {
	var t T
	if _, ok := any(t).(Row); ok {
		return 1
	}
	return compress.DefaultCompressionLevel
}

// kvMetadata returns meta plus MetaRows, in key order so that the same
// input always gives the same bytes.
func kvMetadata(meta map[string]string, rows int) (metadata.KeyValueMetadata, error) {
	keys := make([]string, 0, len(meta)+1)
	for k := range meta {
		if k != MetaRows {
			keys = append(keys, k)
		}
	}
	keys = append(keys, MetaRows)
	slices.Sort(keys)
	kv := metadata.NewKeyValueMetadata()
	for _, k := range keys {
		v := meta[k]
		if k == MetaRows {
			v = strconv.Itoa(rows)
		}
		if err := kv.Append(k, v); err != nil {
			return nil, fmt.Errorf("metadata %s: %w", k, err)
		}
	}
	return kv, nil
}

// encode writes items to w as a complete Parquet file.
func encode[T any](w io.Writer, fields []field[T], items []T, meta map[string]string) error {
	return encodeWith(w, fields, len(items), sliceGroups(items), meta, &columnBuffers{}, zstdLevel[T]())
}

// sliceGroups returns items a row group at a time, then nil.
func sliceGroups[T any](items []T) func() ([]T, error) {
	lo := 0
	return func() ([]T, error) {
		group := items[lo:min(lo+maxRowGroupRows, len(items))]
		lo += len(group)
		return group, nil
	}
}

// encodeWith writes total items, the row groups next returns (an empty
// one ends them), to w as a complete Parquet file, with the column buffers
// to use (reused across calls, so that they are allocated once, not once
// per file) and the zstd level.
func encodeWith[T any](w io.Writer, fields []field[T], total int, next func() ([]T, error), meta map[string]string, cb *columnBuffers, level int) (err error) {
	// arrow-go still panics on some internal failures (e.g. an encoder
	// seeing a failed sink); report those as errors rather than crash a
	// long evaluation at its very end.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet writer: %v", r)
		}
	}()
	sc, err := buildSchema(fields)
	if err != nil {
		return err
	}
	kv, err := kvMetadata(meta, total)
	if err != nil {
		return err
	}
	fw, err := file.NewParquetWriterWithError(w, sc,
		file.WithWriterProps(writerProps(level, pageBytes[T]())), file.WithWriteMetadata(kv))
	if err != nil {
		return err
	}
	for {
		group, err := next()
		if err != nil {
			return err
		}
		if len(group) == 0 {
			break
		}
		rg, err := fw.AppendRowGroupChecked()
		if err != nil {
			return err
		}
		for _, f := range fields {
			if err := writeColumn(cb, rg, f, group); err != nil {
				return fmt.Errorf("column %s: %w", f.name, err)
			}
		}
		if err := rg.Close(); err != nil {
			return err
		}
	}
	return fw.Close()
}

// encodeParallel writes items to w like encode, but encodes the row
// groups concurrently (encodeGroups).
func encodeParallel[T any](w io.Writer, fields []field[T], items []T, meta map[string]string) error {
	return encodeGroups(w, fields, len(items), maxRowGroupRows, sliceGroups(items), nil, 2, meta)
}

// encodeGroups writes total items, the row groups next returns (each of
// groupRows items but the last), to w like encodeWith, but encodes
// the row groups concurrently, one per CPU: each becomes a small Parquet
// file in memory, and the files are concatenated in order (their column
// chunks copied as they are, one footer for all). next is called from one
// goroutine at a time, in order; release, when not nil, is given each
// group once it is encoded, to be reused. At most perWorker row groups
// per worker are held, from next until their bytes are in w.
func encodeGroups[T any](w io.Writer, fields []field[T], total, groupRows int, next func() ([]T, error), release func([]T), perWorker int, meta map[string]string) error {
	groups := (total + groupRows - 1) / groupRows
	workers := min(runtime.GOMAXPROCS(0), groups)
	if workers <= 1 {
		return encodeWith(w, fields, total, next, meta, &columnBuffers{}, zstdLevel[T]())
	}
	type result struct {
		data []byte
		err  error
	}
	type job struct {
		group []T
		done  chan result
	}
	stop := make(chan struct{})
	defer close(stop)
	// The producer hands groups out in order and queues their results in
	// the same order; slots bounds the groups between next and the file.
	slots := make(chan struct{}, perWorker*workers)
	jobs, order := make(chan job), make(chan chan result, perWorker*workers)
	go func() {
		defer close(jobs)
		defer close(order)
		for range groups {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			group, err := next()
			done := make(chan result, 1)
			order <- done
			if err != nil || len(group) == 0 {
				done <- result{err: cmp.Or(err, fmt.Errorf("%d row groups of %d rows", groups, total))}
				return
			}
			select {
			case jobs <- job{group, done}:
			case <-stop:
				return
			}
		}
	}()
	for range workers {
		go func() {
			var buf bytes.Buffer
			var cb columnBuffers
			for j := range jobs {
				buf.Reset()
				err := encodeWith(&buf, fields, len(j.group), sliceGroups(j.group), nil, &cb, zstdLevel[T]())
				if release != nil {
					release(j.group)
				}
				j.done <- result{bytes.Clone(buf.Bytes()), err}
			}
		}()
	}
	c, err := newConcatenator(w)
	if err != nil {
		return err
	}
	g := 0
	for done := range order {
		r := <-done
		<-slots
		if r.err != nil {
			return r.err
		}
		p, err := parsePart(fmt.Sprintf("row group %d", g), bytes.NewReader(r.data), int64(len(r.data)))
		if err != nil {
			return err
		}
		p.data = r.data
		if err := c.add(p); err != nil {
			return err
		}
		g++
	}
	if g != groups {
		return fmt.Errorf("%d of %d row groups written", g, groups)
	}
	_, err = c.finish(meta)
	return err
}

// columnBuffers holds the per-column slices handed to the column writers,
// reused across columns and row groups so that allocations grow with the
// number of columns, not rows.
type columnBuffers struct {
	bytes []byte
	strs  []parquet.ByteArray
	i64   []int64
	f64   []float64
	bools []bool
	def   []int16
	rep   []int16
	keys  []string
	lens  []int
}

// writeColumn writes f's values for items to cw, and for a map column also
// its value column, the next one in rg.
func writeColumn[T any](b *columnBuffers, rg file.SerialRowGroupWriter, f field[T], items []T) error {
	cw, err := rg.NextColumn()
	if err != nil {
		return err
	}
	switch f.kind {
	case kindString, kindOptString:
		err = writeStrings(b, cw, f, items)
	case kindInt64:
		b.i64 = b.i64[:0]
		for i := range items {
			b.i64 = append(b.i64, *f.i64(&items[i]))
		}
		_, err = cw.(*file.Int64ColumnChunkWriter).WriteBatch(b.i64, nil, nil)
	case kindFloat64:
		b.f64 = b.f64[:0]
		for i := range items {
			b.f64 = append(b.f64, *f.f64(&items[i]))
		}
		_, err = cw.(*file.Float64ColumnChunkWriter).WriteBatch(b.f64, nil, nil)
	case kindOptBool:
		// Definition level 1 is a value, 0 a null; nulls take no value slot.
		b.bools, b.def = b.bools[:0], b.def[:0]
		for i := range items {
			if p := *f.opt(&items[i]); p != nil {
				b.bools = append(b.bools, *p)
				b.def = append(b.def, 1)
			} else {
				b.def = append(b.def, 0)
			}
		}
		_, err = cw.(*file.BooleanColumnChunkWriter).WriteBatch(b.bools, b.def, nil)
	case kindBool:
		b.bools = b.bools[:0]
		for i := range items {
			b.bools = append(b.bools, *f.b(&items[i]))
		}
		_, err = cw.(*file.BooleanColumnChunkWriter).WriteBatch(b.bools, nil, nil)
	case kindScores:
		err = writeScores(b, rg, cw, f, items)
	default:
		err = fmt.Errorf("unknown kind %v", f.kind)
	}
	return err
}

// writeStrings writes a string column; an optional one (kindOptString)
// writes "" as NULL (definition level 0, no value slot).
func writeStrings[T any](b *columnBuffers, cw file.ColumnChunkWriter, f field[T], items []T) error {
	nullEmpty := f.kind == kindOptString
	b.bytes, b.strs, b.def = b.bytes[:0], b.strs[:0], b.def[:0]
	for i := range items {
		b.bytes = append(b.bytes, *f.str(&items[i])...)
	}
	// Slice the one buffer only once it has stopped growing.
	off := 0
	for i := range items {
		n := len(*f.str(&items[i]))
		if nullEmpty {
			if n == 0 {
				b.def = append(b.def, 0)
				continue
			}
			b.def = append(b.def, 1)
		}
		b.strs = append(b.strs, b.bytes[off:off+n:off+n])
		off += n
	}
	var def []int16 // a required column has no definition levels
	if nullEmpty {
		def = b.def
	}
	_, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(b.strs, def, nil)
	return err
}

// writeScores writes a MAP column's key and value leaves. Per entry the
// definition level is 1 (the repeated key_value is present) and the
// repetition level 0 for a row's first entry, 1 for the rest; an empty map
// is a single level pair (0, 0) with no value. Keys are sorted so that
// output does not depend on map iteration order.
func writeScores[T any](b *columnBuffers, rg file.SerialRowGroupWriter, keyW file.ColumnChunkWriter, f field[T], items []T) error {
	b.bytes, b.strs, b.f64, b.def, b.rep, b.lens = b.bytes[:0], b.strs[:0], b.f64[:0], b.def[:0], b.rep[:0], b.lens[:0]
	for i := range items {
		m := *f.scores(&items[i])
		if len(m) == 0 {
			b.def, b.rep = append(b.def, 0), append(b.rep, 0)
			continue
		}
		b.keys = b.keys[:0]
		for k := range m {
			b.keys = append(b.keys, k)
		}
		slices.Sort(b.keys)
		for j, k := range b.keys {
			b.bytes = append(b.bytes, k...)
			b.lens = append(b.lens, len(k))
			b.f64 = append(b.f64, m[k])
			b.def = append(b.def, 1)
			b.rep = append(b.rep, int16(min(j, 1)))
		}
	}
	// Slice the key buffer only once it has stopped growing.
	off := 0
	for _, n := range b.lens {
		b.strs = append(b.strs, b.bytes[off:off+n:off+n])
		off += n
	}
	if _, err := keyW.(*file.ByteArrayColumnChunkWriter).WriteBatch(b.strs, b.def, b.rep); err != nil {
		return err
	}
	valW, err := rg.NextColumn()
	if err != nil {
		return err
	}
	_, err = valW.(*file.Float64ColumnChunkWriter).WriteBatch(b.f64, b.def, b.rep)
	return err
}
