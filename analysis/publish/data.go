package publish

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/analysis/store"
	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/runtime/dataset"
)

// Local data travels with a published recipe by content. The recipe hash
// covers each local file's digest, not its path, so the recipe published
// from one machine is the same recipe on another where the data lies
// elsewhere. publish puts each local file in the recipe's entry:
// at its relative path under recipe/ when the recipe names it inside its
// own folder (a fetched recipe then finds it where it says), else under
// data/<digest>/; the manifest's data list says which field reads which
// digest. fetch and reproduce find each by digest (locateData): where the
// recipe names it, else in a --data folder, else the entry's copy; what is
// found elsewhere than the recipe says is pointed to with an -O override,
// which changes the plan hash (deployment), never the recipe hash.

// publishedData adds the local files s reads to files (entry path → local
// path) unless without, and returns the manifest's list of them.
func publishedData(s *compiler.Source, with bool, files map[string]string) ([]store.DataRef, error) {
	var refs []store.DataRef
	for _, lf := range s.LocalFiles() {
		abs := lf.Spec
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(s.Dir, abs)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", lf.Field, err)
		}
		entry := "data/" + strings.TrimPrefix(lf.Digest, "sha256:") + "/" + filepath.Base(abs)
		rel, err := filepath.Rel(s.Dir, abs)
		if err == nil && !filepath.IsAbs(lf.Spec) && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			entry = "recipe/" + filepath.ToSlash(rel)
		}
		ref := store.DataRef{Field: lf.Field, Spec: lf.Spec, Digest: lf.Digest}
		if with {
			ref.Path = entry
			if fi.IsDir() {
				// The files its digest covers, the data files nel-run
				// reads (not a README beside them).
				for _, f := range lf.Files {
					files[entry+"/"+f.Name] = filepath.Join(abs, f.Name)
				}
			} else {
				files[entry] = abs
			}
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// locateData finds each local file of a fetched recipe by its digest: where
// the recipe names it (relative to recipeDir), else in one of dirs (--data),
// else the entry's copy under dest. It returns the overrides that point the
// recipe at what was found elsewhere, and says each on w.
func locateData(m *store.Manifest, dest, recipeDir string, dirs []string, w io.Writer) ([]compiler.Override, error) {
	var ovs []compiler.Override
	for _, ref := range m.Data {
		written := ref.Spec
		if !filepath.IsAbs(written) {
			written = filepath.Join(recipeDir, written)
		}
		if holds(written, ref.Digest) {
			continue
		}
		found := ""
		for _, d := range dirs {
			if found = findDigest(d, filepath.Base(ref.Spec), ref.Digest); found != "" {
				break
			}
		}
		if found == "" && ref.Path != "" {
			if p := filepath.Join(dest, filepath.FromSlash(ref.Path)); holds(p, ref.Digest) {
				found = p
			}
		}
		if found == "" {
			where := "it was published without its data"
			if ref.Path != "" {
				where = "the store's copy does not match it"
			}
			return nil, fmt.Errorf("%s: the recipe reads %s (%s), which is not here, and %s: pass --data DIR, a folder holding a copy named %s",
				ref.Field, ref.Spec, ref.Digest, where, filepath.Base(ref.Spec))
		}
		abs, err := filepath.Abs(found)
		if err != nil {
			return nil, err
		}
		o, err := compiler.ParseOverride(ref.Field + "=" + abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref.Field, err)
		}
		o.Value = abs // a path is text, whatever its characters
		fmt.Fprintf(w, "nel: %s: %s is not here; the same content (%s) is at %s (-O '%s')\n", ref.Field, ref.Spec, ref.Digest, found, o.Text)
		ovs = append(ovs, o)
	}
	return ovs, nil
}

// holds says whether path is a dataset with that digest.
func holds(path, digest string) bool {
	d, err := dataset.LocalDigest("", path)
	return err == nil && d.Digest == digest
}

// findDigest looks under dir for a file or folder named name whose digest
// is digest: dir/name first, then anywhere below (hidden folders skipped).
// A dataset's digest covers its files' names, so only that name can match.
func findDigest(dir, name, digest string) string {
	if p := filepath.Join(dir, name); holds(p, digest) {
		return p
	}
	found := ""
	errFound := errors.New("found")
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil // an unreadable corner: look elsewhere
		case d.IsDir() && p != dir && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir
		case d.Name() == name && p != filepath.Join(dir, name) && holds(p, digest):
			found = p
			return errFound
		}
		return nil
	})
	return found
}
