// Package store publishes recipes and their results to a content-addressed
// store, and fetches them back with integrity checks, so that anyone holding
// a recipe hash can check a published number.
//
// A store is a directory tree that any static file server can host. Nothing
// in it needs a listing: every file is found from the recipe hash alone.
//
//	<store>/
//	  recipes/<hex>/manifest.json        kind "recipe": every file below with its sha256 and size
//	  recipes/<hex>/recipe/<name>        the recipe as written (e.g. recipe/suite.cue)
//	  recipes/<hex>/recipe/<rel path>    local files the recipe references (data_path, rubric_file) by a
//	                                     path inside its folder, at the same path relative to the recipe
//	  recipes/<hex>/data/<digest>/<name> those it references elsewhere (an absolute path, a ../), under
//	                                     their content digest; the manifest's data list says which is which
//	  recipes/<hex>/canonical.json       the recipe's canonical JSON (what the hash covers)
//	  recipes/<hex>/lock.json            its lock file, when locked
//	  results/<hex>/runs.json            the index of published runs of this recipe (static servers can't list)
//	  results/<hex>/<run-id>/manifest.json   kind "results"
//	  results/<hex>/<run-id>/...         plan.json, report.md, report.html, <bench>/eval.json,
//	                                     <bench>/results.parquet, <bench>/trajectories.parquet, ...
//
// <hex> is the 64 lowercase hex digits of the recipe hash sha256:<hex>. An
// entry is one recipes/<hex>/ or results/<hex>/<run-id>/ directory; the
// paths in its manifest are relative to it, use "/" and are clean (no "..",
// no leading "/", no "\"). A file's sha256 in a manifest is 64 lowercase hex
// digits, as sha256sum prints it.
//
// canonical.json holds exactly the bytes the recipe hash covers (no trailing
// newline), so its sha256 is the hash itself. That is what makes the store
// content-addressed rather than merely named by hash: fetching a recipe
// checks canonical.json against the hash it was asked for, and every other
// file against the manifest. Results entries are claims about a recipe;
// their files are checked against their manifest.
//
// Publishing writes an entry's files first and its manifest.json last, so an
// interrupted publish never looks complete; publishing results then updates
// runs.json (read, add or replace the run, write). runs.json is rewritten
// whole, so two publishers racing on the same recipe can lose one run from
// the index (its entry stays in the store); publish again to re-add it.
//
// A recipe hash names one methodology: once recipes/<hex>/manifest.json
// exists, publishing the same hash with other files keeps the first entry.
// A results entry is immutable: publishing a run id again with other files
// is refused.
package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// ManifestVersion is the format version of Manifest.
const ManifestVersion = 1

// Entry kinds.
const (
	KindRecipe  = "recipe"
	KindResults = "results"
)

// ManifestName is the name of an entry's manifest, and IndexName the name
// of a recipe's run index under results/<hex>/.
const (
	ManifestName = "manifest.json"
	IndexName    = "runs.json"
)

// maxMeta caps what is read of a manifest or runs.json, so a hostile or
// broken store cannot make a fetch allocate without bound.
const maxMeta = 16 << 20

// Manifest lists the files of one entry.
type Manifest struct {
	ManifestVersion int    `json:"manifest_version"`
	Kind            string `json:"kind"`        // "recipe" or "results"
	RecipeHash      string `json:"recipe_hash"` // sha256:<hex>
	RunID           string `json:"run_id,omitempty"`
	NelVersion      string `json:"nel_version"`
	// Recipe is, for kind recipe, the recipe file, e.g. "recipe/suite.cue".
	Recipe string `json:"recipe,omitempty"`
	// Overrides are, for kind recipe, the -O path=value texts applied
	// before hashing.
	Overrides []string `json:"overrides,omitempty"`
	// Data lists, for kind recipe, the local files and folders the recipe
	// reads. The hash covers their content, not their paths, so whoever
	// fetches the recipe finds each by its digest wherever it lies.
	Data []DataRef `json:"data,omitempty"`
	// Files is sorted by Path; manifest.json itself is not listed.
	Files []File `json:"files"`
}

// DataRef is one local file or folder a published recipe reads.
type DataRef struct {
	// Field names it in the recipe as -O spells it:
	// benchmarks[0].params.data_path.
	Field string `json:"field"`
	// Spec is its path as the recipe (with its overrides) says it.
	Spec string `json:"spec"`
	// Digest is its dataset digest, "sha256:…" over its files' names and
	// sha256s (as nel-run records it).
	Digest string `json:"digest"`
	// Path is where the entry holds it, relative to the entry (a file, or
	// a folder of its files); "" when it was published without its data.
	Path string `json:"path,omitempty"`
}

// File is one file of an entry.
type File struct {
	Path   string `json:"path"`   // relative to the entry
	SHA256 string `json:"sha256"` // 64 lowercase hex digits
	Size   int64  `json:"size"`
}

// RunInfo describes one published run in runs.json.
type RunInfo struct {
	RunID       string   `json:"run_id"`
	PublishedAt string   `json:"published_at"` // RFC 3339, UTC
	NelVersion  string   `json:"nel_version"`
	Benchmarks  []string `json:"benchmarks"`
}

// Index is runs.json: the published runs of one recipe, ordered by RunID
// (which starts with the run's start time, so the last is the newest).
type Index struct {
	Runs []RunInfo `json:"runs"`
}

var (
	// ErrNotFound is what Store.Get returns (wrapped) for a file the store
	// does not have.
	ErrNotFound = errors.New("not found")
	// ErrUnknownHash says a recipe hash has no entry in the store.
	ErrUnknownHash = errors.New("unknown recipe hash")
	// ErrUnknownRun says a run id has no results entry in the store.
	ErrUnknownRun = errors.New("unknown run id")
	// ErrNoUploads says an http(s) store refused a PUT (405, 501 or 403).
	ErrNoUploads = errors.New("store does not accept uploads")
)

// IntegrityError is a fetched file (or manifest) that is not what the
// manifest (or the recipe hash) says it is.
type IntegrityError struct {
	Path string // store-relative path of the file
	Want string // what the manifest says: "sha256:<hex>" or "<n> bytes"
	Got  string // what the store sent, in the same form
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("%s: got %s, want %s: the store's copy is corrupt or has been tampered with; do not use it",
		e.Path, e.Got, e.Want)
}

// ParseHash returns the hex digits of a recipe hash "sha256:<64 lowercase hex>".
func ParseHash(s string) (string, error) {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok {
		return "", fmt.Errorf("recipe hash %q: want sha256:<64 lowercase hex digits> (as `nel hash` prints it)", s)
	}
	if !isHex64(h) {
		return "", fmt.Errorf("recipe hash %q: want 64 lowercase hex digits after \"sha256:\"", s)
	}
	return h, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RunID names a run by when it started and which plan it ran:
// "20261121T101500Z-<first 8 hex digits of the plan hash>". planHash may
// carry the "sha256:" prefix.
func RunID(started time.Time, planHash string) string {
	h := strings.TrimPrefix(planHash, "sha256:")
	if len(h) > 8 {
		h = h[:8]
	}
	return started.UTC().Format("20060102T150405Z") + "-" + h
}

// checkRunID keeps a run id one plain path segment.
func checkRunID(id string) error {
	if id == "" {
		return errors.New("run id is empty")
	}
	if len(id) > 128 || id[0] == '.' {
		return fmt.Errorf("run id %q: want letters, digits, '.', '_' and '-', not starting with '.'", id)
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("run id %q: want letters, digits, '.', '_' and '-', not starting with '.'", id)
		}
	}
	return nil
}

// checkRel accepts a relative, clean, slash-separated path that stays
// inside the directory it is relative to.
func checkRel(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.Contains(p, `\`):
		return fmt.Errorf("path %q contains a backslash", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q contains a NUL byte", p)
	case strings.HasPrefix(p, "/") || isWindowsAbs(p):
		return fmt.Errorf("path %q is absolute", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q is not clean", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("path %q leaves its directory", p)
		}
	}
	return nil
}

func isWindowsAbs(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

// entryDir is the store-relative directory of the entry m describes.
func entryDir(hex string, m *Manifest) string {
	if m.Kind == KindResults {
		return "results/" + hex + "/" + m.RunID
	}
	return "recipes/" + hex
}

func recipeManifestPath(hex string) string { return "recipes/" + hex + "/" + ManifestName }
func indexPath(hex string) string          { return "results/" + hex + "/" + IndexName }

// check validates a manifest's header and file list. want is the manifest's
// store path, for messages.
func (m *Manifest) check(where, kind, hex, runID string) error {
	if m.ManifestVersion != ManifestVersion {
		if m.ManifestVersion > ManifestVersion {
			return fmt.Errorf("%s: manifest_version %d is newer than this nel understands (%d); upgrade nel",
				where, m.ManifestVersion, ManifestVersion)
		}
		return fmt.Errorf("%s: manifest_version %d, want %d", where, m.ManifestVersion, ManifestVersion)
	}
	if m.Kind != kind {
		return fmt.Errorf("%s: kind %q, want %q", where, m.Kind, kind)
	}
	if m.RecipeHash != "sha256:"+hex {
		return fmt.Errorf("%s: recipe_hash %q, want %q", where, m.RecipeHash, "sha256:"+hex)
	}
	if m.RunID != runID {
		return fmt.Errorf("%s: run_id %q, want %q", where, m.RunID, runID)
	}
	if m.Recipe != "" {
		if err := checkRel(m.Recipe); err != nil {
			return fmt.Errorf("%s: recipe: %w", where, err)
		}
	}
	for i, f := range m.Files {
		if err := checkRel(f.Path); err != nil {
			return fmt.Errorf("%s: files[%d]: %w; refusing it", where, i, err)
		}
		if f.Path == ManifestName {
			return fmt.Errorf("%s: files[%d]: lists %s itself", where, i, ManifestName)
		}
		if i > 0 && m.Files[i-1].Path >= f.Path {
			return fmt.Errorf("%s: files[%d]: %q is out of order or repeated", where, i, f.Path)
		}
		if !isHex64(f.SHA256) {
			return fmt.Errorf("%s: files[%d] (%s): sha256 %q is not 64 lowercase hex digits", where, i, f.Path, f.SHA256)
		}
		if f.Size < 0 {
			return fmt.Errorf("%s: files[%d] (%s): negative size %d", where, i, f.Path, f.Size)
		}
	}
	if m.Recipe != "" && m.file(m.Recipe) == nil {
		return fmt.Errorf("%s: recipe %q is not among its files", where, m.Recipe)
	}
	for i, d := range m.Data {
		if !strings.HasPrefix(d.Digest, "sha256:") || !isHex64(strings.TrimPrefix(d.Digest, "sha256:")) {
			return fmt.Errorf("%s: data[%d] (%s): digest %q is not sha256:<64 lowercase hex digits>", where, i, d.Field, d.Digest)
		}
		if d.Path == "" {
			continue
		}
		if err := checkRel(d.Path); err != nil {
			return fmt.Errorf("%s: data[%d] (%s): %w; refusing it", where, i, d.Field, err)
		}
		if m.file(d.Path) == nil && !m.hasDir(d.Path) {
			return fmt.Errorf("%s: data[%d] (%s): %q is not among its files", where, i, d.Field, d.Path)
		}
	}
	if kind == KindRecipe {
		// The chain from hash to every byte: canonical.json's sha256 is
		// the hash, and the manifest vouches for the rest.
		c := m.file("canonical.json")
		if c == nil {
			return fmt.Errorf("%s: no canonical.json; a recipe entry needs it to be checked against its hash", where)
		}
		if c.SHA256 != hex {
			return &IntegrityError{Path: path.Join(path.Dir(where), "canonical.json"), Want: "sha256:" + hex, Got: "sha256:" + c.SHA256}
		}
	}
	return nil
}

// hasDir says whether some file of the entry lies under the folder p.
func (m *Manifest) hasDir(p string) bool {
	i, _ := slices.BinarySearchFunc(m.Files, p+"/", func(f File, p string) int { return strings.Compare(f.Path, p) })
	return i < len(m.Files) && strings.HasPrefix(m.Files[i].Path, p+"/")
}

func (m *Manifest) file(p string) *File {
	i, ok := slices.BinarySearchFunc(m.Files, p, func(f File, p string) int { return strings.Compare(f.Path, p) })
	if !ok {
		return nil
	}
	return &m.Files[i]
}

// Encode is the manifest as stored: indented JSON with a final newline.
func (m Manifest) Encode() ([]byte, error) {
	if m.Files == nil {
		m.Files = []File{}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Encode is runs.json as stored.
func (x Index) Encode() ([]byte, error) {
	if x.Runs == nil {
		x.Runs = []RunInfo{}
	}
	for i := range x.Runs {
		if x.Runs[i].Benchmarks == nil {
			x.Runs[i].Benchmarks = []string{}
		}
	}
	b, err := json.MarshalIndent(x, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Add adds run to the index, replacing a run with the same id, and keeps
// the index ordered by RunID.
func (x *Index) Add(run RunInfo) {
	i, found := slices.BinarySearchFunc(x.Runs, run.RunID, func(r RunInfo, id string) int { return strings.Compare(r.RunID, id) })
	if found {
		x.Runs[i] = run
		return
	}
	x.Runs = slices.Insert(x.Runs, i, run)
}

// has reports whether the index lists run id.
func (x *Index) has(id string) bool {
	return slices.ContainsFunc(x.Runs, func(r RunInfo) bool { return r.RunID == id })
}

func (x *Index) ids() []string {
	ids := make([]string, len(x.Runs))
	for i, r := range x.Runs {
		ids[i] = r.RunID
	}
	return ids
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
