package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

// readMeta reads a small JSON file (a manifest or runs.json) whole, up to
// maxMeta bytes.
func readMeta(ctx context.Context, st Store, p string) ([]byte, error) {
	rc, err := st.Get(ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxMeta+1))
	if err != nil {
		return nil, fmt.Errorf("store %s: read %s: %w", st.Location(), p, err)
	}
	if len(b) > maxMeta {
		return nil, fmt.Errorf("store %s: %s is over %d MiB; refusing it", st.Location(), p, maxMeta>>20)
	}
	return b, nil
}

// readManifest reads and decodes a manifest without checking it.
func readManifest(ctx context.Context, st Store, p string) (*Manifest, error) {
	b, err := readMeta(ctx, st, p)
	if err != nil {
		return nil, err
	}
	return decodeManifest(st, p, b)
}

func decodeManifest(st Store, p string, b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("store %s: %s is not a valid manifest (%v); the store's copy is damaged", st.Location(), p, err)
	}
	return &m, nil
}

func readIndex(ctx context.Context, st Store, hex string) (*Index, error) {
	p := indexPath(hex)
	b, err := readMeta(ctx, st, p)
	if err != nil {
		return nil, err
	}
	var x Index
	if err := json.Unmarshal(b, &x); err != nil {
		return nil, fmt.Errorf("store %s: %s is not a valid run index (%v); the store's copy is damaged", st.Location(), p, err)
	}
	for i, r := range x.Runs {
		if err := checkRunID(r.RunID); err != nil {
			return nil, fmt.Errorf("store %s: %s: runs[%d]: %w", st.Location(), p, i, err)
		}
		if i > 0 && x.Runs[i-1].RunID >= r.RunID {
			return nil, fmt.Errorf("store %s: %s: runs[%d]: %q is out of order or repeated", st.Location(), p, i, r.RunID)
		}
	}
	return &x, nil
}

// unknownHash is the error for a hash the store has no entry for; cause is
// the store's not-found error.
func unknownHash(st Store, hex string, cause error) error {
	why := ""
	if errors.Is(cause, errNoDir) {
		why = "; " + errNoDir.Error() + ": check the store path"
	}
	return fmt.Errorf("sha256:%s is not in the store %s (no %s%s): %w", hex, st.Location(), recipeManifestPath(hex), why, ErrUnknownHash)
}

// ReadIndex reads runs.json for a recipe hash. A recipe with no published
// runs has an empty index; a hash the store has neither recipe nor runs
// for is an error wrapping ErrUnknownHash.
func ReadIndex(ctx context.Context, st Store, hash string) (*Index, error) {
	hex, err := ParseHash(hash)
	if err != nil {
		return nil, err
	}
	x, err := readIndex(ctx, st, hex)
	if !errors.Is(err, ErrNotFound) {
		return x, err
	}
	rc, err := st.Get(ctx, recipeManifestPath(hex))
	if errors.Is(err, ErrNotFound) {
		return nil, unknownHash(st, hex, err)
	}
	if err != nil {
		return nil, err
	}
	rc.Close()
	return &Index{Runs: []RunInfo{}}, nil
}

// FetchRecipe downloads the recipe entry of hash into dest: dest/recipe/…,
// dest/canonical.json, dest/lock.json when there is one, and
// dest/manifest.json last. Every file is checked against the manifest and
// canonical.json against the hash; a mismatch is an *IntegrityError and
// leaves no dest/manifest.json.
func FetchRecipe(ctx context.Context, st Store, hash, dest string) (*Manifest, error) {
	hex, err := ParseHash(hash)
	if err != nil {
		return nil, err
	}
	p := recipeManifestPath(hex)
	b, err := readMeta(ctx, st, p)
	if errors.Is(err, ErrNotFound) {
		return nil, unknownHash(st, hex, err)
	}
	if err != nil {
		return nil, err
	}
	return fetchEntry(ctx, st, p, b, KindRecipe, hex, "", dest)
}

// FetchResults downloads the results entry of run runID of hash into dest
// (dest/manifest.json last); runID "" fetches the newest run in runs.json.
// An unknown run id is an error wrapping ErrUnknownRun that lists the runs
// there are.
func FetchResults(ctx context.Context, st Store, hash, runID, dest string) (*Manifest, error) {
	hex, err := ParseHash(hash)
	if err != nil {
		return nil, err
	}
	if runID == "" {
		x, err := ReadIndex(ctx, st, hash)
		if err != nil {
			return nil, err
		}
		if len(x.Runs) == 0 {
			return nil, fmt.Errorf("%s has no published runs in the store %s (%s lists none): %w",
				hash, st.Location(), indexPath(hex), ErrUnknownRun)
		}
		runID = x.Runs[len(x.Runs)-1].RunID
	} else if err := checkRunID(runID); err != nil {
		return nil, err
	}
	p := "results/" + hex + "/" + runID + "/" + ManifestName
	b, err := readMeta(ctx, st, p)
	if errors.Is(err, ErrNotFound) {
		x, ierr := ReadIndex(ctx, st, hash)
		switch {
		case ierr != nil:
			return nil, ierr
		case len(x.Runs) == 0:
			return nil, fmt.Errorf("run %s of %s is not in the store %s, which has no published runs of it: %w",
				runID, hash, st.Location(), ErrUnknownRun)
		}
		return nil, fmt.Errorf("run %s of %s is not in the store %s; runs there: %s: %w",
			runID, hash, st.Location(), strings.Join(x.ids(), ", "), ErrUnknownRun)
	}
	if err != nil {
		return nil, err
	}
	return fetchEntry(ctx, st, p, b, KindResults, hex, runID, dest)
}

// fetchEntry checks a manifest (its bytes mb, read from store path where)
// and downloads its files into dest.
func fetchEntry(ctx context.Context, st Store, where string, mb []byte, kind, hex, runID, dest string) (*Manifest, error) {
	m, err := decodeManifest(st, where, mb)
	if err != nil {
		return nil, err
	}
	if err := m.check(where, kind, hex, runID); err != nil {
		var ie *IntegrityError
		if errors.As(err, &ie) {
			return nil, fmt.Errorf("store %s: %w", st.Location(), err)
		}
		return nil, fmt.Errorf("store %s: refusing %w", st.Location(), err)
	}
	root, err := filepath.Abs(dest)
	if err != nil {
		return nil, fmt.Errorf("fetch into %s: %w", dest, err)
	}
	locals := make([]string, len(m.Files))
	for i, f := range m.Files {
		// checkRel already refused "..", absolute paths and backslashes;
		// this is the last word on where a file lands.
		l := filepath.Join(root, filepath.FromSlash(f.Path))
		if rel, err := filepath.Rel(root, l); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return nil, fmt.Errorf("store %s: refusing %s: file %q lands outside %s", st.Location(), where, f.Path, root)
		}
		locals[i] = l
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("fetch into %s: %w", dest, err)
	}
	// A manifest left by an earlier fetch would make a failed one look
	// complete.
	mf := filepath.Join(root, ManifestName)
	if err := os.Remove(mf); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("fetch into %s: %w", dest, err)
	}
	dir := strings.TrimSuffix(where, ManifestName)
	for i, f := range m.Files {
		if err := fetchFile(ctx, st, dir+f.Path, f, locals[i]); err != nil {
			return nil, err
		}
	}
	if err := atomicfile.WriteFile(mf, mb); err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	return m, nil
}

// fetchFile downloads one file to local, verifying size and sha256 while
// streaming; the file appears at local only when it matches. A local copy
// that already matches is kept.
func fetchFile(ctx context.Context, st Store, sp string, f File, local string) error {
	if sum, size, err := hashFile(local); err == nil && sum == f.SHA256 && size == f.Size {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return fmt.Errorf("fetch %s: %w", sp, err)
	}
	rc, err := st.Get(ctx, sp)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("store %s: %s is listed in its manifest but missing; the entry is incomplete or damaged: %w",
			st.Location(), sp, err)
	}
	if err != nil {
		return fmt.Errorf("fetch %s: %w", sp, err)
	}
	defer rc.Close()
	var ierr *IntegrityError
	err = atomicfile.Create(local, func(w *os.File) error {
		h := sha256.New()
		// One byte past the size shows a file that is too long.
		n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(rc, f.Size+1))
		if err != nil {
			return fmt.Errorf("store %s: read %s: %w", st.Location(), sp, err)
		}
		if n != f.Size {
			got := fmt.Sprintf("%d bytes", n)
			if n > f.Size {
				got = fmt.Sprintf("more than %d bytes", f.Size)
			}
			ierr = &IntegrityError{Path: sp, Want: fmt.Sprintf("%d bytes", f.Size), Got: got}
			return ierr
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
			ierr = &IntegrityError{Path: sp, Want: "sha256:" + f.SHA256, Got: "sha256:" + got}
			return ierr
		}
		return nil
	}, nil)
	if ierr != nil {
		return fmt.Errorf("store %s: %w", st.Location(), ierr)
	}
	if err != nil {
		return fmt.Errorf("fetch %s: %w", sp, err)
	}
	return nil
}
