package registry

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nel-eval/nel/runtime/retryafter"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// Errors Resolve wraps, for errors.Is.
var (
	ErrNotFound     = errors.New("manifest not found")
	ErrUnauthorized = errors.New("not authorized")
	ErrUnreachable  = errors.New("registry unreachable")
	ErrUnavailable  = errors.New("registry unavailable")
)

const (
	// maxManifest is the OCI spec's suggested limit on manifests a
	// registry must accept; a bigger answer is not a manifest.
	maxManifest   = 4 << 20
	maxSmallBody  = 1 << 20 // token and error bodies
	maxRetries    = 2       // after the first attempt, for 429 and 5xx
	retryBase     = 500 * time.Millisecond
	maxRetryAfter = 10 * time.Second
)

// manifestAccept lists indexes first, so that a multi-arch tag resolves to
// its index digest: what `docker pull` and enroot pin.
var manifestAccept = strings.Join([]string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}, ", ")

// defaultHTTP is shared so that its connection pool is; it holds no
// configuration anyone can change.
var defaultHTTP = &http.Client{
	Timeout: 60 * time.Second,
	Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          16,
		ForceAttemptHTTP2:     true,
	},
}

// Client resolves image references against registries. The zero value is
// ready to use.
type Client struct {
	HTTP *http.Client // nil: one with sane timeouts
	// Credentials returns the username and password for a registry host,
	// ok=false when none. nil: DefaultCredentials.
	Credentials func(host string) (user, pass string, ok bool)
	// PlainHTTP says a registry is spoken to over http://. nil: only
	// loopback hosts (localhost, 127.0.0.0/8, ::1) and hosts listed in
	// $NEL_REGISTRY_INSECURE (comma-separated).
	PlainHTTP func(host string) bool
	Logger    *slog.Logger
}

// DefaultPlainHTTP is the PlainHTTP rule a Client with none uses.
func DefaultPlainHTTP(host string) bool {
	h := host
	if sh, _, err := net.SplitHostPort(host); err == nil {
		h = sh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, e := range strings.Split(os.Getenv("NEL_REGISTRY_INSECURE"), ",") {
		if e = strings.TrimSpace(e); e != "" && (e == host || e == h) {
			return true
		}
	}
	return false
}

// Resolve returns the digest the registry serves for ref's tag (a ref that
// already has a digest is checked to exist and returned as is). It never
// downloads layers.
func (c *Client) Resolve(ctx context.Context, ref Ref) (string, error) {
	if ref.IsPath() {
		return "", fmt.Errorf("resolve %s: a file path has no registry digest", ref.Path)
	}
	if ref.Registry == "" || ref.Repository == "" {
		return "", fmt.Errorf("resolve %q: no registry or repository (use registry.Parse)", ref.Original)
	}
	s := &session{c: c, ref: ref, http: c.HTTP, log: c.Logger}
	if s.http == nil {
		s.http = defaultHTTP
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	plain := DefaultPlainHTTP
	if c.PlainHTTP != nil {
		plain = c.PlainHTTP
	}
	scheme := "https"
	if plain(ref.Registry) {
		scheme = "http"
	}
	s.plain = plain
	s.base = scheme + "://" + ref.Registry
	return s.resolve(ctx)
}

// session is one Resolve: the auth it obtained is reused for its second
// request, so the token endpoint is asked at most once.
type session struct {
	c     *Client
	ref   Ref
	http  *http.Client
	log   *slog.Logger
	plain func(string) bool
	base  string

	authorization string // Authorization header once obtained
	authTried     bool

	credsLooked bool
	user, pass  string
	credsSource string
	credsOK     bool
}

func (s *session) display() string {
	if s.ref.Original != "" {
		return s.ref.Original
	}
	return s.ref.Name()
}

func (s *session) resolve(ctx context.Context) (string, error) {
	reference := s.ref.Tag
	if s.ref.Digest != "" {
		reference = s.ref.Digest
	}
	u := s.base + "/v2/" + s.ref.Repository + "/manifests/" + reference

	resp, err := s.do(ctx, http.MethodHead, u)
	if err != nil {
		return "", err
	}
	drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		if d := resp.Header.Get("Docker-Content-Digest"); digestRE.MatchString(d) {
			if s.ref.Digest != "" {
				if sameAlgorithm(d, s.ref.Digest) && d != s.ref.Digest {
					return "", fmt.Errorf("resolve %s: registry %s serves digest %s for %s; refusing a mismatched manifest", s.display(), s.ref.Registry, d, s.ref.Digest)
				}
				return s.ref.Digest, nil
			}
			return d, nil
		}
		s.log.Debug("registry: HEAD gave no digest; fetching the manifest", "image", s.display())
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		s.log.Debug("registry: HEAD refused; fetching the manifest", "image", s.display(), "status", resp.StatusCode)
	default:
		return "", s.statusError(resp, nil)
	}

	resp, err = s.do(ctx, http.MethodGet, u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxSmallBody))
		return "", s.statusError(resp, body)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifest+1))
	if err != nil {
		return "", fmt.Errorf("resolve %s: read manifest from %s: %w", s.display(), s.ref.Registry, err)
	}
	if len(body) > maxManifest {
		return "", fmt.Errorf("resolve %s: registry %s answered with more than %d bytes; that is not a manifest", s.display(), s.ref.Registry, maxManifest)
	}
	if h := resp.Header.Get("Docker-Content-Digest"); h != "" {
		if !digestRE.MatchString(h) {
			return "", fmt.Errorf("resolve %s: registry %s sent a malformed Docker-Content-Digest %q", s.display(), s.ref.Registry, h)
		}
		if got := digestOf(h, body); got != h {
			return "", fmt.Errorf("resolve %s: registry %s says the manifest's digest is %s but its bytes hash to %s; refusing it (a proxy may have rewritten it)", s.display(), s.ref.Registry, h, got)
		}
	}
	if s.ref.Digest != "" {
		if got := digestOf(s.ref.Digest, body); got != s.ref.Digest {
			return "", fmt.Errorf("resolve %s: registry %s served a manifest hashing to %s, not the pinned %s; refusing it", s.display(), s.ref.Registry, got, s.ref.Digest)
		}
		return s.ref.Digest, nil
	}
	return digestOf("sha256:", body), nil
}

// do sends one request, authenticating once on a 401 challenge.
func (s *session) do(ctx context.Context, method, u string) (*http.Response, error) {
	resp, err := s.send(ctx, method, u, s.authorization, true)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusUnauthorized || s.authTried {
		return resp, nil
	}
	s.authTried = true
	challenges := parseChallenges(resp.Header.Values("Www-Authenticate"))
	drain(resp)
	if err := s.authenticate(ctx, challenges); err != nil {
		return nil, err
	}
	return s.send(ctx, method, u, s.authorization, true)
}

// authenticate answers a challenge: a bearer token from the realm the
// registry names (Docker Registry token auth), or Basic credentials.
func (s *session) authenticate(ctx context.Context, challenges []challenge) error {
	var bearer, basic *challenge
	for i := range challenges {
		switch challenges[i].scheme {
		case "bearer":
			if bearer == nil {
				bearer = &challenges[i]
			}
		case "basic":
			if basic == nil {
				basic = &challenges[i]
			}
		}
	}
	switch {
	case bearer != nil:
		return s.fetchToken(ctx, bearer.params)
	case basic != nil:
		user, pass, ok := s.credentials()
		if !ok {
			return s.unauthorized(http.StatusUnauthorized)
		}
		s.authorization = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
		return nil
	}
	return fmt.Errorf("resolve %s: registry %s: %w: it asked for authentication without a Bearer or Basic challenge", s.display(), s.ref.Registry, ErrUnauthorized)
}

func (s *session) fetchToken(ctx context.Context, params map[string]string) error {
	realm := params["realm"]
	ru, err := url.Parse(realm)
	if err != nil || ru.Host == "" || (ru.Scheme != "https" && ru.Scheme != "http") {
		return fmt.Errorf("resolve %s: registry %s named an unusable token realm %q", s.display(), s.ref.Registry, realm)
	}
	q := ru.Query()
	if svc := params["service"]; svc != "" {
		q.Set("service", svc)
	}
	scope := params["scope"]
	if scope == "" {
		scope = "repository:" + s.ref.Repository + ":pull"
	}
	// Several scopes are space-separated in a challenge and repeated
	// parameters in the token request.
	for _, sc := range strings.Fields(scope) {
		q.Add("scope", sc)
	}
	ru.RawQuery = q.Encode()

	user, pass, ok := s.credentials()
	var authz string
	if ok {
		if ru.Scheme != "https" && !s.plain(ru.Host) {
			return fmt.Errorf("resolve %s: registry %s sends credentials to token realm %s over plain http; refusing (list the host in NEL_REGISTRY_INSECURE if it is trusted)", s.display(), s.ref.Registry, ru.Redacted())
		}
		authz = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	resp, err := s.send(ctx, http.MethodGet, ru.String(), authz, false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSmallBody))
	if err != nil {
		return fmt.Errorf("resolve %s: read token from %s: %w", s.display(), ru.Host, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return s.unauthorized(resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("resolve %s: token service %s for registry %s answered HTTP %d%s", s.display(), ru.Host, s.ref.Registry, resp.StatusCode, retriedNote(resp.StatusCode))
	}
	var tok struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil {
		return fmt.Errorf("resolve %s: token service %s for registry %s answered with invalid JSON", s.display(), ru.Host, s.ref.Registry)
	}
	t := tok.Token
	if t == "" {
		t = tok.AccessToken
	}
	if t == "" {
		return fmt.Errorf("resolve %s: token service %s for registry %s returned no token", s.display(), ru.Host, s.ref.Registry)
	}
	s.authorization = "Bearer " + t
	return nil
}

// credentials looks the registry's credentials up once per session.
func (s *session) credentials() (user, pass string, ok bool) {
	if !s.credsLooked {
		s.credsLooked = true
		if s.c.Credentials != nil {
			s.user, s.pass, s.credsOK = s.c.Credentials(s.ref.Registry)
			s.credsSource = "the configured credentials"
		} else {
			s.user, s.pass, s.credsSource, s.credsOK = lookupCredentials(s.ref.Registry, s.log)
		}
	}
	return s.user, s.pass, s.credsOK
}

// unauthorized says whether credentials were found and where they are
// looked up, never what they are.
func (s *session) unauthorized(status int) error {
	host := s.ref.Registry
	var hint string
	s.credentials()
	switch {
	case s.credsOK:
		hint = fmt.Sprintf("the credentials for %s from %s were refused; check that they are current and grant pull access to %s", host, s.credsSource, s.ref.Repository)
	case s.c.Credentials != nil:
		hint = fmt.Sprintf("no credentials for %s were given; the repository may be private or the name misspelled", host)
	default:
		dockerFile, enrootFile := credentialFiles()
		key := host
		if hostAliases(host)[0] != host {
			key = hostAliases(host)[0]
		}
		hint = fmt.Sprintf("no credentials for %s were found (looked in %s under auths[%q], and in %s for \"machine %s\"); run `docker login %s`, or add \"machine %s login <user> password <secret>\" to %s; or the repository may be misspelled",
			host, dockerFile, key, enrootFile, host, host, host, enrootFile)
	}
	return fmt.Errorf("resolve %s: registry %s: %w (HTTP %d): %s", s.display(), host, ErrUnauthorized, status, hint)
}

var errorCodeRE = regexp.MustCompile(`^[A-Z][A-Z_]{0,63}$`)

// statusError explains a final non-success answer to a manifest request.
func (s *session) statusError(resp *http.Response, body []byte) error {
	host := s.ref.Registry
	// Only the registry's error codes (a fixed vocabulary) are quoted:
	// free-form messages could echo anything.
	var codes []string
	var oci struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &oci) == nil {
		for _, e := range oci.Errors {
			if errorCodeRE.MatchString(e.Code) {
				codes = append(codes, e.Code)
			}
		}
	}
	detail := ""
	if len(codes) > 0 {
		detail = " [" + strings.Join(codes, ", ") + "]"
	}
	switch st := resp.StatusCode; {
	case st == http.StatusNotFound:
		what := fmt.Sprintf("tag %q of repository %s", s.ref.Tag, s.ref.Repository)
		if s.ref.Digest != "" {
			what = fmt.Sprintf("digest %s of repository %s", s.ref.Digest, s.ref.Repository)
		}
		return fmt.Errorf("resolve %s: registry %s: %w (HTTP 404%s): %s does not exist; check the repository and tag spelling, and that the image was pushed", s.display(), host, ErrNotFound, detail, what)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return s.unauthorized(st)
	case st == http.StatusTooManyRequests || st >= 500:
		return fmt.Errorf("resolve %s: registry %s: %w (HTTP %d%s)%s", s.display(), host, ErrUnavailable, st, detail, retriedNote(st))
	default:
		return fmt.Errorf("resolve %s: registry %s answered HTTP %d%s to a manifest request", s.display(), host, st, detail)
	}
}

func retriedNote(status int) string {
	if status == http.StatusTooManyRequests || status >= 500 {
		return fmt.Sprintf(" after %d attempts; the registry is overloaded or down, try again later", maxRetries+1)
	}
	return ""
}

// send makes one request, retrying 429 and 5xx answers twice with
// backoff (honouring Retry-After, capped). Transport failures are not
// retried: a refused connection or an unknown host will not heal in a second.
func (s *session) send(ctx context.Context, method, u, authorization string, manifest bool) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", s.display(), err)
		}
		if manifest {
			req.Header.Set("Accept", manifestAccept)
		}
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		req.Header.Set("User-Agent", "nel")
		resp, err := s.http.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("resolve %s: %w", s.display(), ctx.Err())
			}
			host := req.URL.Host
			return nil, fmt.Errorf("resolve %s: registry %s: %w: %v; check the host name, the network and proxy settings (HTTPS_PROXY), or, for a registry that speaks plain http, list it in NEL_REGISTRY_INSECURE",
				s.display(), host, ErrUnreachable, unwrapURLError(err))
		}
		st := resp.StatusCode
		if (st != http.StatusTooManyRequests && st < 500) || attempt >= maxRetries {
			return resp, nil
		}
		wait := backoff(attempt, resp.Header.Get("Retry-After"))
		drain(resp)
		s.log.Info("registry: retrying", "image", s.display(), "url", req.URL.Redacted(), "status", st, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("resolve %s: %w", s.display(), ctx.Err())
		}
	}
}

// unwrapURLError drops *url.Error's "Get \"…\":" prefix; the caller names
// the host already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// backoff is Retry-After when the server gave one (seconds or an HTTP
// date, capped), else exponential from retryBase with jitter.
func backoff(attempt int, retryAfter string) time.Duration {
	if d, ok := retryafter.Parse(retryAfter); ok {
		return min(d, maxRetryAfter)
	}
	d := retryBase << attempt
	return d + rand.N(d/4+1)
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxSmallBody))
	resp.Body.Close()
}

func sameAlgorithm(a, b string) bool {
	ia, ib := strings.IndexByte(a, ':'), strings.IndexByte(b, ':')
	return ia > 0 && ib > 0 && a[:ia] == b[:ib]
}

// digestOf hashes b with the algorithm of like ("sha256:…", "sha512:…").
func digestOf(like string, b []byte) string {
	if strings.HasPrefix(like, "sha512:") {
		sum := sha512.Sum512(b)
		return "sha512:" + hex.EncodeToString(sum[:])
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
