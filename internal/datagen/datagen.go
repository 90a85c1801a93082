// Package datagen writes synthetic GSM8K-style datasets (distinct
// problems with a question and an answer) as JSONL, a JSON array or
// Parquet, for tests and benchmarks that need a dataset of a given size.
// It writes as it goes, so that the writer's memory does not grow with
// the dataset (a benchmark's child process's peak RSS starts from it).
package datagen

import (
	"bufio"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Question and Answer are problem i's fields: "What is i plus i%97?" and
// its worked answer, 86 bytes a JSONL line for six-digit i.
func Question(i int) string { return fmt.Sprintf("What is %d plus %d?", i, i%97) }

// Answer is problem i's answer, GSM8K style ("#### n" on the last line).
func Answer(i int) string {
	return fmt.Sprintf("%d + %d = %d\n#### %d", i, i%97, i+i%97, i+i%97)
}

// Write writes n problems to path in format: "jsonl", "json" (one
// array) or "parquet" (row groups of rowGroup rows, Snappy).
func Write(path, format string, n, rowGroup int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if format == "parquet" {
		err = writeParquet(f, n, rowGroup)
	} else {
		err = writeJSON(f, format == "json", n)
	}
	if cerr := f.Close(); err == nil && cerr != nil && format != "parquet" {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func writeJSON(f *os.File, array bool, n int) error {
	w := bufio.NewWriterSize(f, 1<<20)
	sep, end := "\n", "\n"
	if array {
		w.WriteString("[\n")
		sep, end = ",\n", "\n]\n"
	}
	for i := range n {
		if i > 0 {
			w.WriteString(sep)
		}
		fmt.Fprintf(w, `{"question": %q, "answer": %q}`, Question(i), Answer(i))
	}
	w.WriteString(end)
	return w.Flush()
}

// writeParquet writes the problems a row group at a time; the writer
// closes f.
func writeParquet(f *os.File, n, rowGroup int) error {
	sc := arrow.NewSchema([]arrow.Field{{Name: "question", Type: arrow.BinaryTypes.String}, {Name: "answer", Type: arrow.BinaryTypes.String}}, nil)
	fw, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy)), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for start := 0; start < n; start += rowGroup {
		for i := start; i < min(start+rowGroup, n); i++ {
			b.Field(0).(*array.StringBuilder).Append(Question(i))
			b.Field(1).(*array.StringBuilder).Append(Answer(i))
		}
		rec := b.NewRecordBatch()
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}
