package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// capture keeps the first max bytes written to it and counts the rest.
// Writes never fail, so a program's output pipe keeps draining; the first
// write past the cap calls over once, which an engine uses to kill the job
// (a program printing 100 MB would otherwise hold the job until its
// timeout, and memory stays bounded either way).
type capture struct {
	mu    sync.Mutex
	buf   []byte
	max   int64
	total int64
	over  func()
}

func newCapture(max int64, over func()) *capture {
	return &capture{max: max, over: over}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	room := c.max - int64(len(c.buf))
	if room > 0 {
		c.buf = append(c.buf, p[:min(int64(len(p)), room)]...)
	}
	wasOver := c.total > c.max
	c.total += int64(len(p))
	nowOver := c.total > c.max
	c.mu.Unlock()
	if nowOver && !wasOver && c.over != nil {
		c.over()
	}
	return len(p), nil
}

// bytes returns what was kept and whether anything was cut.
func (c *capture) bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.total > c.max
}

// workDir is a job's private, writable directory on the host.
type workDir struct {
	path string
}

// newWorkDir makes a fresh directory under parent ("" for the system's
// temporary directory) and writes the job's files into it.
func newWorkDir(parent string, files map[string][]byte) (*workDir, error) {
	dir, err := os.MkdirTemp(parent, "nel-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	w := &workDir{path: dir}
	if err := w.write(files); err != nil {
		w.remove()
		return nil, err
	}
	return w, nil
}

// cleanRel checks that name is a relative path inside the work directory.
func cleanRel(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || !fs.ValidPath(path.Clean(name)) || path.Clean(name) == "." {
		return "", fmt.Errorf("file %q: want a relative path inside the work directory", name)
	}
	return path.Clean(name), nil
}

func (w *workDir) write(files map[string][]byte) error {
	if len(files) == 0 {
		return nil
	}
	root, err := os.OpenRoot(w.path)
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	defer root.Close()
	for name, data := range files {
		rel, err := cleanRel(name)
		if err != nil {
			return err
		}
		if dir := path.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o777); err != nil {
				return fmt.Errorf("file %q: %w", name, err)
			}
		}
		if err := root.WriteFile(rel, data, 0o666); err != nil {
			return fmt.Errorf("file %q: %w", name, err)
		}
	}
	return nil
}

// collect reads the named files after a run. The program may have
// replaced them with anything: os.Root refuses a symlink that leaves the
// work directory (a link to /etc/shadow must not be read by the host),
// only regular files are read (a FIFO would block), and at most max bytes
// of each are kept. Missing files are left out.
func (w *workDir) collect(names []string, max int64) (map[string][]byte, error) {
	if len(names) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(w.path)
	if err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	defer root.Close()
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		rel, err := cleanRel(name)
		if err != nil {
			return nil, err
		}
		fi, err := root.Stat(rel)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := root.Open(rel)
		if err != nil {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, max))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("collect %q: %w", name, err)
		}
		out[name] = data
	}
	return out, nil
}

// remove deletes the work directory. A program may have left directories
// without write or search permission, which stop os.RemoveAll for a
// non-root user: on failure they are opened up and removal is retried.
func (w *workDir) remove() error {
	if err := os.RemoveAll(w.path); err == nil {
		return nil
	}
	filepath.WalkDir(w.path, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() && d.Type()&fs.ModeSymlink == 0 {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(w.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove work dir: %w", err)
	}
	return nil
}
