package results

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

// Parquet's framing: "PAR1", the column chunks, the footer (thrift
// FileMetaData), its length (4 bytes, little endian), "PAR1".
var magic = []byte("PAR1")

// part is one Parquet file to concatenate: its parsed footer and where its
// column chunk bytes lie, [start, end), in src.
type part struct {
	name       string
	md         *metadata.FileMetaData
	start, end int64
	file       *os.File // the bytes are in file, or
	data       []byte   // in data
}

// parsePart reads the framing and footer of a Parquet file of size bytes
// read through r.
func parsePart(name string, r io.ReaderAt, size int64) (*part, error) {
	if size < 12 {
		return nil, fmt.Errorf("%s: %d bytes, too short for Parquet", name, size)
	}
	var head, tail [8]byte
	if _, err := r.ReadAt(head[:4], 0); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !bytes.Equal(head[:4], magic) || !bytes.Equal(tail[4:], magic) {
		return nil, fmt.Errorf("%s: not a Parquet file (no PAR1 magic)", name)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return nil, fmt.Errorf("%s: footer length %d exceeds the file", name, n)
	}
	footer := make([]byte, n)
	if _, err := r.ReadAt(footer, size-8-n); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	md, err := metadata.NewFileMetaData(footer, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: footer: %w", name, err)
	}
	if md.IsSetEncryptionAlgorithm() {
		return nil, fmt.Errorf("%s: encrypted Parquet is not supported", name)
	}
	return &part{name: name, md: md, start: int64(len(magic)), end: size - 8 - n}, nil
}

// concatenator writes Parquet files as one: their column chunks byte for
// byte, in order, then one footer with every row group, its offsets moved
// to where the bytes now lie. Page indexes (which hold absolute page
// offsets) are dropped; nel never writes them.
type concatenator struct {
	w     io.Writer // at offset 0 of a new file
	pos   int64
	first *part
	rows  int64
}

func newConcatenator(w io.Writer) (*concatenator, error) {
	if _, err := w.Write(magic); err != nil {
		return nil, err
	}
	return &concatenator{w: w, pos: int64(len(magic))}, nil
}

// add appends p's row groups.
func (c *concatenator) add(p *part) error {
	rgs := p.md.RowGroups
	if c.first == nil {
		c.first = p
		p.md.RowGroups = rgs[:0:0]
	} else if !p.md.Schema.Equals(c.first.md.Schema) {
		return fmt.Errorf("%s: schema differs from %s's", p.name, c.first.name)
	}
	base := c.first.md
	delta := c.pos - p.start
	for _, rg := range rgs {
		if rg.FileOffset != nil {
			v := *rg.FileOffset + delta
			rg.FileOffset = &v
		}
		ord := int16(len(base.RowGroups))
		rg.Ordinal = &ord
		for _, cc := range rg.Columns {
			if cc.FilePath != nil || cc.MetaData == nil || cc.CryptoMetadata != nil {
				return fmt.Errorf("%s: column chunks in other files or encrypted are not supported", p.name)
			}
			if cc.FileOffset != 0 {
				cc.FileOffset += delta
			}
			cc.OffsetIndexOffset, cc.OffsetIndexLength = nil, nil
			cc.ColumnIndexOffset, cc.ColumnIndexLength = nil, nil
			m := cc.MetaData
			m.DataPageOffset += delta
			for _, off := range []**int64{&m.IndexPageOffset, &m.DictionaryPageOffset, &m.BloomFilterOffset} {
				if *off != nil {
					v := **off + delta
					*off = &v
				}
			}
		}
		c.rows += rg.NumRows
		base.RowGroups = append(base.RowGroups, rg)
	}
	var err error
	if p.data != nil {
		_, err = c.w.Write(p.data[p.start:p.end])
	} else {
		err = copyRange(c.w, p.file, p.start, p.end-p.start)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	c.pos += p.end - p.start
	return nil
}

// finish writes the footer with meta plus MetaRows as the key-value
// metadata and returns the total row count.
func (c *concatenator) finish(meta map[string]string) (int64, error) {
	if c.first == nil {
		return 0, errors.New("concatenate: no input")
	}
	kv, err := kvMetadata(meta, int(c.rows))
	if err != nil {
		return 0, err
	}
	base := c.first.md
	base.NumRows, base.FileMetaData.KeyValueMetadata = c.rows, kv
	cw := &countingWriter{w: c.w}
	if _, err := base.WriteTo(cw, nil); err != nil {
		return 0, fmt.Errorf("footer: %w", err)
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], uint32(cw.n))
	copy(tail[4:], magic)
	if _, err := c.w.Write(tail[:]); err != nil {
		return 0, err
	}
	return c.rows, nil
}

// copyRange copies n bytes of src from offset off to w; for an *os.File w
// the kernel copies them (copy_file_range), never through user memory.
func copyRange(w io.Writer, src *os.File, off, n int64) error {
	if _, err := src.Seek(off, io.SeekStart); err != nil {
		return err
	}
	got, err := io.Copy(w, io.LimitReader(src, n))
	if err == nil && got != n {
		err = fmt.Errorf("copied %d of %d bytes: the file shrank", got, n)
	}
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Concat writes one Parquet file at path holding the rows of srcs, in
// order: their row groups copied byte for byte, without decoding or
// re-encoding, so that its cost is that of copying the bytes. All srcs
// must have the same schema (e.g. the shards of one benchmark, from
// WriteRows or WriteTrajectories). The key-value metadata is meta plus
// MetaRows; the file appears at path complete or not at all. It returns
// the number of rows written.
func Concat(path string, srcs []string, meta map[string]string) (int64, error) {
	return ConcatGated(path, srcs, meta, nil)
}

// ConcatGated is Concat with a gate, as in WriteRowsGated: the file appears
// at path only if gate, called once it is complete and durable, returns nil.
func ConcatGated(path string, srcs []string, meta map[string]string, gate func() error) (rows int64, err error) {
	// arrow-go's thrift code panics on some malformed footers.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write %s: concatenate: %v", path, r)
		}
	}()
	parts := make([]*part, 0, len(srcs))
	defer func() {
		for _, p := range parts {
			p.file.Close()
		}
	}()
	for _, src := range srcs {
		f, err := os.Open(src)
		if err != nil {
			return 0, fmt.Errorf("read %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("read %s: %w", src, err)
		}
		p, err := parsePart(src, f, fi.Size())
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("read %w", err)
		}
		p.file = f
		parts = append(parts, p)
	}
	err = atomicfile.Create(path, func(f *os.File) error {
		c, err := newConcatenator(f)
		if err != nil {
			return err
		}
		for _, p := range parts {
			if err := c.add(p); err != nil {
				return err
			}
		}
		rows, err = c.finish(meta)
		return err
	}, gate)
	return rows, err
}
