package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/nel-eval/nel/runtime/provenance"
)

// scanJSONArray hands fn each element of the JSON array r holds, one at a
// time (line 0: JSON files have no lines). An element that is not an
// object, or a syntax error, ends the scan with an error that scanFile
// words as Load does by reading the file again.
func scanJSONArray(r io.Reader, names []string, fn func(rec Record, raw []byte, line int) error) error {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return fmt.Errorf("JSON must be an array of objects (got %v, %v)", tok, err)
	}
	p := newPicker(names)
	for i := 0; dec.More(); i++ {
		var elem json.RawMessage
		if err := dec.Decode(&elem); err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
		rec, raw, err := p.record(elem)
		if err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		if err := fn(rec, raw, 0); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("invalid JSON: data after the first value")
	}
	return nil
}

// scanParquetFile hands fn each record of the Parquet file at path, a row
// group at a time, and returns the file's sha256 (read first, as the
// records are read from the file by offset, not in order).
func scanParquetFile(path string, fn func(rec Record, raw []byte, line int) error) (string, error) {
	sum, err := provenance.FileSHA256(path)
	if err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	if fi.Size() == 0 {
		return "", fmt.Errorf("dataset %s: empty file", path)
	}
	err = scanParquet(f, fi.Size(), func(recs []Record) error {
		for _, rec := range recs {
			if err := fn(rec, nil, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", path, err)
	}
	return strings.TrimPrefix(sum, "sha256:"), nil
}

// countParquet adds the rows of the Parquet file at path to n, from its
// footer.
func countParquet(path string, n *int) error {
	rd, err := file.OpenParquetFile(path, false)
	if err != nil {
		return fmt.Errorf("dataset %s: read Parquet footer: %w", path, err)
	}
	defer rd.Close()
	*n += int(rd.NumRows())
	return nil
}

// countJSONArray adds the elements of the JSON array text holds to n,
// without decoding them.
func countJSONArray(text io.Reader, n *int) error {
	dec := json.NewDecoder(text)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return errors.New("JSON must be an array of objects")
	}
	for dec.More() {
		var elem json.RawMessage
		if err := dec.Decode(&elem); err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
		*n++
	}
	return nil
}

// hubStream streams a Hub spec from the cache, its files resolved (and
// downloaded) as loadHub resolves them.
func (l *Loader) hubStream(ctx context.Context, spec string) (Stream, bool) {
	sha, snap, files, err := l.hubFiles(ctx, spec)
	if err != nil {
		return nil, false
	}
	st := &localStream{spec: spec, revision: sha}
	for _, f := range files {
		local := filepath.Join(snap, filepath.FromSlash(f.path))
		if _, err := os.Stat(local); err != nil || !streamable(local, f.path) {
			return nil, false
		}
		st.paths = append(st.paths, local)
		st.names = append(st.names, f.path)
		st.hubSHA = append(st.hubSHA, f.sha256)
	}
	return st, true
}

// checkHub checks file i's sha256 against the Hub's, as loadHub does: a
// cached file that is not what the Hub says is reported as such, not by
// what it fails to parse as.
func (s *localStream) checkHub(i int, sum string, err error) (string, error) {
	if err != nil {
		full, ferr := provenance.FileSHA256(s.paths[i])
		if ferr != nil {
			return "", err
		}
		sum = strings.TrimPrefix(full, "sha256:")
	}
	if sum != s.hubSHA[i] {
		return "", fmt.Errorf("dataset %s: cached %s has sha256 %s, the Hub says %s (delete it to download again)", s.spec, s.paths[i], sum, s.hubSHA[i])
	}
	return sum, err
}
