package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// mockHub mimics the Hub's revision API and resolve URLs.
type mockHub struct {
	t     *testing.T
	mu    sync.Mutex
	repos map[string]*mockRepo
	// counters and what the server saw
	apiHits  map[string]int // repo -> API requests
	fileHits int
	auth     []string // Authorization headers, one per request
}

type mockRepo struct {
	revs    map[string]*mockRev // revision name or sha -> files
	token   string              // required bearer token ("" = public)
	badSHA  bool                // advertise wrong lfs sha256s
	fail    int                 // answer the API 500 this many times first
	invalid bool                // answer the API with broken JSON
}

type mockRev struct {
	sha   string
	files map[string][]byte
}

func sha40(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:40]
}

func (m *mockHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.auth = append(m.auth, r.Header.Get("Authorization"))
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/datasets/"):
		rest := strings.TrimPrefix(p, "/api/datasets/")
		parts := strings.SplitN(rest, "/", 4) // org, name, "revision", rev
		if len(parts) != 4 || parts[2] != "revision" {
			http.NotFound(w, r)
			return
		}
		repo, rev := parts[0]+"/"+parts[1], parts[3]
		m.apiHits[repo]++
		mr := m.repos[repo]
		if mr == nil {
			http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
			return
		}
		if mr.token != "" && r.Header.Get("Authorization") != "Bearer "+mr.token {
			http.Error(w, `{"error":"Access to dataset is restricted"}`, http.StatusUnauthorized)
			return
		}
		if mr.fail > 0 {
			mr.fail--
			http.Error(w, "oops", http.StatusInternalServerError)
			return
		}
		if mr.invalid {
			w.Write([]byte(`{"sha": "abc", "siblings": [`))
			return
		}
		if r.URL.Query().Get("blobs") != "true" {
			m.t.Errorf("API request without blobs=true: %s", r.URL)
		}
		rv := mr.revs[rev]
		if rv == nil {
			http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
			return
		}
		type lfs struct {
			SHA256 string `json:"sha256"`
			Size   int    `json:"size"`
		}
		type sib struct {
			RFilename string `json:"rfilename"`
			LFS       *lfs   `json:"lfs,omitempty"`
		}
		out := struct {
			ID       string `json:"id"`
			SHA      string `json:"sha"`
			Siblings []sib  `json:"siblings"`
		}{ID: repo, SHA: rv.sha}
		for name, data := range rv.files {
			s := sib{RFilename: name}
			if strings.HasSuffix(name, ".parquet") || strings.HasSuffix(name, ".jsonl") {
				sum := sha256.Sum256(data)
				s.LFS = &lfs{SHA256: hex.EncodeToString(sum[:]), Size: len(data)}
				if mr.badSHA {
					s.LFS.SHA256 = strings.Repeat("0", 64)
				}
			}
			out.Siblings = append(out.Siblings, s)
		}
		json.NewEncoder(w).Encode(out)
	case strings.HasPrefix(p, "/datasets/"):
		rest := strings.TrimPrefix(p, "/datasets/")
		parts := strings.SplitN(rest, "/", 5) // org, name, "resolve", sha, path
		if len(parts) != 5 || parts[2] != "resolve" {
			http.NotFound(w, r)
			return
		}
		m.fileHits++
		mr := m.repos[parts[0]+"/"+parts[1]]
		if mr == nil {
			http.NotFound(w, r)
			return
		}
		if mr.token != "" && r.Header.Get("Authorization") != "Bearer "+mr.token {
			http.Error(w, "restricted", http.StatusUnauthorized)
			return
		}
		for _, rv := range mr.revs {
			if rv.sha == parts[3] {
				if data, ok := rv.files[parts[4]]; ok {
					w.Write(data)
					return
				}
			}
		}
		http.Error(w, "Entry not found", http.StatusNotFound)
	case strings.HasPrefix(p, "/raw/"):
		m.fileHits++
		if p == "/raw/prompts.csv" {
			w.Write([]byte("id,prompt\n1,hello\n2,\"a, b\"\n"))
			return
		}
		http.NotFound(w, r)
	default:
		http.NotFound(w, r)
	}
}

var qaSchema = arrow.NewSchema([]arrow.Field{
	{Name: "question", Type: arrow.BinaryTypes.String},
	{Name: "answer", Type: arrow.BinaryTypes.String},
}, nil)

func qaParquet(t *testing.T, tag string, n int) []byte {
	var rows []string
	for i := 0; i < n; i++ {
		rows = append(rows, fmt.Sprintf(`{"question":"%s q%d","answer":"%d"}`, tag, i, i))
	}
	return writeParquet(t, qaSchema, "["+strings.Join(rows, ",")+"]", compress.Codecs.Zstd, 2)
}

func newMockHub(t *testing.T) (*mockHub, *httptest.Server) {
	rev := func(name string, files map[string][]byte) map[string]*mockRev {
		r := &mockRev{sha: sha40(name), files: files}
		return map[string]*mockRev{"main": r, r.sha: r}
	}
	gsm := map[string][]byte{
		"README.md":                             []byte("# gsm"),
		"main/test-00000-of-00001.parquet":      qaParquet(t, "main-test", 3),
		"main/train-00000-of-00001.parquet":     qaParquet(t, "main-train", 5),
		"socratic/test-00000-of-00002.parquet":  qaParquet(t, "soc-test-a", 2),
		"socratic/test-00001-of-00002.parquet":  qaParquet(t, "soc-test-b", 1),
		"socratic/train-00000-of-00001.parquet": qaParquet(t, "soc-train", 1),
	}
	conv := &mockRev{sha: sha40("conv-parquet"), files: map[string][]byte{
		"default/test/0000.parquet":  qaParquet(t, "conv0", 2),
		"default/test/0001.parquet":  qaParquet(t, "conv1", 2),
		"default/train/0000.parquet": qaParquet(t, "convtrain", 1),
	}}
	convRevs := rev("conv", map[string][]byte{"README.md": []byte("x"), "loader.py": []byte("x")})
	convRevs["refs/convert/parquet"] = conv
	convRevs[conv.sha] = conv
	m := &mockHub{t: t, apiHits: map[string]int{}, repos: map[string]*mockRepo{
		"o/gsm":     {revs: rev("gsm", gsm)},
		"o/jsonl":   {revs: rev("jsonl", map[string][]byte{"data/test.jsonl": []byte("{\"q\":1}\n{\"q\":2}\n"), "data/train.jsonl": []byte("{\"q\":3}\n")})},
		"o/conv":    {revs: convRevs},
		"o/gated":   {revs: rev("gated", map[string][]byte{"test.jsonl": []byte("{\"secret\":true}\n")}), token: "hf_s3cret"},
		"o/badsha":  {revs: rev("badsha", map[string][]byte{"data/test-00000-of-00001.parquet": qaParquet(t, "bad", 1)}), badSHA: true},
		"o/flaky":   {revs: rev("flaky", map[string][]byte{"test.jsonl": []byte("{\"ok\":1}\n")}), fail: 2},
		"o/down":    {revs: rev("down", nil), fail: 1 << 30},
		"o/invalid": {revs: rev("invalid", nil), invalid: true},
	}}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv
}

func hubLoader(srv *httptest.Server, cache, token string) *Loader {
	l := NewLoader(Options{CacheDir: cache, Endpoint: srv.URL + "/", Token: token, Client: srv.Client()})
	l.retryBase = time.Millisecond
	return l
}

func questions(ds *Dataset) []string {
	var out []string
	for _, r := range ds.Records() {
		out = append(out, fmt.Sprint(r["question"]))
	}
	return out
}

func clearHubEnv(t *testing.T) {
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_ENDPOINT", "HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"} {
		t.Setenv(k, "")
	}
}

func TestHubConfigSplit(t *testing.T) {
	clearHubEnv(t)
	m, srv := newMockHub(t)
	cache := t.TempDir()
	l := hubLoader(srv, cache, "")
	ctx := context.Background()

	ds, err := l.Load(ctx, "hf://o/gsm?config=main&split=test", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := questions(ds); !reflect.DeepEqual(got, []string{"main-test q0", "main-test q1", "main-test q2"}) {
		t.Errorf("main/test: %v", got)
	}
	sha := sha40("gsm")
	if ds.Revision != sha || len(ds.Parts) != 1 || ds.Parts[0].Name != "main/test-00000-of-00001.parquet" {
		t.Errorf("revision %s parts %+v", ds.Revision, ds.Parts)
	}
	// Cache layout like huggingface_hub's.
	local := filepath.Join(cache, "datasets--o--gsm", "snapshots", sha, "main", "test-00000-of-00001.parquet")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatalf("cached file: %v", err)
	}
	if sum := sha256.Sum256(b); ds.Parts[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("part sha256 differs from the cached file's")
	}
	if ref, err := os.ReadFile(filepath.Join(cache, "datasets--o--gsm", "refs", "main")); err != nil || string(ref) != sha {
		t.Errorf("refs/main = %q, %v", ref, err)
	}

	ds, err = l.Load(ctx, "hf://o/gsm?config=socratic&split=test", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := questions(ds); !reflect.DeepEqual(got, []string{"soc-test-a q0", "soc-test-a q1", "soc-test-b q0"}) {
		t.Errorf("socratic/test (two shards, in order): %v", got)
	}
	ds, err = l.Load(ctx, "hf://o/gsm?config=main&split=train&revision="+sha, LoadOptions{})
	if err != nil || len(ds.Records()) != 5 {
		t.Errorf("train by sha: %v", err)
	}

	_, err = l.Load(ctx, "hf://o/gsm?config=main&split=validation", LoadOptions{})
	for _, w := range []string{"validation", "config=main split=test", "config=main split=train", "config=socratic split=train"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("missing split: err %v should mention %q", err, w)
		}
	}
	// JSONL repo without configs.
	ds, err = l.Load(ctx, "hf://o/jsonl", LoadOptions{})
	if err != nil || !reflect.DeepEqual(ds.Records(), []Record{{"q": json.Number("1")}, {"q": json.Number("2")}}) {
		t.Errorf("jsonl default split test: %v %v", ds, err)
	}
	for _, a := range m.auth {
		if a != "" {
			t.Errorf("Authorization %q sent without a token", a)
		}
	}
	for _, bad := range []string{"hf://gsm", "hf://o/gsm/x", "hf://o/gsm?splt=test", "hf://o/gsm?split=../x"} {
		if _, err := l.Load(ctx, bad, LoadOptions{}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestHubConvertedParquet(t *testing.T) {
	clearHubEnv(t)
	_, srv := newMockHub(t)
	cache := t.TempDir()
	ds, err := hubLoader(srv, cache, "").Load(context.Background(), "hf://o/conv?split=test", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := questions(ds); !reflect.DeepEqual(got, []string{"conv0 q0", "conv0 q1", "conv1 q0", "conv1 q1"}) {
		t.Errorf("got %v", got)
	}
	if ds.Revision != sha40("conv-parquet") || ds.Parts[1].Name != "default/test/0001.parquet" {
		t.Errorf("revision %s parts %v", ds.Revision, ds.Parts[1].Name)
	}
	// Offline, the converted branch is found through its ref.
	off := NewLoader(Options{CacheDir: cache, Endpoint: "http://127.0.0.1:1", Offline: true})
	ds2, err := off.Load(context.Background(), "hf://o/conv?split=test", LoadOptions{})
	if err != nil || ds2.Digest != ds.Digest {
		t.Errorf("offline converted: %v", err)
	}
}

func TestHubTokenAndGated(t *testing.T) {
	clearHubEnv(t)
	m, srv := newMockHub(t)
	ctx := context.Background()
	_, err := hubLoader(srv, t.TempDir(), "").Load(ctx, "hf://o/gated", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "gated or private") || !strings.Contains(err.Error(), "HF_TOKEN") || !strings.Contains(err.Error(), "401") {
		t.Errorf("no token: %v", err)
	}
	_, err = hubLoader(srv, t.TempDir(), "hf_wrong_token").Load(ctx, "hf://o/gated", LoadOptions{})
	if err == nil || strings.Contains(err.Error(), "hf_wrong_token") || !strings.Contains(err.Error(), "gated") {
		t.Errorf("wrong token: %v", err)
	}
	m.auth = nil
	ds, err := hubLoader(srv, t.TempDir(), "hf_s3cret").Load(ctx, "hf://o/gated", LoadOptions{})
	if err != nil || len(ds.Records()) != 1 {
		t.Fatalf("with token: %v", err)
	}
	if len(m.auth) < 2 {
		t.Fatalf("%d requests", len(m.auth))
	}
	for _, a := range m.auth {
		if a != "Bearer hf_s3cret" {
			t.Errorf("Authorization %q, want the bearer token on every request", a)
		}
	}
	// The token also comes from the environment.
	t.Setenv("HF_TOKEN", "hf_s3cret")
	l := NewLoader(Options{CacheDir: t.TempDir(), Endpoint: srv.URL, Client: srv.Client()})
	if _, err := l.Load(ctx, "hf://o/gated", LoadOptions{}); err != nil {
		t.Errorf("HF_TOKEN from env: %v", err)
	}
}

func TestHubCacheReuseAndOffline(t *testing.T) {
	clearHubEnv(t)
	m, srv := newMockHub(t)
	cache := t.TempDir()
	ctx := context.Background()
	spec := "hf://o/gsm?config=main&split=train"
	first, err := hubLoader(srv, cache, "").Load(ctx, spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.fileHits != 1 {
		t.Errorf("%d file requests, want 1", m.fileHits)
	}
	second, err := hubLoader(srv, cache, "").Load(ctx, spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.fileHits != 1 {
		t.Errorf("second load downloaded again (%d file requests)", m.fileHits)
	}
	if first.Digest != second.Digest || !reflect.DeepEqual(first.Records(), second.Records()) {
		t.Error("second load differs")
	}
	// Offline: no request at all, same data.
	before := len(m.auth)
	off := hubLoader(srv, cache, "")
	off.opts.Offline = true
	third, err := off.Load(ctx, spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.auth) != before {
		t.Errorf("offline load made %d requests", len(m.auth)-before)
	}
	if third.Digest != first.Digest || third.Revision != first.Revision {
		t.Errorf("offline digest %s revision %s", third.Digest, third.Revision)
	}
	// Offline from the environment, a split that was never downloaded.
	t.Setenv("HF_HUB_OFFLINE", "1")
	envOff := hubLoader(srv, cache, "")
	_, err = envOff.Load(ctx, "hf://o/gsm?config=main&split=test", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "offline") || !strings.Contains(err.Error(), "split \"test\"") {
		t.Errorf("offline, split not cached: %v", err)
	}
	// Offline with an empty cache.
	_, err = hubLoader(srv, t.TempDir(), "").Load(ctx, spec, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "offline mode is on") || !strings.Contains(err.Error(), "main") {
		t.Errorf("offline, empty cache: %v", err)
	}
	if len(m.auth) != before {
		t.Errorf("offline loads made requests")
	}
}

func TestHubSHAMismatch(t *testing.T) {
	clearHubEnv(t)
	_, srv := newMockHub(t)
	cache := t.TempDir()
	_, err := hubLoader(srv, cache, "").Load(context.Background(), "hf://o/badsha", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("err = %v", err)
	}
	filepath.WalkDir(filepath.Join(cache, "datasets--o--badsha"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("file left in the cache: %s", p)
		}
		return nil
	})
}

func TestHubErrors(t *testing.T) {
	clearHubEnv(t)
	m, srv := newMockHub(t)
	ctx := context.Background()
	l := hubLoader(srv, t.TempDir(), "")

	_, err := l.Load(ctx, "hf://o/missing", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "o/missing") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("404 repo: %v", err)
	}
	_, err = l.Load(ctx, "hf://o/gsm?config=main&revision=v9", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "v9") || !strings.Contains(err.Error(), "404") {
		t.Errorf("404 revision: %v", err)
	}
	_, err = l.Load(ctx, "hf://o/down", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), srv.URL+"/api/datasets/o/down") {
		t.Errorf("500: %v", err)
	}
	if m.apiHits["o/down"] != maxAttempts {
		t.Errorf("%d attempts on a 500, want %d", m.apiHits["o/down"], maxAttempts)
	}
	ds, err := l.Load(ctx, "hf://o/flaky", LoadOptions{})
	if err != nil || len(ds.Records()) != 1 || m.apiHits["o/flaky"] != 3 {
		t.Errorf("flaky: %v after %d API requests", err, m.apiHits["o/flaky"])
	}
	_, err = l.Load(ctx, "hf://o/invalid", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "invalid JSON") {
		t.Errorf("invalid JSON: %v", err)
	}
	// Cancelled while backing off.
	slow := hubLoader(srv, t.TempDir(), "")
	slow.retryBase = time.Hour
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = slow.Load(cctx, "hf://o/down", LoadOptions{})
	if err == nil || time.Since(start) > 5*time.Second || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("cancel: %v after %v", err, time.Since(start))
	}
	// Connection refused: retried, then an error naming the URL.
	dead := NewLoader(Options{CacheDir: t.TempDir(), Endpoint: "http://127.0.0.1:1"})
	dead.retryBase = time.Millisecond
	_, err = dead.Load(ctx, "hf://o/gsm", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:1/api/datasets/o/gsm") {
		t.Errorf("connection refused: %v", err)
	}
}

func TestURL(t *testing.T) {
	clearHubEnv(t)
	m, srv := newMockHub(t)
	cache := t.TempDir()
	ctx := context.Background()
	spec := srv.URL + "/raw/prompts.csv"
	l := hubLoader(srv, cache, "")
	ds, err := l.Load(ctx, spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{{"id": "1", "prompt": "hello"}, {"id": "2", "prompt": "a, b"}}
	if !reflect.DeepEqual(ds.Records(), want) || ds.Parts[0].Name != "prompts.csv" {
		t.Errorf("got %v", ds.Records())
	}
	sum := sha256.Sum256([]byte(spec))
	if _, err := os.Stat(filepath.Join(cache, "nel-url", hex.EncodeToString(sum[:])[:16], "prompts.csv")); err != nil {
		t.Errorf("cache layout: %v", err)
	}
	hits := m.fileHits
	off := NewLoader(Options{CacheDir: cache, Offline: true})
	again, err := off.Load(ctx, spec, LoadOptions{})
	if err != nil || again.Digest != ds.Digest || m.fileHits != hits {
		t.Errorf("offline from cache: %v", err)
	}
	if _, err := off.Load(ctx, srv.URL+"/raw/other.csv", LoadOptions{}); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("offline, not cached: %v", err)
	}
	if _, err := l.Load(ctx, srv.URL+"/raw/missing.csv", LoadOptions{}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
	if _, err := l.Load(ctx, srv.URL+"/raw/file.xlsx", LoadOptions{}); err == nil || !strings.Contains(err.Error(), "unknown file type") {
		t.Errorf("unknown type: %v", err)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	clearHubEnv(t)
	t.Setenv("HOME", "/home/u")
	if o := OptionsFromEnv("/r"); o.CacheDir != "/home/u/.cache/huggingface/hub" || o.Endpoint != "https://huggingface.co" || o.Offline || o.Token != "" || o.BaseDir != "/r" {
		t.Errorf("defaults: %+v", o)
	}
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if o := OptionsFromEnv(""); o.CacheDir != "/xdg/huggingface/hub" {
		t.Errorf("XDG: %s", o.CacheDir)
	}
	t.Setenv("HF_HOME", "/hf")
	if o := OptionsFromEnv(""); o.CacheDir != "/hf/hub" {
		t.Errorf("HF_HOME: %s", o.CacheDir)
	}
	t.Setenv("HF_HUB_CACHE", "/hc")
	t.Setenv("HF_ENDPOINT", "http://mirror")
	t.Setenv("HUGGING_FACE_HUB_TOKEN", "old")
	t.Setenv("HF_DATASETS_OFFLINE", "1")
	if o := OptionsFromEnv(""); o.CacheDir != "/hc" || o.Endpoint != "http://mirror" || o.Token != "old" || !o.Offline {
		t.Errorf("env: %+v", o)
	}
	t.Setenv("HF_TOKEN", "new")
	if o := OptionsFromEnv(""); o.Token != "new" {
		t.Errorf("HF_TOKEN wins: %s", o.Token)
	}
}

// TestHubStream: a Hub spec streams from the cache: its windows hold the
// records Load gives, named alike, with the same digest and revision,
// online and offline; a cached file that is not what the Hub says fails
// as Load fails; and through a lock, at the pinned revision, named by
// the spec as given, with the locked digest checked.
func TestHubStream(t *testing.T) {
	clearHubEnv(t)
	_, srv := newMockHub(t)
	cache := t.TempDir()
	ctx := context.Background()
	l := hubLoader(srv, cache, "")
	for _, spec := range []string{"hf://o/gsm?config=main&split=train", "hf://o/gsm?config=socratic&split=test", "hf://o/jsonl", "hf://o/conv?split=test"} {
		for _, offline := range []bool{false, true} {
			l.opts.Offline = offline
			want, err := l.Load(ctx, spec, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st, ok := l.Stream(ctx, spec)
			if !ok {
				t.Fatalf("%s (offline %v): not streamed", spec, offline)
			}
			got, recs, where := readWindows(t, st, 2)
			if got.Digest != want.Digest || got.Revision != want.Revision || !reflect.DeepEqual(recs, want.Records()) || !reflect.DeepEqual(where, wheres(want)) {
				t.Errorf("%s (offline %v): streamed %s@%s %v at %v; Load %s@%s %v at %v", spec, offline, got.Digest, got.Revision, recs, where, want.Digest, want.Revision, want.Records(), wheres(want))
			}
		}
	}
	l.opts.Offline = false

	spec := "hf://o/gsm?config=main&split=train"
	want, err := l.Load(ctx, spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pins := PinsOf([]*Dataset{want})
	// The lock pins the commit: the spec is read at it.
	p := &Pinned{Loader: l, Pins: pins}
	st, ok := p.Stream(ctx, spec)
	if !ok {
		t.Fatal("pinned: not streamed")
	}
	got, _, _ := readWindows(t, st, 3)
	if got.Spec != spec || got.Digest != want.Digest {
		t.Errorf("pinned: %s %s, want %s %s", got.Spec, got.Digest, spec, want.Digest)
	}
	pins[0].Digest = "sha256:0"
	_, err = (&Pinned{Loader: l, Pins: pins}).Load(ctx, spec, LoadOptions{})
	st, _ = (&Pinned{Loader: l, Pins: pins}).Stream(ctx, spec)
	if _, serr := st.Windows(ctx, LoadOptions{}, 3, func(*Dataset) error { return nil }); err == nil || serr == nil || serr.Error() != err.Error() {
		t.Errorf("pinned to another digest: streamed %v, Load %v", serr, err)
	}

	files, _ := filepath.Glob(filepath.Join(cache, "datasets--o--gsm", "snapshots", "*", "main", "train-*"))
	if len(files) != 1 {
		t.Fatalf("cached train files: %v", files)
	}
	if err := os.WriteFile(files[0], []byte("PAR1 not what the Hub says"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = l.Load(ctx, spec, LoadOptions{})
	st, ok = l.Stream(ctx, spec)
	if !ok {
		t.Fatal("changed cache: not streamed")
	}
	if _, serr := st.Windows(ctx, LoadOptions{}, 3, func(*Dataset) error { return nil }); err == nil || !strings.Contains(err.Error(), "the Hub says") || serr == nil || serr.Error() != err.Error() {
		t.Errorf("a cached file changed: streamed %v, Load %v", serr, err)
	}
	// Counting it (shuffle_seed) fails alike.
	if _, cerr := st.Count(ctx, LoadOptions{}); cerr == nil || cerr.Error() != err.Error() {
		t.Errorf("a cached file changed: counted %v, Load %v", cerr, err)
	}
}

// readWindows reads st in windows of size, returning the Dataset, the
// records and where each is; each window's Offset must count the records
// before it.
func readWindows(t *testing.T, st Stream, size int) (*Dataset, []Record, []string) {
	t.Helper()
	var (
		recs  []Record
		where []string
	)
	ds, err := st.Windows(context.Background(), LoadOptions{}, size, func(w *Dataset) error {
		if w.Offset != len(recs) {
			t.Errorf("window at offset %d after %d records", w.Offset, len(recs))
		}
		for _, p := range w.Parts {
			for i := range p.Records {
				where = append(where, p.Where(i))
			}
			recs = append(recs, p.Records...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ds, recs, where
}

func wheres(ds *Dataset) []string {
	var out []string
	for _, p := range ds.Parts {
		for i := range p.Records {
			out = append(out, p.Where(i))
		}
	}
	return out
}
