package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/provenance"
)

// hubSpec is a parsed hf://org/name?config=&split=&revision= URI.
type hubSpec struct {
	org, name string
	config    string
	split     string
	revision  string
}

func (h hubSpec) repo() string { return h.org + "/" + h.name }

func parseHubSpec(spec string) (hubSpec, error) {
	u, err := url.Parse(spec)
	if err != nil {
		return hubSpec{}, fmt.Errorf("dataset %s: %w", spec, err)
	}
	name := strings.Trim(u.Path, "/")
	if u.Host == "" || name == "" || strings.Contains(name, "/") || u.User != nil || u.Fragment != "" {
		return hubSpec{}, fmt.Errorf("dataset %s: want hf://org/name?config=&split=&revision=", spec)
	}
	h := hubSpec{org: u.Host, name: name, split: "test", revision: "main"}
	for k, vs := range u.Query() {
		if len(vs) != 1 || vs[0] == "" {
			return hubSpec{}, fmt.Errorf("dataset %s: %s needs exactly one non-empty value", spec, k)
		}
		switch k {
		case "config", "name":
			h.config = vs[0]
		case "split":
			h.split = vs[0]
		case "revision":
			h.revision = vs[0]
		default:
			return hubSpec{}, fmt.Errorf("dataset %s: unknown parameter %q (known: config, split, revision)", spec, k)
		}
	}
	if h.config == "default" {
		h.config = ""
	}
	for _, s := range []string{h.org, h.name, h.config, h.split} {
		if strings.Contains(s, "..") || strings.ContainsAny(s, "/\\") {
			return hubSpec{}, fmt.Errorf("dataset %s: bad name %q", spec, s)
		}
	}
	return h, nil
}

// convertedRevision is the branch where the Hub keeps its automatic
// Parquet conversion of every dataset.
const convertedRevision = "refs/convert/parquet"

// repoInfo is the part of the Hub's dataset revision API we use.
type repoInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
		LFS       *struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"lfs"`
	} `json:"siblings"`
}

// hubFile is one file to read from a snapshot.
type hubFile struct {
	path   string // in the repository
	sha256 string // from the API's lfs info; "" when unknown
	size   int64
}

func (l *Loader) repoDir(h hubSpec) string {
	return filepath.Join(l.opts.CacheDir, "datasets--"+h.org+"--"+h.name)
}

// hubFiles resolves a Hub spec to its commit, its snapshot folder in the
// cache and its files there, downloading what the cache lacks (offline:
// from the cache alone).
func (l *Loader) hubFiles(ctx context.Context, spec string) (sha, snap string, files []hubFile, err error) {
	h, err := parseHubSpec(spec)
	if err != nil {
		return "", "", nil, err
	}
	if l.opts.Offline {
		sha, files, err = l.offlineFiles(h)
	} else {
		sha, files, err = l.onlineFiles(ctx, h)
	}
	if err != nil {
		return "", "", nil, err
	}
	return sha, filepath.Join(l.repoDir(h), "snapshots", sha), files, nil
}

func (l *Loader) loadHub(ctx context.Context, spec string, opts LoadOptions) (*Dataset, error) {
	sha, snap, files, err := l.hubFiles(ctx, spec)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Revision: sha}
	for _, f := range files {
		local := filepath.Join(snap, filepath.FromSlash(f.path))
		if _, err := os.Stat(local); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", spec, err)
		}
		recs, lines, hexsum, perr := readFile(local, opts)
		if perr != nil && f.sha256 != "" {
			// A cached file that is not what the Hub says is reported as
			// such, not by what it fails to parse as.
			sum, _ := provenance.FileSHA256(local)
			hexsum = strings.TrimPrefix(sum, "sha256:")
		}
		if f.sha256 != "" && hexsum != f.sha256 {
			return nil, fmt.Errorf("dataset %s: cached %s has sha256 %s, the Hub says %s (delete it to download again)", spec, local, hexsum, f.sha256)
		}
		if perr != nil {
			return nil, perr
		}
		ds.Parts = append(ds.Parts, Part{Name: f.path, SHA256: hexsum, Records: recs, Lines: lines})
	}
	return ds, nil
}

// onlineFiles resolves h on the Hub and downloads its files into the cache.
func (l *Loader) onlineFiles(ctx context.Context, h hubSpec) (string, []hubFile, error) {
	info, err := l.fetchInfo(ctx, h, h.revision)
	if err != nil {
		return "", nil, err
	}
	sha, rev := info.SHA, h.revision
	files := pickFiles(info.files(), h)
	if len(files) == 0 {
		conv, err := l.fetchInfo(ctx, h, convertedRevision)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.status != http.StatusNotFound {
				return "", nil, err
			}
		} else if cf := pickConverted(conv.files(), h); len(cf) > 0 {
			sha, rev, files = conv.SHA, convertedRevision, cf
		}
	}
	if len(files) == 0 {
		return "", nil, fmt.Errorf("dataset hf://%s: no files for config %q split %q at revision %s; the repository has: %s",
			h.repo(), configName(h.config), h.split, h.revision, describeSplits(info.files()))
	}
	snap := filepath.Join(l.repoDir(h), "snapshots", sha)
	for _, f := range files {
		local := filepath.Join(snap, filepath.FromSlash(f.path))
		if _, err := os.Stat(local); err == nil {
			continue
		}
		u := fmt.Sprintf("%s/datasets/%s/resolve/%s/%s", l.opts.Endpoint, h.repo(), sha, escapePath(f.path))
		if err := l.download(ctx, u, local, f.sha256, "dataset hf://"+h.repo()+": file "+f.path+" at "+sha); err != nil {
			return "", nil, err
		}
	}
	if rev != sha {
		if err := writeAtomic(filepath.Join(l.repoDir(h), "refs", filepath.FromSlash(rev)), []byte(sha)); err != nil {
			return "", nil, err
		}
	}
	return sha, files, nil
}

// offlineFiles resolves h from the cache alone.
func (l *Loader) offlineFiles(h hubSpec) (string, []hubFile, error) {
	offline := func(format string, args ...any) error {
		return fmt.Errorf("dataset hf://%s: offline mode is on (Options.Offline, HF_HUB_OFFLINE or HF_DATASETS_OFFLINE): %s",
			h.repo(), fmt.Sprintf(format, args...))
	}
	resolve := func(rev string) (string, error) {
		if isSHA(rev) {
			return rev, nil
		}
		ref := filepath.Join(l.repoDir(h), "refs", filepath.FromSlash(rev))
		b, err := os.ReadFile(ref)
		if err != nil {
			return "", offline("revision %q is not in the cache (no %s)", rev, ref)
		}
		return strings.TrimSpace(string(b)), nil
	}
	sha, err := resolve(h.revision)
	if err == nil {
		have, lerr := listSnapshot(filepath.Join(l.repoDir(h), "snapshots", sha))
		if lerr != nil {
			return "", nil, offline("snapshot %s is missing: %v", sha, lerr)
		}
		if files := pickFiles(have, h); len(files) > 0 {
			return sha, files, nil
		}
		err = offline("the cached snapshot %s has no files for config %q split %q (it has: %s)",
			sha, configName(h.config), h.split, describeSplits(have))
	}
	if csha, cerr := resolve(convertedRevision); cerr == nil {
		if have, lerr := listSnapshot(filepath.Join(l.repoDir(h), "snapshots", csha)); lerr == nil {
			if files := pickConverted(have, h); len(files) > 0 {
				return csha, files, nil
			}
		}
	}
	return "", nil, err
}

func listSnapshot(dir string) ([]hubFile, error) {
	var out []hubFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.Contains(d.Name(), ".tmp-") {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, hubFile{path: filepath.ToSlash(rel)})
		return nil
	})
	return out, err
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func configName(c string) string {
	if c == "" {
		return "default"
	}
	return c
}

func (info *repoInfo) files() []hubFile {
	out := make([]hubFile, 0, len(info.Siblings))
	for _, s := range info.Siblings {
		f := hubFile{path: s.RFilename}
		if s.LFS != nil {
			f.sha256, f.size = strings.ToLower(s.LFS.SHA256), s.LFS.Size
		}
		out = append(out, f)
	}
	return out
}

// pickFiles selects the files of h's config and split: Parquet first, then
// the other formats. A file matches when it sits in the config's directory
// (data/ or the root without a config) and its name starts with
// "{split}-" or "{split}.", or when it sits under "{config}/{split}/".
func pickFiles(all []hubFile, h hubSpec) []hubFile {
	dirs := []string{h.config}
	if h.config == "" {
		dirs = []string{".", "data", "default"}
	}
	match := func(p string) bool {
		dir, base := path.Dir(p), path.Base(p)
		for _, d := range dirs {
			if dir == d && (strings.HasPrefix(base, h.split+"-") || strings.HasPrefix(base, h.split+".")) {
				return true
			}
			prefix := d + "/" + h.split + "/"
			if d == "." {
				prefix = h.split + "/"
			}
			if strings.HasPrefix(p, prefix) {
				return true
			}
		}
		return false
	}
	for _, wantParquet := range []bool{true, false} {
		var out []hubFile
		for _, f := range all {
			ft, ok := formatOf(path.Base(f.path))
			if !ok || (ft == fmtParquet) != wantParquet || !match(f.path) {
				continue
			}
			out = append(out, f)
		}
		if len(out) > 0 {
			sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
			return out
		}
	}
	return nil
}

// pickConverted selects {config}/{split}/NNNN.parquet on the converted branch.
func pickConverted(all []hubFile, h hubSpec) []hubFile {
	prefix := configName(h.config) + "/" + h.split + "/"
	var out []hubFile
	for _, f := range all {
		if strings.HasPrefix(f.path, prefix) && !strings.Contains(f.path[len(prefix):], "/") && strings.HasSuffix(f.path, ".parquet") {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// describeSplits lists the config/split pairs the data files suggest, for
// errors.
func describeSplits(all []hubFile) string {
	seen := map[string]bool{}
	var out []string
	for _, f := range all {
		if _, ok := formatOf(path.Base(f.path)); !ok {
			continue
		}
		dir, base := path.Dir(f.path), path.Base(f.path)
		config, split := dir, base
		if i := strings.IndexAny(base, "-."); i > 0 {
			split = base[:i]
		}
		if parts := strings.Split(dir, "/"); len(parts) == 2 {
			config, split = parts[0], parts[1]
		}
		if config == "." || config == "data" {
			config = "default"
		}
		k := "config=" + config + " split=" + split
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return "no data files"
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// fetchInfo gets the revision API's answer for rev.
func (l *Loader) fetchInfo(ctx context.Context, h hubSpec, rev string) (*repoInfo, error) {
	u := fmt.Sprintf("%s/api/datasets/%s/revision/%s?blobs=true", l.opts.Endpoint, h.repo(), url.PathEscape(rev))
	var body []byte
	err := l.withRetry(ctx, u, "dataset hf://"+h.repo()+" revision "+rev, func(resp *http.Response) error {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		body = b
		return err
	})
	if err != nil {
		return nil, err
	}
	var info repoInfo
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("dataset hf://%s: invalid JSON from %s: %w", h.repo(), u, err)
	}
	if !isSHA(info.SHA) {
		return nil, fmt.Errorf("dataset hf://%s: %s answered without a commit sha", h.repo(), u)
	}
	return &info, nil
}

// httpError is a final HTTP failure.
type httpError struct {
	url    string
	status int
	what   string
	token  bool
}

func (e *httpError) Error() string {
	switch e.status {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint := "set HF_TOKEN to a token that has access (and accept the dataset's terms on the Hub)"
		if e.token {
			hint = "the token given (HF_TOKEN) has no access; accept the dataset's terms on the Hub or use another token"
		}
		return fmt.Sprintf("%s: HTTP %d from %s: the dataset is gated or private; %s", e.what, e.status, e.url, hint)
	case http.StatusNotFound:
		return fmt.Sprintf("%s: not found (HTTP 404 from %s)", e.what, e.url)
	}
	return fmt.Sprintf("%s: HTTP %d from %s", e.what, e.status, e.url)
}

const maxAttempts = 4

// withRetry GETs u and hands a 200 response to read. 5xx, 429 and
// connection errors are retried with exponential backoff.
func (l *Loader) withRetry(ctx context.Context, u, what string, read func(*http.Response) error) error {
	var last error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if attempt > 0 {
			d := l.backoff() << (attempt - 1)
			l.opts.Logger.Info("retrying", "url", u, "attempt", attempt+1, "after", d, "err", last)
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), last)
			case <-t.C:
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		req.Header.Set("User-Agent", "nel")
		if l.opts.Token != "" {
			req.Header.Set("Authorization", "Bearer "+l.opts.Token)
		}
		resp, err := l.opts.Client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", what, ctx.Err())
			}
			last = fmt.Errorf("GET %s: %w", u, scrubURLError(err))
			continue
		}
		if resp.StatusCode == http.StatusOK {
			err := read(resp)
			resp.Body.Close()
			if err == nil {
				return nil
			}
			var fatal *fatalError
			if errors.As(err, &fatal) {
				return fatal.err
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", what, ctx.Err())
			}
			last = fmt.Errorf("GET %s: %w", u, err)
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		herr := &httpError{url: u, status: resp.StatusCode, what: what, token: l.opts.Token != ""}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			last = herr
			continue
		}
		return herr
	}
	return fmt.Errorf("%s: giving up after %d attempts: %w", what, maxAttempts, last)
}

// fatalError marks a read failure that retrying cannot fix (a checksum
// mismatch, a full disk).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// scrubURLError drops nothing today (tokens never go in URLs) but keeps the
// error's URL from carrying a query a caller might have added.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (l *Loader) backoff() time.Duration {
	if l.retryBase > 0 {
		return l.retryBase
	}
	return 500 * time.Millisecond
}

// download fetches u into local atomically, checking sha256 when given.
func (l *Loader) download(ctx context.Context, u, local, wantSHA, what string) error {
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	start := time.Now()
	var size int64
	err := l.withRetry(ctx, u, what, func(resp *http.Response) error {
		tmp, err := os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".tmp-*")
		if err != nil {
			return &fatalError{fmt.Errorf("%s: %w", what, err)}
		}
		ok := false
		defer func() {
			if !ok {
				tmp.Close()
				os.Remove(tmp.Name())
			}
		}()
		hsh := sha256.New()
		n, err := io.Copy(io.MultiWriter(tmp, hsh), resp.Body)
		if err != nil {
			return err // a broken transfer: retried
		}
		if resp.ContentLength >= 0 && n != resp.ContentLength {
			return fmt.Errorf("short body: %d of %d bytes", n, resp.ContentLength)
		}
		if got := hex.EncodeToString(hsh.Sum(nil)); wantSHA != "" && got != wantSHA {
			return &fatalError{fmt.Errorf("%s: downloaded sha256 %s, the Hub says %s (from %s)", what, got, wantSHA, u)}
		}
		if err := tmp.Sync(); err != nil {
			return &fatalError{fmt.Errorf("%s: %w", what, err)}
		}
		if err := tmp.Close(); err != nil {
			return &fatalError{fmt.Errorf("%s: %w", what, err)}
		}
		if err := os.Rename(tmp.Name(), local); err != nil {
			return &fatalError{fmt.Errorf("%s: %w", what, err)}
		}
		ok = true
		size = n
		return nil
	})
	if err != nil {
		return err
	}
	// A failed directory sync only costs durability: the file is whole.
	_ = atomicfile.SyncDir(filepath.Dir(local))
	l.opts.Logger.Info("downloaded", "url", u, "bytes", size, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// writeAtomic writes data to p, creating its directory.
func writeAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(p, data)
}

// urlFile parses an http(s) dataset URL and returns the name of the file
// it names, which must be of a known type.
func urlFile(spec string) (string, error) {
	u, err := url.Parse(spec)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", spec, err)
	}
	if u.User != nil {
		return "", fmt.Errorf("dataset %s: credentials in URLs are not supported", redactURL(u))
	}
	base := path.Base(u.Path)
	if base == "." || base == "/" || base == "" {
		return "", fmt.Errorf("dataset %s: the URL names no file", spec)
	}
	if _, ok := formatOf(base); !ok {
		return "", fmt.Errorf("dataset %s: unknown file type %q (%s)", spec, base, supportedList())
	}
	return base, nil
}

// loadURL reads a plain file URL through the cache
// {cache}/nel-url/{sha256(url)[:16]}/{basename}. A cached copy is used
// as is; the digest records what was read.
func (l *Loader) loadURL(ctx context.Context, spec string, opts LoadOptions) (*Dataset, error) {
	base, err := urlFile(spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(spec))
	local := filepath.Join(l.opts.CacheDir, "nel-url", hex.EncodeToString(sum[:])[:16], base)
	if _, err := os.Stat(local); err != nil {
		if l.opts.Offline {
			return nil, fmt.Errorf("dataset %s: offline mode is on (Options.Offline, HF_HUB_OFFLINE or HF_DATASETS_OFFLINE) and it is not cached at %s", spec, local)
		}
		if err := l.download(ctx, spec, local, "", "dataset "+spec); err != nil {
			return nil, err
		}
	}
	p, err := readPart(local, base, opts)
	if err != nil {
		return nil, err
	}
	return &Dataset{Parts: []Part{p}}, nil
}

func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
