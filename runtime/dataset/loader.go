package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/provenance"
)

// Options configure a Loader.
type Options struct {
	// BaseDir is what relative local paths resolve against (the recipe's
	// directory).
	BaseDir string
	// CacheDir is the Hub/https cache root; "" picks it from the
	// environment like huggingface_hub does (see DefaultCacheDir).
	CacheDir string
	// Endpoint is the Hub base URL; "" = $HF_ENDPOINT or https://huggingface.co.
	Endpoint string
	// Token is the Hub bearer token; "" = $HF_TOKEN or
	// $HUGGING_FACE_HUB_TOKEN. It is never logged or put in errors.
	Token string
	// Offline forbids network access: only cached files are read.
	Offline bool
	// Client is the HTTP client; nil = one with sane timeouts.
	Client *http.Client
	// Logger receives download logs; nil = discard.
	Logger *slog.Logger
}

// OptionsFromEnv returns Options for baseDir with CacheDir, Endpoint, Token
// and Offline taken from the environment (the huggingface_hub variables).
func OptionsFromEnv(baseDir string) Options {
	return Options{
		BaseDir:  baseDir,
		CacheDir: DefaultCacheDir(),
		Endpoint: envEndpoint(),
		Token:    envToken(),
		Offline:  envOffline(),
	}
}

// DefaultCacheDir is the huggingface_hub cache root: $HF_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub.
func DefaultCacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		// No home: a cache beside the working directory beats failing.
		return filepath.Join(".cache", "huggingface", "hub")
	}
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

func envEndpoint() string {
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		return e
	}
	return "https://huggingface.co"
}

func envToken() string {
	if t := os.Getenv("HF_TOKEN"); t != "" {
		return t
	}
	return os.Getenv("HUGGING_FACE_HUB_TOKEN")
}

func envTrue(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func envOffline() bool {
	return envTrue("HF_HUB_OFFLINE") || envTrue("HF_DATASETS_OFFLINE")
}

// Loader loads dataset specs: local files and directories, hf:// URIs and
// https:// URLs. It is safe for concurrent use.
type Loader struct {
	opts Options
	// retryBase is the first retry delay (0 = 500ms); tests shorten it.
	retryBase time.Duration
}

// NewLoader returns a Loader. Empty Options fields are filled from the
// environment; Offline is also forced on by HF_HUB_OFFLINE or
// HF_DATASETS_OFFLINE.
func NewLoader(opts Options) *Loader {
	if opts.CacheDir == "" {
		opts.CacheDir = DefaultCacheDir()
	}
	if opts.Endpoint == "" {
		opts.Endpoint = envEndpoint()
	}
	opts.Endpoint = strings.TrimRight(opts.Endpoint, "/")
	if opts.Token == "" {
		opts.Token = envToken()
	}
	if envOffline() {
		opts.Offline = true
	}
	if opts.Client == nil {
		opts.Client = &http.Client{
			// No overall Timeout: big files take long; stalls are caught
			// by the transport timeouts and ctx.
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				TLSHandshakeTimeout:   15 * time.Second,
				ResponseHeaderTimeout: 60 * time.Second,
				IdleConnTimeout:       90 * time.Second,
				MaxIdleConnsPerHost:   4,
			},
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Loader{opts: opts}
}

// Load reads spec: a local file or directory (relative to BaseDir), an
// hf://org/name?config=&split=&revision= URI, or an https:// file URL.
func (l *Loader) Load(ctx context.Context, spec string, opts LoadOptions) (*Dataset, error) {
	var (
		ds  *Dataset
		err error
	)
	switch {
	case strings.HasPrefix(spec, "hf://"):
		ds, err = l.loadHub(ctx, spec, opts)
	case strings.HasPrefix(spec, "https://"), strings.HasPrefix(spec, "http://"):
		ds, err = l.loadURL(ctx, spec, opts)
	case spec == "":
		return nil, fmt.Errorf("dataset: empty spec")
	default:
		ds, err = l.loadLocal(ctx, spec, opts)
	}
	if err != nil {
		return nil, err
	}
	ds.Spec = spec
	ds.Digest = Digest(ds.Parts)
	return ds, nil
}

// Digest is "sha256:" + sha256 over "name\tsha256\n" lines of parts.
func Digest(parts []Part) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%s\t%s\n", p.Name, p.SHA256)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// IsLocal says whether Load reads spec from the local file system: a
// path, not an hf:// or http(s):// spec. A local spec's identity is its
// content (LocalDigest), not where it lies.
func IsLocal(spec string) bool {
	return spec != "" && !strings.Contains(spec, "://")
}

// localFiles resolves a local spec against baseDir and lists what Load
// reads of it: the file itself, or the data files of a folder, each with
// the name its Part gets.
func localFiles(baseDir, spec string) (paths, names []string, err error) {
	path := spec
	if !filepath.IsAbs(path) && baseDir != "" {
		path = filepath.Join(baseDir, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset %s: %w", spec, err)
	}
	if !fi.IsDir() {
		return []string{path}, []string{fi.Name()}, nil
	}
	names, err = dataFiles(path)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		paths = append(paths, filepath.Join(path, n))
	}
	return paths, names, nil
}

func (l *Loader) loadLocal(ctx context.Context, spec string, opts LoadOptions) (*Dataset, error) {
	paths, names, err := localFiles(l.opts.BaseDir, spec)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{}
	for i, path := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := readPart(path, names[i], opts)
		if err != nil {
			return nil, err
		}
		ds.Parts = append(ds.Parts, p)
	}
	return ds, nil
}

// LocalDigest is what Load gives a local spec (relative to baseDir) as its
// Digest and Parts' sha256s, from the bytes alone: nothing is parsed or
// kept. The compiler hashes a recipe's local data by it, so the hashes
// cover the data's content, never its path.
func LocalDigest(baseDir, spec string) (*Dataset, error) {
	paths, names, err := localFiles(baseDir, spec)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Spec: spec}
	for i, path := range paths {
		sum, err := provenance.FileSHA256(path)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", spec, err)
		}
		ds.Parts = append(ds.Parts, Part{Name: names[i], SHA256: strings.TrimPrefix(sum, "sha256:")})
	}
	ds.Digest = Digest(ds.Parts)
	return ds, nil
}

// dataFiles lists the data files directly in dir, sorted by name; other
// files (LICENSE, README.md, SHA256SUMS) are skipped.
func dataFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, ok := formatOf(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("dataset %s: directory has no data files (%s)", dir, supportedList())
	}
	return names, nil
}

// readPart reads one local file into a Part named name.
func readPart(path, name string, opts LoadOptions) (Part, error) {
	recs, lines, sum, err := readFile(path, opts)
	if err != nil {
		return Part{}, err
	}
	return Part{Name: name, SHA256: sum, Records: recs, Lines: lines}, nil
}

// readFile parses the file at path and returns the sha256 of its bytes,
// hashed as they stream through the parser (a file is read once, and never
// held whole when its format can be read line by line).
func readFile(path string, opts LoadOptions) ([]Record, []int, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, "", fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	in := io.TeeReader(f, h)
	recs, lines, err := parseFile(path, in, opts)
	if err != nil {
		return nil, nil, "", err
	}
	// What the parser left unread (bytes after a gzip stream) is content too.
	if _, err := io.Copy(io.Discard, in); err != nil {
		return nil, nil, "", fmt.Errorf("dataset %s: %w", path, err)
	}
	return recs, lines, hex.EncodeToString(h.Sum(nil)), nil
}

// CheckSpec says what is wrong with a dataset spec's syntax, before
// anything is read: an hf:// spec Load cannot parse, an http(s) URL that
// names no file of a known type or carries credentials, a scheme Load does
// not know (which it would take for a local path). A local path is not
// looked at.
func CheckSpec(spec string) error {
	scheme, _, isURI := strings.Cut(spec, "://")
	switch {
	case !isURI:
		return nil
	case scheme == "hf":
		_, err := parseHubSpec(spec)
		return err
	case scheme == "https", scheme == "http":
		_, err := urlFile(spec)
		return err
	}
	return fmt.Errorf("dataset %s: unknown scheme %q: expected a local file or folder, hf://ORG/NAME?config=&split=&revision=, or an https:// file URL", spec, scheme+"://")
}
