package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nel-eval/nel/analysis/store"
	"github.com/nel-eval/nel/analysis/store/storetest"
)

// A small recipe entry: canonical.json is "{}", whose sha256 (from
// sha256sum) is the recipe hash.
const (
	canonHex  = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	canonHash = "sha256:" + canonHex
	helloHex  = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" // "hello\n"
	x1Hex     = "d09edadd173a8bbc233d47dcafc30cc876af2fb569812f2bbe0e92a1905bbce8" // "x: 1\n"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// writeFiles writes name → content under a fresh directory and returns the
// entry-relative → local map Publish takes.
func writeFiles(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for rel, content := range files {
		l := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(l, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		out[rel] = l
	}
	return out
}

func recipeFiles(t *testing.T) map[string]string {
	return writeFiles(t, map[string]string{
		"canonical.json":         "{}",
		"recipe/suite.cue":       "x: 1\n",
		"recipe/data/items.json": "hello\n",
	})
}

func recipeManifest() store.Manifest {
	return store.Manifest{Kind: store.KindRecipe, RecipeHash: canonHash, NelVersion: "0.9.0",
		Recipe: "recipe/suite.cue", Overrides: []string{"benchmarks[0].repeats=2"}}
}

func resultsFiles(t *testing.T, score string) map[string]string {
	return writeFiles(t, map[string]string{
		"plan.json":               `{"plan":1}`,
		"report.md":               "# report\n" + score,
		"gsm8k/eval.json":         `{"pass@1":` + score + `}`,
		"gsm8k/results.parquet":   "PAR1\x00\x01\x02binary\xffPAR1",
		"mmlu/results.parquet":    "PAR1mmluPAR1",
		"mmlu/shards/00.parquet":  "PAR1shardPAR1",
		"provenance/machine.json": "{}",
	})
}

func resultsManifest(runID string) store.Manifest {
	return store.Manifest{Kind: store.KindResults, RecipeHash: canonHash, RunID: runID, NelVersion: "0.9.0"}
}

func openDir(t *testing.T) (store.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st, dir
}

func openHTTP(t *testing.T, acceptPut bool, opts store.Options) (store.Store, string, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	srv := httptest.NewServer(storetest.Handler(dir, acceptPut))
	t.Cleanup(srv.Close)
	st, err := store.Open(srv.URL+"/nel-store", opts)
	if err != nil {
		t.Fatal(err)
	}
	return st, filepath.Join(dir, "nel-store"), srv
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameFiles checks that every local file is byte-identical under dir.
func sameFiles(t *testing.T, files map[string]string, dir string) {
	t.Helper()
	for rel, local := range files {
		if got, want := readFile(t, filepath.Join(dir, filepath.FromSlash(rel))), readFile(t, local); !bytes.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", rel, got, want)
		}
	}
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func TestManifestShape(t *testing.T) {
	m, ups, err := store.Prepare(recipeManifest(), recipeFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "manifest_version": 1,
  "kind": "recipe",
  "recipe_hash": "sha256:` + canonHex + `",
  "nel_version": "0.9.0",
  "recipe": "recipe/suite.cue",
  "overrides": [
    "benchmarks[0].repeats=2"
  ],
  "files": [
    {
      "path": "canonical.json",
      "sha256": "` + canonHex + `",
      "size": 2
    },
    {
      "path": "recipe/data/items.json",
      "sha256": "` + helloHex + `",
      "size": 6
    },
    {
      "path": "recipe/suite.cue",
      "sha256": "` + x1Hex + `",
      "size": 5
    }
  ]
}
`
	if string(got) != want {
		t.Errorf("manifest:\n%s\nwant:\n%s", got, want)
	}
	e := "recipes/" + canonHex + "/"
	wantPaths := []string{e + "canonical.json", e + "recipe/data/items.json", e + "recipe/suite.cue", e + "manifest.json"}
	var paths []string
	for _, u := range ups {
		paths = append(paths, u.Path)
	}
	if !slices.Equal(paths, wantPaths) {
		t.Errorf("upload paths %q, want %q", paths, wantPaths)
	}
	last := ups[len(ups)-1]
	if last.Local != "" || !bytes.Equal(last.Data, got) || last.SHA256 != sum(got) || last.Size != int64(len(got)) {
		t.Errorf("manifest upload %+v does not carry the manifest", last)
	}
	if ups[1].SHA256 != helloHex || ups[1].Size != 6 || !strings.HasSuffix(ups[1].Local, "items.json") {
		t.Errorf("upload %+v", ups[1])
	}
}

func TestPrepareRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		m     store.Manifest
		files map[string]string
		want  string
	}{
		{"store-relative path", recipeManifest(), map[string]string{"recipes/" + canonHex + "/canonical.json": "{}", "canonical.json": "{}"}, "relative to the entry"},
		{"no canonical.json", store.Manifest{Kind: "recipe", RecipeHash: canonHash}, map[string]string{"recipe/suite.cue": "x: 1\n"}, "needs canonical.json"},
		{"canonical with newline", store.Manifest{Kind: "recipe", RecipeHash: canonHash}, map[string]string{"canonical.json": "{}\n"}, "no trailing newline"},
		{"recipe file missing", recipeManifest(), map[string]string{"canonical.json": "{}"}, `recipe "recipe/suite.cue" is not among its files`},
		{"dot-dot", store.Manifest{Kind: "recipe", RecipeHash: canonHash}, map[string]string{"canonical.json": "{}", "../x": "a"}, `"../x" leaves its directory`},
		{"manifest as file", store.Manifest{Kind: "recipe", RecipeHash: canonHash}, map[string]string{"canonical.json": "{}", "manifest.json": "{}"}, "written by publish"},
		{"bad hash", store.Manifest{Kind: "recipe", RecipeHash: canonHex}, map[string]string{"canonical.json": "{}"}, "want sha256:<64"},
		{"results without run id", resultsManifest(""), map[string]string{"plan.json": "{}"}, "run id is empty"},
		{"results run id with slash", resultsManifest("a/b"), map[string]string{"plan.json": "{}"}, `run id "a/b"`},
		{"file and directory", resultsManifest("r1"), map[string]string{"a": "1", "a/b": "2"}, `"a" is both a file and a directory`},
		{"unknown kind", store.Manifest{Kind: "recipes", RecipeHash: canonHash}, map[string]string{"canonical.json": "{}"}, `kind "recipes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			dir := t.TempDir()
			i := 0
			for rel, content := range tc.files {
				l := filepath.Join(dir, fmt.Sprint(i))
				i++
				os.WriteFile(l, []byte(content), 0o644)
				files[rel] = l
			}
			_, _, err := store.Prepare(tc.m, files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRoundTripDir(t *testing.T) {
	st, root := openDir(t)
	testRoundTrip(t, st, root)
}

func TestRoundTripHTTP(t *testing.T) {
	st, root, srv := openHTTP(t, true, store.Options{})
	if st.Location() != srv.URL+"/nel-store" {
		t.Errorf("Location() = %q", st.Location())
	}
	testRoundTrip(t, st, root)
}

func TestRoundTripFileURL(t *testing.T) {
	root := t.TempDir()
	st, err := store.Open("file://"+filepath.ToSlash(root), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testRoundTrip(t, st, root)
}

// testRoundTrip publishes a recipe and a run to st (whose files lie under
// root) and fetches both back.
func testRoundTrip(t *testing.T, st store.Store, root string) {
	ctx := context.Background()
	rf := recipeFiles(t)
	res, err := store.Publish(ctx, st, recipeManifest(), rf)
	if err != nil {
		t.Fatal(err)
	}
	if res.AlreadyPublished || res.KeptExisting || res.Entry != "recipes/"+canonHex || len(res.Uploaded) != 4 {
		t.Errorf("publish result %+v", res)
	}
	entry := filepath.Join(root, "recipes", canonHex)
	sameFiles(t, rf, entry)

	dest := filepath.Join(t.TempDir(), "fetched")
	m, err := store.FetchRecipe(ctx, st, canonHash, dest)
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, rf, dest)
	if !bytes.Equal(readFile(t, filepath.Join(dest, "manifest.json")), readFile(t, filepath.Join(entry, "manifest.json"))) {
		t.Error("fetched manifest.json differs from the store's")
	}
	if m.Recipe != "recipe/suite.cue" || len(m.Files) != 3 || m.Overrides[0] != "benchmarks[0].repeats=2" {
		t.Errorf("fetched manifest %+v", m)
	}

	rs := resultsFiles(t, "0.5")
	runID := store.RunID(time.Date(2026, 11, 21, 10, 15, 0, 0, time.UTC), "sha256:0123456789abcdef")
	if _, err := store.Publish(ctx, st, resultsManifest(runID), rs); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, rs, filepath.Join(root, "results", canonHex, runID))
	rdest := filepath.Join(t.TempDir(), "run")
	rm, err := store.FetchResults(ctx, st, canonHash, "", rdest)
	if err != nil {
		t.Fatal(err)
	}
	if rm.RunID != runID {
		t.Errorf("fetched run %q, want %q", rm.RunID, runID)
	}
	sameFiles(t, rs, rdest)
	if !exists(filepath.Join(rdest, "manifest.json")) {
		t.Error("no manifest.json after a complete fetch")
	}
}

func TestRunID(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	got := store.RunID(time.Date(2026, 11, 21, 11, 15, 0, 0, cet), "sha256:abcdef0123456789")
	if got != "20261121T101500Z-abcdef01" {
		t.Errorf("RunID = %q", got)
	}
}

func TestParseHash(t *testing.T) {
	if h, err := store.ParseHash(canonHash); err != nil || h != canonHex {
		t.Errorf("ParseHash(%q) = %q, %v", canonHash, h, err)
	}
	for _, bad := range []string{canonHex, "sha256:" + strings.ToUpper(canonHex), "sha256:" + canonHex[:63], "sha512:" + canonHex, "sha256:" + canonHex + "0", ""} {
		if _, err := store.ParseHash(bad); err == nil || !strings.Contains(err.Error(), "64 lowercase hex") {
			t.Errorf("ParseHash(%q) err = %v", bad, err)
		}
	}
}

func TestRunsIndex(t *testing.T) {
	ctx := context.Background()
	st, root := openDir(t)
	older, newer := "20261121T101500Z-aaaaaaaa", "20261122T080000Z-bbbbbbbb"
	// Publish the newer first: the index is ordered by run id, not by
	// publishing order.
	if _, err := store.Publish(ctx, st, resultsManifest(newer), resultsFiles(t, "0.7")); err != nil {
		t.Fatal(err)
	}
	older0 := resultsFiles(t, "0.5")
	delete(older0, "mmlu/results.parquet")
	delete(older0, "mmlu/shards/00.parquet")
	m := resultsManifest(older)
	m.NelVersion = "0.8.0"
	if _, err := store.Publish(ctx, st, m, older0); err != nil {
		t.Fatal(err)
	}
	b := readFile(t, filepath.Join(root, "results", canonHex, "runs.json"))
	var raw struct {
		Runs []struct {
			RunID       string   `json:"run_id"`
			PublishedAt string   `json:"published_at"`
			NelVersion  string   `json:"nel_version"`
			Benchmarks  []string `json:"benchmarks"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("runs.json: %v\n%s", err, b)
	}
	if len(raw.Runs) != 2 {
		t.Fatalf("runs.json has %d runs:\n%s", len(raw.Runs), b)
	}
	r0, r1 := raw.Runs[0], raw.Runs[1]
	if r0.RunID != older || r0.NelVersion != "0.8.0" || !slices.Equal(r0.Benchmarks, []string{"gsm8k"}) {
		t.Errorf("runs[0] = %+v", r0)
	}
	if r1.RunID != newer || r1.NelVersion != "0.9.0" || !slices.Equal(r1.Benchmarks, []string{"gsm8k", "mmlu"}) {
		t.Errorf("runs[1] = %+v", r1)
	}
	for _, r := range raw.Runs {
		if ts, err := time.Parse(time.RFC3339, r.PublishedAt); err != nil || time.Since(ts) > time.Hour {
			t.Errorf("published_at %q: %v", r.PublishedAt, err)
		}
	}

	x, err := store.ReadIndex(ctx, st, canonHash)
	if err != nil || len(x.Runs) != 2 || x.Runs[1].RunID != newer {
		t.Errorf("ReadIndex = %+v, %v", x, err)
	}
	// "" fetches the newest; an explicit id fetches that one.
	m1, err := store.FetchResults(ctx, st, canonHash, "", t.TempDir())
	if err != nil || m1.RunID != newer {
		t.Errorf("FetchResults newest: %v, %v", m1, err)
	}
	dest := t.TempDir()
	m0, err := store.FetchResults(ctx, st, canonHash, older, dest)
	if err != nil || m0.RunID != older {
		t.Errorf("FetchResults older: %v, %v", m0, err)
	}
	sameFiles(t, older0, dest)

	_, err = store.FetchResults(ctx, st, canonHash, "20990101T000000Z-cccccccc", t.TempDir())
	if !errors.Is(err, store.ErrUnknownRun) || !strings.Contains(err.Error(), "runs there: "+older+", "+newer) {
		t.Errorf("unknown run: %v", err)
	}
}

// countingStore counts Puts, and fails the failAt-th one when failAt > 0.
type countingStore struct {
	store.Store
	puts   atomic.Int32
	failAt int32
}

func (c *countingStore) Put(ctx context.Context, p string, r io.Reader, size int64) error {
	if n := c.puts.Add(1); n == c.failAt {
		return fmt.Errorf("put %s: simulated network failure", p)
	}
	return c.Store.Put(ctx, p, r, size)
}

func TestRepublish(t *testing.T) {
	ctx := context.Background()
	base, root := openDir(t)
	st := &countingStore{Store: base}
	rf := recipeFiles(t)
	if _, err := store.Publish(ctx, st, recipeManifest(), rf); err != nil {
		t.Fatal(err)
	}
	st.puts.Store(0)
	res, err := store.Publish(ctx, st, recipeManifest(), recipeFiles(t))
	if err != nil || !res.AlreadyPublished || res.KeptExisting || len(res.Uploaded) != 0 || st.puts.Load() != 0 {
		t.Errorf("identical re-publish: %+v, %v, %d puts", res, err, st.puts.Load())
	}

	// Same hash, another text of the recipe: the first text stays.
	other := writeFiles(t, map[string]string{"canonical.json": "{}", "recipe/suite.cue": "// reformatted\nx: 1\n"})
	res, err = store.Publish(ctx, st, recipeManifest(), other)
	if err != nil || !res.KeptExisting || res.AlreadyPublished || st.puts.Load() != 0 {
		t.Errorf("different recipe files: %+v, %v, %d puts", res, err, st.puts.Load())
	}
	if len(res.Manifest.Files) != 3 {
		t.Errorf("KeptExisting returns the stored manifest; got %+v", res.Manifest)
	}
	if got := readFile(t, filepath.Join(root, "recipes", canonHex, "recipe", "suite.cue")); string(got) != "x: 1\n" {
		t.Errorf("suite.cue replaced: %q", got)
	}

	// Results: identical is a no-op (runs.json untouched), different files
	// under the same run id are refused.
	run := "20261121T101500Z-aaaaaaaa"
	rs := resultsFiles(t, "0.5")
	if _, err := store.Publish(ctx, st, resultsManifest(run), rs); err != nil {
		t.Fatal(err)
	}
	idx := readFile(t, filepath.Join(root, "results", canonHex, "runs.json"))
	st.puts.Store(0)
	res, err = store.Publish(ctx, st, resultsManifest(run), rs)
	if err != nil || !res.AlreadyPublished || st.puts.Load() != 0 {
		t.Errorf("identical results re-publish: %+v, %v, %d puts", res, err, st.puts.Load())
	}
	if !bytes.Equal(idx, readFile(t, filepath.Join(root, "results", canonHex, "runs.json"))) {
		t.Error("runs.json rewritten by a no-op publish")
	}
	_, err = store.Publish(ctx, st, resultsManifest(run), resultsFiles(t, "0.9"))
	if err == nil || !strings.Contains(err.Error(), "already in store") || !strings.Contains(err.Error(), run) {
		t.Errorf("changed run: %v", err)
	}
	if st.puts.Load() != 0 {
		t.Errorf("a refused publish wrote %d files", st.puts.Load())
	}
}

func TestInterruptedPublish(t *testing.T) {
	ctx := context.Background()
	base, root := openDir(t)
	st := &countingStore{Store: base, failAt: 2}
	rf := recipeFiles(t)
	if _, err := store.Publish(ctx, st, recipeManifest(), rf); err == nil || !strings.Contains(err.Error(), "simulated network failure") {
		t.Fatalf("publish with a failing put: %v", err)
	}
	if exists(filepath.Join(root, "recipes", canonHex, "manifest.json")) {
		t.Fatal("an interrupted publish left a manifest")
	}
	if _, err := store.FetchRecipe(ctx, base, canonHash, t.TempDir()); !errors.Is(err, store.ErrUnknownHash) {
		t.Errorf("fetch after an interrupted publish: %v", err)
	}

	// Results interrupted after the manifest (runs.json failed): publishing
	// again finishes the index.
	st = &countingStore{Store: base, failAt: 9} // 7 files + manifest, then runs.json
	run := "20261121T101500Z-aaaaaaaa"
	rs := resultsFiles(t, "0.5")
	if _, err := store.Publish(ctx, st, resultsManifest(run), rs); err == nil {
		t.Fatal("publish with a failing runs.json put succeeded")
	}
	if _, err := store.FetchResults(ctx, base, canonHash, "", t.TempDir()); !errors.Is(err, store.ErrUnknownHash) {
		t.Errorf("newest run before the index is written: %v", err)
	}
	res, err := store.Publish(ctx, base, resultsManifest(run), rs)
	if err != nil || !res.AlreadyPublished || !slices.Equal(res.Uploaded, []string{"results/" + canonHex + "/runs.json"}) {
		t.Errorf("re-publish: %+v, %v", res, err)
	}
	if m, err := store.FetchResults(ctx, base, canonHash, "", t.TempDir()); err != nil || m.RunID != run {
		t.Errorf("newest run after re-publish: %v, %v", m, err)
	}
}

func TestTampered(t *testing.T) {
	ctx := context.Background()
	st, root, _ := openHTTP(t, true, store.Options{})
	if _, err := store.Publish(ctx, st, recipeManifest(), recipeFiles(t)); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(root, "recipes", canonHex)
	suite := filepath.Join(entry, "recipe", "suite.cue")
	b := readFile(t, suite)
	b[0] = 'y' // "y: 1\n": same size, other bytes
	os.WriteFile(suite, b, 0o644)

	dest := t.TempDir()
	_, err := store.FetchRecipe(ctx, st, canonHash, dest)
	var ie *store.IntegrityError
	if !errors.As(err, &ie) {
		t.Fatalf("fetch of a tampered file: %v", err)
	}
	want := "recipes/" + canonHex + "/recipe/suite.cue"
	if ie.Path != want || ie.Want != "sha256:"+x1Hex || ie.Got != "sha256:"+sum(b) {
		t.Errorf("IntegrityError %+v", ie)
	}
	if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, "corrupt or has been tampered with") {
		t.Errorf("message %q", msg)
	}
	if exists(filepath.Join(dest, "manifest.json")) || exists(filepath.Join(dest, "recipe", "suite.cue")) {
		t.Error("a failed fetch left manifest.json or the bad file")
	}

	// A longer file is caught by size.
	os.WriteFile(suite, []byte("x: 1\nevil: true\n"), 0o644)
	_, err = store.FetchRecipe(ctx, st, canonHash, dest)
	if !errors.As(err, &ie) || ie.Want != "5 bytes" || ie.Got != "more than 5 bytes" {
		t.Errorf("longer file: %v", err)
	}

	// Rewriting canonical.json and the manifest together does not pass:
	// canonical.json must hash to the hash asked for.
	os.WriteFile(suite, []byte("x: 1\n"), 0o644)
	evil := []byte(`{"evil":true}`)
	os.WriteFile(filepath.Join(entry, "canonical.json"), evil, 0o644)
	mp := filepath.Join(entry, "manifest.json")
	mb := bytes.Replace(readFile(t, mp), []byte(`"sha256": "`+canonHex+`",
      "size": 2`), []byte(`"sha256": "`+sum(evil)+`",
      "size": 13`), 1)
	os.WriteFile(mp, mb, 0o644)
	_, err = store.FetchRecipe(ctx, st, canonHash, dest)
	if !errors.As(err, &ie) || ie.Path != "recipes/"+canonHex+"/canonical.json" || ie.Got != "sha256:"+sum(evil) {
		t.Errorf("swapped canonical.json: %v", err)
	}
}

func TestHostileManifest(t *testing.T) {
	ctx := context.Background()
	for _, bad := range []string{"../x", "recipe/../../x", "/tmp/x", `..\x`, "recipe//x", "./x", "C:/x"} {
		t.Run(bad, func(t *testing.T) {
			st, root := openDir(t)
			entry := filepath.Join(root, "recipes", canonHex)
			os.MkdirAll(entry, 0o755)
			os.WriteFile(filepath.Join(entry, "canonical.json"), []byte("{}"), 0o644)
			files := []store.File{{Path: "canonical.json", SHA256: canonHex, Size: 2}, {Path: bad, SHA256: helloHex, Size: 6}}
			slices.SortFunc(files, func(a, b store.File) int { return strings.Compare(a.Path, b.Path) })
			mb, _ := json.Marshal(store.Manifest{ManifestVersion: 1, Kind: "recipe", RecipeHash: canonHash, Files: files})
			os.WriteFile(filepath.Join(entry, "manifest.json"), mb, 0o644)
			os.WriteFile(filepath.Join(root, "x"), []byte("hello\n"), 0o644)

			parent := t.TempDir()
			dest := filepath.Join(parent, "dest")
			_, err := store.FetchRecipe(ctx, st, canonHash, dest)
			if err == nil || !strings.Contains(err.Error(), "refusing") || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
				t.Errorf("err = %v", err)
			}
			if exists(filepath.Join(parent, "x")) || exists(dest) {
				t.Error("a refused manifest wrote something")
			}
		})
	}
}

func TestBadManifests(t *testing.T) {
	ctx := context.Background()
	write := func(t *testing.T, content []byte) (store.Store, string) {
		st, root := openDir(t)
		entry := filepath.Join(root, "recipes", canonHex)
		os.MkdirAll(entry, 0o755)
		os.WriteFile(filepath.Join(entry, "manifest.json"), content, 0o644)
		return st, "recipes/" + canonHex + "/manifest.json"
	}
	for _, tc := range []struct {
		name, content, want string
	}{
		{"html", "<html>404 page</html>", "is not a valid manifest"},
		{"newer version", `{"manifest_version":2,"kind":"recipe","recipe_hash":"` + canonHash + `","files":[]}`, "upgrade nel"},
		{"wrong kind", `{"manifest_version":1,"kind":"results","recipe_hash":"` + canonHash + `","files":[]}`, `kind "results", want "recipe"`},
		{"wrong hash", `{"manifest_version":1,"kind":"recipe","recipe_hash":"sha256:` + helloHex + `","files":[]}`, "recipe_hash"},
		{"no canonical", `{"manifest_version":1,"kind":"recipe","recipe_hash":"` + canonHash + `","files":[]}`, "no canonical.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, p := write(t, []byte(tc.content))
			_, err := store.FetchRecipe(ctx, st, canonHash, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want it to name %s and say %q", err, p, tc.want)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		st, _ := write(t, bytes.Repeat([]byte(" "), 16<<20+1))
		_, err := store.FetchRecipe(ctx, st, canonHash, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "over 16 MiB") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestUnknownHash(t *testing.T) {
	ctx := context.Background()
	dst, _ := openDir(t)
	hst, _, _ := openHTTP(t, true, store.Options{})
	for _, st := range []store.Store{dst, hst} {
		want := canonHash + " is not in the store " + st.Location() + " (no recipes/" + canonHex + "/manifest.json)"
		_, err := store.FetchRecipe(ctx, st, canonHash, t.TempDir())
		if !errors.Is(err, store.ErrUnknownHash) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: FetchRecipe: %v", st.Location(), err)
		}
		if _, err := store.ReadIndex(ctx, st, canonHash); !errors.Is(err, store.ErrUnknownHash) {
			t.Errorf("%s: ReadIndex: %v", st.Location(), err)
		}
		if _, err := store.FetchResults(ctx, st, canonHash, "20261121T101500Z-aaaaaaaa", t.TempDir()); !errors.Is(err, store.ErrUnknownHash) {
			t.Errorf("%s: FetchResults: %v", st.Location(), err)
		}
	}
	// A recipe with no runs yet has an empty index, and no newest run.
	if _, err := store.Publish(ctx, dst, recipeManifest(), recipeFiles(t)); err != nil {
		t.Fatal(err)
	}
	if x, err := store.ReadIndex(ctx, dst, canonHash); err != nil || len(x.Runs) != 0 {
		t.Errorf("ReadIndex of a recipe without runs: %+v, %v", x, err)
	}
	if _, err := store.FetchResults(ctx, dst, canonHash, "", t.TempDir()); !errors.Is(err, store.ErrUnknownRun) || !strings.Contains(err.Error(), "no published runs") {
		t.Errorf("FetchResults newest without runs: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	t.Setenv("NEL_TEST_STORE_TOKEN", "s3cret-unreachable")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	st, err := store.Open("http://user:hunter2@"+addr+"/store", store.Options{TokenEnv: "NEL_TEST_STORE_TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Location() != "http://"+addr+"/store" {
		t.Errorf("Location() = %q carries credentials", st.Location())
	}
	_, err = store.FetchRecipe(context.Background(), st, canonHash, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "store http://"+addr+"/store unreachable") {
		t.Errorf("closed port: %v", err)
	}
	if err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "hunter2")) {
		t.Errorf("error carries a secret: %v", err)
	}
}

func TestMissingDirectory(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "absent", "store")
	st, err := store.Open(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Fetching says the directory is not there.
	_, err = store.FetchRecipe(ctx, st, canonHash, t.TempDir())
	if !errors.Is(err, store.ErrUnknownHash) || !strings.Contains(err.Error(), "the directory does not exist") {
		t.Errorf("fetch from a missing directory: %v", err)
	}
	// Publishing creates it.
	if _, err := store.Publish(ctx, st, recipeManifest(), recipeFiles(t)); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(root, "recipes", canonHex, "manifest.json")) {
		t.Error("publish to a new directory wrote no manifest")
	}
}

func TestPutRefused(t *testing.T) {
	st, root, _ := openHTTP(t, false, store.Options{})
	_, err := store.Publish(context.Background(), st, recipeManifest(), recipeFiles(t))
	if !errors.Is(err, store.ErrNoUploads) || !strings.Contains(err.Error(), "nel publish --print") || !strings.Contains(err.Error(), "405") {
		t.Errorf("PUT refused: %v", err)
	}
	if exists(filepath.Join(root, "recipes", canonHex, "manifest.json")) {
		t.Error("manifest written to a store that refuses uploads")
	}
}

func TestBearerToken(t *testing.T) {
	const token = "s3cret-token-value"
	t.Setenv("NEL_TEST_STORE_TOKEN", token)
	dir := t.TempDir()
	files := storetest.Handler(dir, true)
	var requests, bad atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+token {
			bad.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/runs.json") {
			http.Error(w, "read-only index", http.StatusForbidden)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := store.Open(srv.URL, store.Options{TokenEnv: "NEL_TEST_STORE_TOKEN", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := store.Publish(ctx, st, recipeManifest(), recipeFiles(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := store.FetchRecipe(ctx, st, canonHash, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	// Errors: a 403, an unknown hash, and a 401 (no token sent).
	var errs []error
	_, err = store.Publish(ctx, st, resultsManifest("20261121T101500Z-aaaaaaaa"), resultsFiles(t, "0.5"))
	errs = append(errs, err)
	_, err = store.FetchRecipe(ctx, st, "sha256:"+helloHex, t.TempDir())
	errs = append(errs, err)
	if requests.Load() == 0 || bad.Load() != 0 {
		t.Errorf("%d requests, %d without the token", requests.Load(), bad.Load())
	}
	t.Setenv("NEL_TEST_STORE_TOKEN", "")
	unset, _ := store.Open(srv.URL, store.Options{TokenEnv: "NEL_TEST_STORE_TOKEN", Logger: log})
	_, err = store.FetchRecipe(ctx, unset, canonHash, t.TempDir())
	errs = append(errs, err)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "$NEL_TEST_STORE_TOKEN is not set") {
		t.Errorf("401: %v", err)
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("error %d: nil", i)
		} else if strings.Contains(err.Error(), token) || strings.Contains(fmt.Sprintf("%+v %#v", err, st), token) {
			t.Errorf("error %d carries the token: %v", i, err)
		}
	}
	if !strings.Contains(errs[0].Error(), "403") || !strings.Contains(errs[0].Error(), "check the token in $NEL_TEST_STORE_TOKEN") {
		t.Errorf("403: %v", errs[0])
	}
	if logs.Len() == 0 || strings.Contains(logs.String(), token) {
		t.Errorf("logs (%d bytes) carry the token or are empty", logs.Len())
	}
}

func TestRetry(t *testing.T) {
	dir := t.TempDir()
	files := storetest.Handler(dir, true)
	var puts, fails atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The first two requests for each file fail: 503, then 429.
		if r.Method == http.MethodPut {
			switch puts.Add(1) % 3 {
			case 1:
				fails.Add(1)
				io.Copy(io.Discard, r.Body)
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			case 2:
				fails.Add(1)
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	st, err := store.Open(srv.URL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rf := writeFiles(t, map[string]string{"canonical.json": "{}"})
	if _, err := store.Publish(context.Background(), st, store.Manifest{Kind: "recipe", RecipeHash: canonHash}, rf); err != nil {
		t.Fatal(err)
	}
	if fails.Load() != 4 || puts.Load() != 6 {
		t.Errorf("%d PUTs, %d failed; want 6 and 4", puts.Load(), fails.Load())
	}
	if got := readFile(t, filepath.Join(dir, "recipes", canonHex, "canonical.json")); string(got) != "{}" {
		t.Errorf("canonical.json after retries: %q", got)
	}

	// A server that stays down gives up after two retries.
	var gets atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	st, _ = store.Open(down.URL, store.Options{})
	_, err = store.FetchRecipe(context.Background(), st, canonHash, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "502") || gets.Load() != 3 {
		t.Errorf("after %d GETs: %v", gets.Load(), err)
	}
}

func TestOpen(t *testing.T) {
	for _, bad := range []string{"", "ftp://host/x", "https://host/x?sig=abc", "http:///x"} {
		if _, err := store.Open(bad, store.Options{}); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := store.Open(f, store.Options{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Open(file): %v", err)
	}
}
