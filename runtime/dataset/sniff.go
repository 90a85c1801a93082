package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// sniffRecords is how many records Sniff parses of each file.
const sniffRecords = 5

// Sniff checks that each file of a local spec (relative to baseDir) opens
// and begins as its format says: the first records of a JSONL, CSV or TSV
// file parse as Load parses them, a JSON file opens an array or object, a
// Parquet file has its magic (at both ends when not gzipped). It reads a
// few kilobytes of each file, never the whole: the compiler calls it for
// every local dataset before a job is submitted, so a garbled or misnamed
// file is found at the recipe's field, not on the node after a model
// server has loaded.
func Sniff(baseDir, spec string) error {
	paths, _, err := localFiles(baseDir, spec)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := sniffFile(p); err != nil {
			return fmt.Errorf("dataset %s: %w", p, err)
		}
	}
	return nil
}

func sniffFile(path string) error {
	f, ok := formatOf(filepath.Base(path))
	if !ok {
		return fmt.Errorf("unknown file type (%s)", supportedList())
	}
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	in := bufio.NewReaderSize(file, 64<<10)
	if _, err := in.Peek(1); err == io.EOF {
		return fmt.Errorf("empty file")
	}
	if isGzip(path) {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("gunzip: %w", err)
		}
		in = bufio.NewReaderSize(gunzipErrors{zr}, 64<<10)
	} else if f == fmtParquet {
		return sniffParquetEnd(file)
	}
	return sniffStart(in, f)
}

// sniffStart parses the start of a stream in format f.
func sniffStart(in *bufio.Reader, f format) error {
	var recs []Record
	var err error
	switch f {
	case fmtJSONL:
		recs, _, err = readJSONL(in, sniffRecords)
	case fmtCSV, fmtTSV:
		comma := ','
		if f == fmtTSV {
			comma = '\t'
		}
		if b, _ := in.Peek(3); bytes.Equal(b, []byte("\ufeff")) {
			_, _ = in.Discard(3)
		}
		recs, _, err = readCSV(in, comma, nil, sniffRecords)
	case fmtJSON:
		head, _ := in.Peek(64 << 10)
		head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\ufeff")), " \t\r\n")
		if len(head) == 0 || head[0] != '[' && head[0] != '{' {
			return fmt.Errorf("not JSON: expected an array of objects, or an object holding one")
		}
		return nil
	case fmtParquet:
		if b, _ := in.Peek(4); !bytes.Equal(b, parquetMagic) {
			return fmt.Errorf("not a Parquet file (no PAR1 magic at the start)")
		}
		return nil
	}
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("no records")
	}
	return nil
}

// sniffParquetEnd checks a Parquet file's magic at both ends.
func sniffParquetEnd(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var start, end [4]byte
	if _, err := f.ReadAt(start[:], 0); err != nil || !bytes.Equal(start[:], parquetMagic) {
		return fmt.Errorf("not a Parquet file (no PAR1 magic at the start)")
	}
	if fi.Size() < 12 {
		return fmt.Errorf("truncated Parquet file (%d bytes)", fi.Size())
	}
	if _, err := f.ReadAt(end[:], fi.Size()-4); err != nil || !bytes.Equal(end[:], parquetMagic) {
		return fmt.Errorf("truncated Parquet file (no PAR1 magic at the end)")
	}
	return nil
}
