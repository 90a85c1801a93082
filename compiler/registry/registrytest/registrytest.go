// Package registrytest is a container registry for tests: it speaks the
// OCI distribution API's manifest endpoints and the Docker Registry token
// authentication protocol, in memory, with switches for the ways real
// registries differ (no digest on HEAD, HEAD refused, overload).
package registrytest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Media types of manifests.
const (
	MediaTypeOCIIndex       = "application/vnd.oci.image.index.v1+json"
	MediaTypeOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
)

// Service is the service name the bearer challenge carries and the token
// endpoint checks.
const Service = "registrytest"

// AuthMode is how the registry asks clients to authenticate.
type AuthMode int

const (
	AuthNone   AuthMode = iota // everything is served anonymously
	AuthBearer                 // manifests need a token from /token (Docker Hub, nvcr.io, ghcr.io)
	AuthBasic                  // manifests need HTTP Basic credentials for protected repositories
)

// Image is a manifest to serve from the start.
type Image struct {
	Repo, Tag string
	Manifest  []byte
	MediaType string
}

// Options configure a registry.
type Options struct {
	Auth AuthMode
	// Username and Password are the one account. When Username is set,
	// every repository not in Public is protected: only these credentials
	// may pull it. In bearer mode, anonymous tokens still cover Public
	// repositories (and everything when Username is empty).
	Username, Password string
	Public             []string
	// ScopeActions are the actions the bearer challenge's scope asks for;
	// default "pull". "pull,push" puts a comma inside the quoted value.
	ScopeActions string
	// TokenField is the JSON field the token comes back in: "token"
	// (default) or "access_token".
	TokenField string

	OmitDigestOnHEAD   bool // HEAD answers without Docker-Content-Digest
	RejectHEAD         bool // HEAD on manifests answers 405
	CorruptDigestOnGET bool // GET sends a Docker-Content-Digest that is not the body's

	// FailManifest makes the first N manifest requests answer FailStatus
	// (default 503), with a Retry-After header when RetryAfter is set.
	FailManifest int
	FailStatus   int
	RetryAfter   string

	Images []Image
}

type manifest struct {
	body      []byte
	mediaType string
	digest    string
}

// Registry is the registry as an http.Handler.
type Registry struct {
	opts Options

	mu        sync.Mutex
	blobs     map[string]manifest          // digest → manifest
	tags      map[string]map[string]string // repo → tag → digest
	tokens    map[string]map[string]bool   // token → repositories it may pull
	counts    map[string]int               // "METHOD path" and "path" → requests
	scopes    []string                     // scope parameters the token endpoint received
	failsLeft int
}

// Handler returns the registry as an http.Handler, for use outside Go
// tests (a testscript command): the same registry New serves.
func Handler(opts Options) http.Handler { return NewRegistry(opts) }

// NewRegistry returns a registry serving opts.Images.
func NewRegistry(opts Options) *Registry {
	r := &Registry{
		opts:      opts,
		blobs:     map[string]manifest{},
		tags:      map[string]map[string]string{},
		tokens:    map[string]map[string]bool{},
		counts:    map[string]int{},
		failsLeft: opts.FailManifest,
	}
	for _, im := range opts.Images {
		r.AddImage(im.Repo, im.Tag, im.Manifest, im.MediaType)
	}
	return r
}

// AddImage serves manifest under repo (and under tag, unless tag is "")
// and returns its digest.
func (r *Registry) AddImage(repo, tag string, body []byte, mediaType string) string {
	d := Digest(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blobs[d] = manifest{body: slices.Clone(body), mediaType: mediaType, digest: d}
	if r.tags[repo] == nil {
		r.tags[repo] = map[string]string{}
	}
	r.tags[repo][d] = d
	if tag != "" {
		r.tags[repo][tag] = d
	}
	return d
}

// Count returns how many requests the registry received for path
// ("/token", "/v2/x/manifests/1"), any method.
func (r *Registry) Count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[path]
}

// CountMethod returns how many method requests path received.
func (r *Registry) CountMethod(method, path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[method+" "+path]
}

// TokenScopes returns the scope parameters the token endpoint received, in
// order.
func (r *Registry) TokenScopes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.scopes)
}

// Digest is the OCI digest of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// IndexManifest returns a plausible multi-arch OCI image index (amd64 and
// arm64), determined by seed: the same seed gives the same bytes and so
// the same digest.
func IndexManifest(seed string) []byte {
	type platform struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}
	type desc struct {
		MediaType string   `json:"mediaType"`
		Digest    string   `json:"digest"`
		Size      int      `json:"size"`
		Platform  platform `json:"platform"`
	}
	var ms []desc
	for _, arch := range []string{"amd64", "arm64"} {
		child := ImageManifest(seed + "/" + arch)
		ms = append(ms, desc{MediaTypeOCIManifest, Digest(child), len(child), platform{arch, "linux"}})
	}
	b, _ := json.MarshalIndent(struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Manifests     []desc `json:"manifests"`
	}{2, MediaTypeOCIIndex, ms}, "", "   ")
	return b
}

// ImageManifest returns a plausible single-platform OCI image manifest
// determined by seed.
func ImageManifest(seed string) []byte {
	h := func(s string) string { return Digest([]byte(seed + "/" + s)) }
	type desc struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int    `json:"size"`
	}
	b, _ := json.MarshalIndent(struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Config        desc   `json:"config"`
		Layers        []desc `json:"layers"`
	}{2, MediaTypeOCIManifest,
		desc{"application/vnd.oci.image.config.v1+json", h("config"), 1469},
		[]desc{{"application/vnd.oci.image.layer.v1.tar+gzip", h("layer0"), 29124563}},
	}, "", "   ")
	return b
}

func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.counts[req.URL.Path]++
	r.counts[req.Method+" "+req.URL.Path]++
	r.mu.Unlock()

	switch p := req.URL.Path; {
	case p == "/token":
		r.serveToken(w, req)
	case p == "/v2/" || p == "/v2":
		if r.opts.Auth != AuthNone && !r.authorized(req, "") {
			r.challenge(w, req, "")
			return
		}
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(p, "/v2/") && strings.Contains(p, "/manifests/"):
		i := strings.LastIndex(p, "/manifests/")
		r.serveManifest(w, req, p[len("/v2/"):i], p[i+len("/manifests/"):])
	default:
		ociError(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
	}
}

func (r *Registry) protected(repo string) bool {
	return r.opts.Username != "" && !slices.Contains(r.opts.Public, repo)
}

func (r *Registry) basicOK(req *http.Request) bool {
	u, p, ok := req.BasicAuth()
	return ok && u == r.opts.Username && p == r.opts.Password
}

// authorized reports whether req may pull repo ("" for the /v2/ ping).
func (r *Registry) authorized(req *http.Request, repo string) bool {
	switch r.opts.Auth {
	case AuthBasic:
		if repo != "" && !r.protected(repo) {
			return true
		}
		return r.opts.Username == "" || r.basicOK(req)
	case AuthBearer:
		tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return false
		}
		r.mu.Lock()
		grant, ok := r.tokens[tok]
		r.mu.Unlock()
		return ok && (repo == "" || grant[repo])
	}
	return true
}

func (r *Registry) challenge(w http.ResponseWriter, req *http.Request, repo string) {
	switch r.opts.Auth {
	case AuthBasic:
		w.Header().Set("WWW-Authenticate", `Basic realm="registrytest"`)
	case AuthBearer:
		scheme := "http"
		if req.TLS != nil {
			scheme = "https"
		}
		c := fmt.Sprintf(`Bearer realm="%s://%s/token",service="%s"`, scheme, req.Host, Service)
		if repo != "" {
			actions := r.opts.ScopeActions
			if actions == "" {
				actions = "pull"
			}
			c += fmt.Sprintf(`,scope="repository:%s:%s"`, repo, actions)
		}
		w.Header().Set("WWW-Authenticate", c)
	}
	ociError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
}

func (r *Registry) serveToken(w http.ResponseWriter, req *http.Request) {
	if r.opts.Auth != AuthBearer {
		ociError(w, http.StatusNotFound, "NOT_FOUND", "no token service")
		return
	}
	q := req.URL.Query()
	if q.Get("service") != Service {
		http.Error(w, `{"details":"wrong or missing service"}`, http.StatusBadRequest)
		return
	}
	authed := false
	if _, _, sent := req.BasicAuth(); sent {
		if !r.basicOK(req) {
			http.Error(w, `{"details":"incorrect username or password"}`, http.StatusUnauthorized)
			return
		}
		authed = true
	}
	r.mu.Lock()
	r.scopes = append(r.scopes, q["scope"]...)
	r.mu.Unlock()
	grant := map[string]bool{}
	for _, sc := range q["scope"] {
		parts := strings.Split(sc, ":")
		if len(parts) != 3 || parts[0] != "repository" || parts[1] == "" {
			http.Error(w, `{"details":"malformed scope"}`, http.StatusBadRequest)
			return
		}
		actions := strings.Split(parts[2], ",")
		// Like Docker Hub: a scope the caller may not have is left out of
		// the token, not refused; the manifest request then fails.
		if slices.Contains(actions, "pull") && (authed || !r.protected(parts[1])) {
			grant[parts[1]] = true
		}
	}
	var raw [16]byte
	rand.Read(raw[:])
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	r.mu.Lock()
	r.tokens[tok] = grant
	r.mu.Unlock()
	field := r.opts.TokenField
	if field == "" {
		field = "token"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{field: tok, "expires_in": 300})
}

func (r *Registry) serveManifest(w http.ResponseWriter, req *http.Request, repo, ref string) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		ociError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "read-only registry")
		return
	}
	r.mu.Lock()
	fail := r.failsLeft > 0
	if fail {
		r.failsLeft--
	}
	r.mu.Unlock()
	if fail {
		st := r.opts.FailStatus
		if st == 0 {
			st = http.StatusServiceUnavailable
		}
		if r.opts.RetryAfter != "" {
			w.Header().Set("Retry-After", r.opts.RetryAfter)
		}
		ociError(w, st, "UNAVAILABLE", "try again")
		return
	}
	if !r.authorized(req, repo) {
		r.challenge(w, req, repo)
		return
	}
	if req.Method == http.MethodHead && r.opts.RejectHEAD {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	r.mu.Lock()
	d, ok := r.tags[repo][ref]
	m := r.blobs[d]
	knownRepo := r.tags[repo] != nil
	r.mu.Unlock()
	if !ok {
		code := "MANIFEST_UNKNOWN"
		if !knownRepo {
			code = "NAME_UNKNOWN"
		}
		ociError(w, http.StatusNotFound, code, "manifest unknown")
		return
	}
	// Like Docker Hub: an index is not served to a client that does not
	// say it accepts one.
	if !accepts(req.Header.Values("Accept"), m.mediaType) {
		ociError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest type not in Accept header")
		return
	}
	h := w.Header()
	h.Set("Content-Type", m.mediaType)
	h.Set("Content-Length", strconv.Itoa(len(m.body)))
	switch {
	case req.Method == http.MethodHead && r.opts.OmitDigestOnHEAD:
	case req.Method == http.MethodGet && r.opts.CorruptDigestOnGET:
		h.Set("Docker-Content-Digest", Digest(append(slices.Clone(m.body), '\n')))
	default:
		h.Set("Docker-Content-Digest", m.digest)
	}
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodGet {
		w.Write(m.body)
	}
}

func accepts(values []string, mediaType string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t, _, _ = strings.Cut(t, ";")
			if t = strings.TrimSpace(t); t == mediaType || t == "*/*" {
				return true
			}
		}
	}
	return false
}

func ociError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}

// Server is a registry listening on loopback.
type Server struct {
	*Registry
	URL string // "http://127.0.0.1:port"
	srv *httptest.Server
}

// NewServer starts a registry on a loopback port; Close stops it.
func NewServer(opts Options) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registrytest: listen: %w", err)
	}
	reg := NewRegistry(opts)
	srv := httptest.NewUnstartedServer(reg)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return &Server{Registry: reg, URL: srv.URL, srv: srv}, nil
}

// New starts a registry for the test and stops it when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Host is the registry's host:port, as image references name it.
func (s *Server) Host() string { return strings.TrimPrefix(s.URL, "http://") }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }
