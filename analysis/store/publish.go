package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/rundir"
)

// Upload is one file to write to a store.
type Upload struct {
	Path   string `json:"path"`            // store-relative
	Local  string `json:"local,omitempty"` // local file; "" for the manifest, whose bytes are in Data
	SHA256 string `json:"sha256"`          // 64 lowercase hex digits
	Size   int64  `json:"size"`
	// Data is the content when Local is "" (the manifest Prepare built).
	Data []byte `json:"-"`
}

// PublishResult says what Publish did.
type PublishResult struct {
	// Entry is the entry's store-relative directory.
	Entry string
	// Manifest is the entry's manifest as the store now has it: the one
	// that was there already when AlreadyPublished or KeptExisting.
	Manifest Manifest
	// Uploaded lists the store-relative paths written, in order (runs.json
	// last for results).
	Uploaded []string
	// AlreadyPublished: the store had this entry with the same files;
	// nothing of the entry was written.
	AlreadyPublished bool
	// KeptExisting: the store had a recipe entry for this hash with other
	// files; it was kept (same hash, same methodology: the first text
	// stays) and nothing was written.
	KeptExisting bool
}

// Prepare hashes files and returns the completed manifest and the uploads
// that publish it, manifest.json last. m gives the header (Kind,
// RecipeHash, RunID for results, NelVersion, and for recipes Recipe and
// Overrides); its Files are replaced. files maps each path relative to the
// entry (as the manifest lists it: "recipe/suite.cue", "canonical.json",
// "gsm8k/results.parquet") to the local file with its content. A recipe
// entry must include canonical.json holding exactly the bytes its hash
// covers. Prepare writes nothing.
func Prepare(m Manifest, files map[string]string) (Manifest, []Upload, error) {
	if m.ManifestVersion == 0 {
		m.ManifestVersion = ManifestVersion
	}
	if m.ManifestVersion != ManifestVersion {
		return m, nil, fmt.Errorf("prepare: manifest_version %d, this nel writes %d", m.ManifestVersion, ManifestVersion)
	}
	hex, err := ParseHash(m.RecipeHash)
	if err != nil {
		return m, nil, fmt.Errorf("prepare: %w", err)
	}
	switch m.Kind {
	case KindRecipe:
		if m.RunID != "" {
			return m, nil, fmt.Errorf("prepare: a recipe entry has no run id (got %q)", m.RunID)
		}
	case KindResults:
		if err := checkRunID(m.RunID); err != nil {
			return m, nil, fmt.Errorf("prepare: %w", err)
		}
		if m.Recipe != "" || len(m.Overrides) > 0 {
			return m, nil, errors.New("prepare: recipe and overrides belong in the recipe entry, not in a results entry")
		}
	default:
		return m, nil, fmt.Errorf("prepare: kind %q, want %q or %q", m.Kind, KindRecipe, KindResults)
	}
	dir := entryDir(hex, &m)

	m.Files = make([]File, 0, len(files))
	locals := make(map[string]string, len(files))
	for rel, local := range files {
		if strings.HasPrefix(rel, "recipes/") || strings.HasPrefix(rel, "results/") {
			return m, nil, fmt.Errorf("prepare: file %q: paths are relative to the entry %s/ (e.g. %q), not to the store",
				rel, dir, path.Base(rel))
		}
		if err := checkRel(rel); err != nil {
			return m, nil, fmt.Errorf("prepare: file %w", err)
		}
		if rel == ManifestName {
			return m, nil, fmt.Errorf("prepare: %s is written by publish; leave it out of the files", ManifestName)
		}
		sum, size, err := hashFile(local)
		if err != nil {
			return m, nil, fmt.Errorf("prepare: %s: %w", rel, err)
		}
		m.Files = append(m.Files, File{Path: rel, SHA256: sum, Size: size})
		locals[rel] = local
	}
	slices.SortFunc(m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	// A file and a directory of the same name cannot both exist.
	for i := 1; i < len(m.Files); i++ {
		if strings.HasPrefix(m.Files[i].Path, m.Files[i-1].Path+"/") {
			return m, nil, fmt.Errorf("prepare: %q is both a file and a directory", m.Files[i-1].Path)
		}
	}
	if m.Kind == KindRecipe {
		c := m.file("canonical.json")
		if c == nil {
			return m, nil, errors.New("prepare: a recipe entry needs canonical.json (the canonical JSON its hash covers)")
		}
		if c.SHA256 != hex {
			return m, nil, fmt.Errorf("prepare: canonical.json (%s) has sha256:%s, not the recipe hash %s: it must hold exactly the bytes the hash covers, with no trailing newline",
				locals["canonical.json"], c.SHA256, m.RecipeHash)
		}
	}
	where := dir + "/" + ManifestName
	if err := m.check(where, m.Kind, hex, m.RunID); err != nil {
		return m, nil, fmt.Errorf("prepare: %w", err)
	}

	ups := make([]Upload, 0, len(m.Files)+1)
	for _, f := range m.Files {
		ups = append(ups, Upload{Path: dir + "/" + f.Path, Local: locals[f.Path], SHA256: f.SHA256, Size: f.Size})
	}
	mb, err := m.Encode()
	if err != nil {
		return m, nil, fmt.Errorf("prepare: %w", err)
	}
	ups = append(ups, Upload{Path: where, SHA256: sha256Hex(mb), Size: int64(len(mb)), Data: mb})
	return m, ups, nil
}

func hashFile(name string) (string, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Publish writes an entry to st: its files, then its manifest, then (for
// results) runs.json. See the package documentation for what happens when
// the entry is already there.
func Publish(ctx context.Context, st Store, m Manifest, files map[string]string) (PublishResult, error) {
	m, ups, err := Prepare(m, files)
	if err != nil {
		return PublishResult{}, err
	}
	hex, _ := ParseHash(m.RecipeHash)
	res := PublishResult{Entry: entryDir(hex, &m), Manifest: m}
	where := res.Entry + "/" + ManifestName

	old, err := readManifest(ctx, st, where)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return res, fmt.Errorf("publish: %w", err)
	default:
		if slices.Equal(old.Files, m.Files) {
			res.AlreadyPublished, res.Manifest = true, *old
			break
		}
		if m.Kind == KindRecipe {
			// Same hash, same methodology: the text published first
			// stays, and the caller says so.
			res.KeptExisting, res.Manifest = true, *old
			return res, nil
		}
		return res, fmt.Errorf("publish: run %s of %s is already in store %s with other files; a published run never changes: publish this one under a new run id",
			m.RunID, m.RecipeHash, st.Location())
	}

	if !res.AlreadyPublished {
		for _, u := range ups {
			if err := put(ctx, st, u); err != nil {
				return res, fmt.Errorf("publish: %w", err)
			}
			res.Uploaded = append(res.Uploaded, u.Path)
		}
	}
	if m.Kind != KindResults {
		return res, nil
	}

	// The index is updated even when the run was there already: a publish
	// interrupted between manifest and index is finished this way.
	idx, err := readIndex(ctx, st, hex)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return res, fmt.Errorf("publish: %w", err)
	}
	if idx == nil {
		idx = &Index{}
	}
	if res.AlreadyPublished && idx.has(m.RunID) {
		return res, nil
	}
	idx.Add(RunInfo{
		RunID:       m.RunID,
		PublishedAt: time.Now().UTC().Format(time.RFC3339),
		NelVersion:  m.NelVersion,
		Benchmarks:  Benchmarks(m),
	})
	b, err := idx.Encode()
	if err != nil {
		return res, fmt.Errorf("publish: %w", err)
	}
	ip := indexPath(hex)
	if err := st.Put(ctx, ip, bytes.NewReader(b), int64(len(b))); err != nil {
		return res, fmt.Errorf("publish: %s: %w", ip, err)
	}
	res.Uploaded = append(res.Uploaded, ip)
	return res, nil
}

// put writes one upload, checking that the local file still is what
// Prepare hashed: a file that changed in between would publish a manifest
// that lies.
func put(ctx context.Context, st Store, u Upload) error {
	if u.Local == "" {
		return st.Put(ctx, u.Path, bytes.NewReader(u.Data), u.Size)
	}
	f, err := os.Open(u.Local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != u.Size {
		return fmt.Errorf("%s changed while publishing (%d bytes, was %d)", u.Local, fi.Size(), u.Size)
	}
	if err := st.Put(ctx, u.Path, f, u.Size); err != nil {
		return err
	}
	// Re-hash after the upload: cheap next to the network, and it catches
	// a same-size rewrite that raced the upload.
	sum, _, err := hashFile(u.Local)
	if err != nil {
		return err
	}
	if sum != u.SHA256 {
		return fmt.Errorf("%s changed while publishing (sha256 %s, was %s); publish again", u.Local, sum, u.SHA256)
	}
	return nil
}

// Benchmarks names the benchmarks of a results entry: the directories
// holding an eval.json or a results.parquet, sorted.
func Benchmarks(m Manifest) []string {
	var out []string
	for _, f := range m.Files {
		dir, base := path.Split(f.Path)
		// A results entry keeps the run folder's names (rundir).
		if dir == "" || (base != rundir.BundleFile && base != rundir.ResultsFile) {
			continue
		}
		b := strings.TrimSuffix(dir, "/")
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}
