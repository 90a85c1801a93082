// Package storetest serves a directory as an http(s) recipe store, for
// tests: a static file server (GET, HEAD) that can also take uploads (PUT).
package storetest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

// Handler serves the files under dir. GET and HEAD serve plain files (no
// directory listings: a directory is 404). PUT, when acceptPut, writes the
// body to the named file atomically (creating directories) and answers 201;
// otherwise it answers 405, as a static host does. Paths that would leave
// dir are refused with 400.
func Handler(dir string, acceptPut bool) http.Handler {
	return &handler{dir: dir, acceptPut: acceptPut}
}

type handler struct {
	dir       string
	acceptPut bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasSuffix(r.URL.Path, "/") {
		http.NotFound(w, r) // a directory: no listings
		return
	}
	rel, err := relPath(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name := filepath.Join(h.dir, filepath.FromSlash(rel))
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.get(w, r, name)
	case http.MethodPut:
		if !h.acceptPut {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "this store does not accept uploads", http.StatusMethodNotAllowed)
			return
		}
		h.put(w, r, rel, name)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// relPath turns a request path into a clean path relative to the served
// directory, refusing one that climbs out of it or that a Windows-style
// separator could smuggle out.
func relPath(p string) (string, error) {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return "", errors.New("no file named")
	}
	if strings.ContainsAny(p, "\\\x00") {
		return "", fmt.Errorf("path %q: backslash or NUL", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return "", fmt.Errorf("path %q: empty, . or .. segment", p)
		}
	}
	return p, nil
}

func (h *handler) get(w http.ResponseWriter, r *http.Request, name string) {
	f, err := os.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "cannot open file", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
}

func (h *handler) put(w http.ResponseWriter, r *http.Request, rel, name string) {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		http.Error(w, "cannot create directory", http.StatusInternalServerError)
		return
	}
	err := atomicfile.Create(name, func(f *os.File) error {
		n, err := io.Copy(f, r.Body)
		if err != nil {
			return err
		}
		if r.ContentLength >= 0 && n != r.ContentLength {
			return fmt.Errorf("got %d bytes, Content-Length says %d", n, r.ContentLength)
		}
		return nil
	}, nil)
	if err != nil {
		http.Error(w, fmt.Sprintf("write %s failed", rel), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusCreated)
}
