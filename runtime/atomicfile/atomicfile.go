// Package atomicfile writes files that appear complete or not at all.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Create runs write on a hidden temporary file next to path, then fsyncs
// it, asks gate (when not nil) for a last word, renames it over path and
// fsyncs the directory, so that a crash, a failed write or a gate's
// refusal never leaves a partial file at path. The temporary name starts
// with "." so globs like *.parquet never see it. The file is readable by
// everyone (results are meant to be shared). A gate's error is returned as
// it is; other errors name path.
func Create(path string, write func(*os.File) error, gate func() error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err == nil {
			return
		}
		if !closed {
			f.Close()
		}
		os.Remove(tmp)
		if g, ok := err.(*gateError); ok {
			err = g.err
			return
		}
		err = fmt.Errorf("write %s: %w", path, err)
	}()

	if err := write(f); err != nil {
		return err
	}
	// CreateTemp makes the file 0600.
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if gate != nil {
		if err := gate(); err != nil {
			return &gateError{err}
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// gateError carries a gate's verdict out of Create unwrapped.
type gateError struct{ err error }

func (g *gateError) Error() string { return g.err.Error() }

// Write is Create through a 1 MiB buffer, without a gate.
func Write(path string, write func(io.Writer) error) error {
	return Create(path, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}, nil)
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte) error {
	return Create(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}, nil)
}

// SyncDir makes a rename in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
