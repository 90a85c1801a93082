package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/compiler/registry/registrytest"
)

const (
	testUser = "alice"
	testPass = "s3cret-Pa55word-XYZ"
)

// sha is the digest computed here, independently of the code under test.
func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// client returns a Client reading credentials from an isolated HOME, and
// the buffer its log goes to.
func client(t *testing.T) (*Client, *bytes.Buffer, string) {
	t.Helper()
	home := isolate(t)
	var buf bytes.Buffer
	return &Client{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}, &buf, home
}

func mustParse(t *testing.T, s string) Ref {
	t.Helper()
	r, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func resolve(t *testing.T, c *Client, ref string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Resolve(ctx, mustParse(t, ref))
}

// noSecret fails when the password shows in an error or the log.
func noSecret(t *testing.T, err error, log *bytes.Buffer) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), testPass) {
		t.Errorf("error contains the password: %v", err)
	}
	if strings.Contains(log.String(), testPass) {
		t.Errorf("log contains the password:\n%s", log)
	}
}

func manifestPath(repo, ref string) string { return "/v2/" + repo + "/manifests/" + ref }

func TestResolveAnonymous(t *testing.T) {
	c, log, _ := client(t)
	srv := registrytest.New(t, registrytest.Options{})
	index := registrytest.IndexManifest("vllm")
	srv.AddImage("org/vllm", "v1", index, registrytest.MediaTypeOCIIndex)
	single := registrytest.ImageManifest("single")
	srv.AddImage("org/single", "2", single, registrytest.MediaTypeDockerManifest)

	// A multi-arch tag resolves to its index (the registry serves an index
	// only to a client that accepts one).
	d, err := resolve(t, c, srv.Host()+"/org/vllm:v1")
	if err != nil {
		t.Fatal(err)
	}
	if d != sha(index) {
		t.Errorf("digest = %s, want %s", d, sha(index))
	}
	if n := srv.CountMethod("HEAD", manifestPath("org/vllm", "v1")); n != 1 {
		t.Errorf("HEAD requests = %d, want 1", n)
	}
	if n := srv.CountMethod("GET", manifestPath("org/vllm", "v1")); n != 0 {
		t.Errorf("GET requests = %d, want 0 (HEAD gave the digest)", n)
	}

	d, err = resolve(t, c, srv.Host()+"/org/single:2")
	if err != nil || d != sha(single) {
		t.Errorf("docker manifest: %s, %v; want %s", d, err, sha(single))
	}

	// A pinned reference is checked, needs no token, and comes back as is.
	pinned := srv.Host() + "/org/vllm@" + sha(index)
	if d, err := resolve(t, c, pinned); err != nil || d != sha(index) {
		t.Errorf("pinned: %s, %v", d, err)
	}
	if n := srv.Count("/token"); n != 0 {
		t.Errorf("token requests = %d, want 0", n)
	}
	noSecret(t, err, log)
}

func TestResolveEnrootForm(t *testing.T) {
	c, _, _ := client(t)
	srv := registrytest.New(t, registrytest.Options{Auth: registrytest.AuthBearer})
	m := registrytest.IndexManifest("pytorch")
	srv.AddImage("nvidia/pytorch", "24.05-py3", m, registrytest.MediaTypeOCIIndex)
	ref := "docker://$oauthtoken@" + srv.Host() + "#nvidia/pytorch:24.05-py3"
	d, err := resolve(t, c, ref)
	if err != nil || d != sha(m) {
		t.Fatalf("%s: %s, %v", ref, d, err)
	}
	if p := mustParse(t, ref).Pinned(d); p != "$oauthtoken@"+srv.Host()+"#nvidia/pytorch@"+sha(m) {
		t.Errorf("Pinned = %s", p)
	}
}

func TestResolveBearer(t *testing.T) {
	index := registrytest.IndexManifest("private")
	pub := registrytest.IndexManifest("public")
	newSrv := func(t *testing.T, o registrytest.Options) *registrytest.Server {
		o.Auth = registrytest.AuthBearer
		o.Username, o.Password = testUser, testPass
		o.Public = []string{"org/public"}
		srv := registrytest.New(t, o)
		srv.AddImage("org/private", "1.0", index, registrytest.MediaTypeOCIIndex)
		srv.AddImage("org/public", "1.0", pub, registrytest.MediaTypeOCIIndex)
		return srv
	}

	t.Run("public repo anonymously", func(t *testing.T) {
		c, log, _ := client(t)
		srv := newSrv(t, registrytest.Options{})
		d, err := resolve(t, c, srv.Host()+"/org/public:1.0")
		if err != nil || d != sha(pub) {
			t.Fatalf("%s, %v", d, err)
		}
		if n := srv.Count("/token"); n != 1 {
			t.Errorf("token requests = %d, want 1", n)
		}
		if got, want := srv.TokenScopes(), []string{"repository:org/public:pull"}; !reflect.DeepEqual(got, want) {
			t.Errorf("scopes = %q, want %q", got, want)
		}
		noSecret(t, err, log)
	})

	t.Run("private repo with docker config credentials", func(t *testing.T) {
		c, log, home := client(t)
		srv := newSrv(t, registrytest.Options{})
		writeFile(t, filepath.Join(home, ".docker", "config.json"),
			`{"auths":{"`+srv.Host()+`":{"auth":"`+b64(testUser+":"+testPass)+`"}}}`)
		d, err := resolve(t, c, srv.Host()+"/org/private:1.0")
		if err != nil || d != sha(index) {
			t.Fatalf("%s, %v", d, err)
		}
		if n := srv.Count("/token"); n != 1 {
			t.Errorf("token requests = %d, want 1", n)
		}
		noSecret(t, err, log)
	})

	t.Run("private repo, GET fallback reuses the token", func(t *testing.T) {
		c, log, home := client(t)
		srv := newSrv(t, registrytest.Options{OmitDigestOnHEAD: true, TokenField: "access_token"})
		writeFile(t, filepath.Join(home, ".config", "enroot", ".credentials"),
			"machine "+srv.Host()+" login "+testUser+" password $REG_PASS\n")
		t.Setenv("REG_PASS", testPass)
		d, err := resolve(t, c, srv.Host()+"/org/private:1.0")
		if err != nil || d != sha(index) {
			t.Fatalf("%s, %v", d, err)
		}
		if n := srv.Count("/token"); n != 1 {
			t.Errorf("token requests = %d, want 1 for HEAD and GET together", n)
		}
		if n := srv.CountMethod("GET", manifestPath("org/private", "1.0")); n != 1 {
			t.Errorf("GET requests = %d, want 1", n)
		}
		noSecret(t, err, log)
	})

	t.Run("private repo without credentials", func(t *testing.T) {
		c, log, home := client(t)
		srv := newSrv(t, registrytest.Options{})
		_, err := resolve(t, c, srv.Host()+"/org/private:1.0")
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
		msg := err.Error()
		for _, want := range []string{
			srv.Host() + "/org/private:1.0", // the image
			"registry " + srv.Host(),
			"no credentials for " + srv.Host() + " were found",
			filepath.Join(home, ".docker", "config.json"),
			filepath.Join(home, ".config", "enroot", ".credentials"),
			"docker login " + srv.Host(),
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("error lacks %q:\n%s", want, msg)
			}
		}
		noSecret(t, err, log)
	})

	t.Run("wrong password", func(t *testing.T) {
		c, log, home := client(t)
		srv := newSrv(t, registrytest.Options{})
		cfg := filepath.Join(home, ".docker", "config.json")
		writeFile(t, cfg, `{"auths":{"`+srv.Host()+`":{"username":"`+testUser+`","password":"`+testPass+`-old"}}}`)
		_, err := resolve(t, c, srv.Host()+"/org/private:1.0")
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "from "+cfg+" were refused") {
			t.Errorf("error does not say which credentials were refused:\n%s", msg)
		}
		noSecret(t, err, log)
	})

	t.Run("Credentials func and a comma inside the challenge scope", func(t *testing.T) {
		c, log, _ := client(t)
		var asked []string
		c.Credentials = func(host string) (string, string, bool) {
			asked = append(asked, host)
			return testUser, testPass, true
		}
		srv := newSrv(t, registrytest.Options{ScopeActions: "pull,push"})
		d, err := resolve(t, c, srv.Host()+"/org/private:1.0")
		if err != nil || d != sha(index) {
			t.Fatalf("%s, %v", d, err)
		}
		if got, want := srv.TokenScopes(), []string{"repository:org/private:pull,push"}; !reflect.DeepEqual(got, want) {
			t.Errorf("scopes = %q, want %q", got, want)
		}
		if !reflect.DeepEqual(asked, []string{srv.Host()}) {
			t.Errorf("Credentials asked for %q", asked)
		}
		noSecret(t, err, log)
	})
}

func TestResolveBasic(t *testing.T) {
	m := registrytest.IndexManifest("basic")
	newSrv := func(t *testing.T) *registrytest.Server {
		srv := registrytest.New(t, registrytest.Options{Auth: registrytest.AuthBasic, Username: testUser, Password: testPass})
		srv.AddImage("team/img", "3", m, registrytest.MediaTypeOCIIndex)
		return srv
	}
	t.Run("with enroot credentials", func(t *testing.T) {
		c, log, home := client(t)
		srv := newSrv(t)
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
		writeFile(t, filepath.Join(home, "xdg", "enroot", ".credentials"),
			"machine "+srv.Host()+" login "+testUser+" password "+testPass+"\n")
		d, err := resolve(t, c, srv.Host()+"#team/img:3")
		if err != nil || d != sha(m) {
			t.Fatalf("%s, %v", d, err)
		}
		if n := srv.Count("/token"); n != 0 {
			t.Errorf("token requests = %d in basic mode", n)
		}
		noSecret(t, err, log)
	})
	t.Run("command password is not run", func(t *testing.T) {
		c, log, home := client(t)
		srv := newSrv(t)
		marker := filepath.Join(home, "ran")
		writeFile(t, filepath.Join(home, ".config", "enroot", ".credentials"),
			"machine "+srv.Host()+" login "+testUser+" password $(touch "+marker+")\n")
		_, err := resolve(t, c, srv.Host()+"/team/img:3")
		if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "no credentials") {
			t.Fatalf("err = %v, want not authorized, no credentials", err)
		}
		if !strings.Contains(log.String(), "is a command") {
			t.Errorf("no warning about the skipped command:\n%s", log)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the command ran")
		}
		noSecret(t, err, log)
	})
	t.Run("wrong password", func(t *testing.T) {
		c, log, _ := client(t)
		srv := newSrv(t)
		c.Credentials = func(string) (string, string, bool) { return testUser, testPass + "x", true }
		_, err := resolve(t, c, srv.Host()+"/team/img:3")
		if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "were refused") {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), testPass) {
			t.Errorf("error contains the password: %v", err)
		}
		noSecret(t, err, log)
	})
}

func TestResolveGETFallback(t *testing.T) {
	m := registrytest.IndexManifest("fallback")
	for _, o := range []registrytest.Options{{OmitDigestOnHEAD: true}, {RejectHEAD: true}} {
		c, _, _ := client(t)
		srv := registrytest.New(t, o)
		srv.AddImage("a/b", "t", m, registrytest.MediaTypeOCIIndex)
		d, err := resolve(t, c, srv.Host()+"/a/b:t")
		if err != nil || d != sha(m) {
			t.Errorf("%+v: %s, %v; want %s", o, d, err, sha(m))
		}
		if n := srv.CountMethod("GET", manifestPath("a/b", "t")); n != 1 {
			t.Errorf("%+v: GET requests = %d, want 1", o, n)
		}
		// A pinned reference is verified against the bytes.
		d, err = resolve(t, c, srv.Host()+"/a/b@"+sha(m))
		if err != nil || d != sha(m) {
			t.Errorf("%+v pinned: %s, %v", o, d, err)
		}
	}
}

func TestResolveDigestMismatch(t *testing.T) {
	c, _, _ := client(t)
	srv := registrytest.New(t, registrytest.Options{OmitDigestOnHEAD: true, CorruptDigestOnGET: true})
	m := registrytest.IndexManifest("x")
	srv.AddImage("a/b", "t", m, registrytest.MediaTypeOCIIndex)
	_, err := resolve(t, c, srv.Host()+"/a/b:t")
	if err == nil || !strings.Contains(err.Error(), "refusing") || !strings.Contains(err.Error(), sha(m)) {
		t.Fatalf("err = %v, want a refusal naming the body's digest %s", err, sha(m))
	}
}

func TestResolveNotFound(t *testing.T) {
	c, _, _ := client(t)
	srv := registrytest.New(t, registrytest.Options{Auth: registrytest.AuthBearer})
	srv.AddImage("a/b", "t", registrytest.IndexManifest("x"), registrytest.MediaTypeOCIIndex)
	for _, ref := range []string{srv.Host() + "/a/b:nope", srv.Host() + "/no/such:t", srv.Host() + "/a/b@" + dA} {
		_, err := resolve(t, c, ref)
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", ref, err)
			continue
		}
		for _, want := range []string{ref, "registry " + srv.Host(), "does not exist"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
	}
}

func TestResolveUnreachable(t *testing.T) {
	c, _, _ := client(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = resolve(t, c, addr+"/a/b:1")
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "NEL_REGISTRY_INSECURE") {
		t.Errorf("error does not name the registry or the remedy: %v", err)
	}
}

func TestResolveRetries(t *testing.T) {
	m := registrytest.IndexManifest("retry")
	t.Run("503 twice then 200", func(t *testing.T) {
		c, _, _ := client(t)
		srv := registrytest.New(t, registrytest.Options{FailManifest: 2, RetryAfter: "0"})
		srv.AddImage("a/b", "t", m, registrytest.MediaTypeOCIIndex)
		d, err := resolve(t, c, srv.Host()+"/a/b:t")
		if err != nil || d != sha(m) {
			t.Fatalf("%s, %v", d, err)
		}
		if n := srv.CountMethod("HEAD", manifestPath("a/b", "t")); n != 3 {
			t.Errorf("HEAD requests = %d, want 3", n)
		}
	})
	t.Run("429 without Retry-After backs off", func(t *testing.T) {
		c, _, _ := client(t)
		srv := registrytest.New(t, registrytest.Options{FailManifest: 1, FailStatus: 429})
		srv.AddImage("a/b", "t", m, registrytest.MediaTypeOCIIndex)
		if d, err := resolve(t, c, srv.Host()+"/a/b:t"); err != nil || d != sha(m) {
			t.Fatalf("%s, %v", d, err)
		}
	})
	t.Run("503 three times", func(t *testing.T) {
		c, _, _ := client(t)
		srv := registrytest.New(t, registrytest.Options{FailManifest: 3, RetryAfter: "0"})
		srv.AddImage("a/b", "t", m, registrytest.MediaTypeOCIIndex)
		_, err := resolve(t, c, srv.Host()+"/a/b:t")
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "after 3 attempts") {
			t.Fatalf("err = %v", err)
		}
		if n := srv.CountMethod("HEAD", manifestPath("a/b", "t")); n != 3 {
			t.Errorf("HEAD requests = %d, want 3", n)
		}
	})
	t.Run("context cancelled during backoff", func(t *testing.T) {
		c, _, _ := client(t)
		srv := registrytest.New(t, registrytest.Options{FailManifest: 3, RetryAfter: "5"})
		srv.AddImage("a/b", "t", m, registrytest.MediaTypeOCIIndex)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Resolve(ctx, mustParse(t, srv.Host()+"/a/b:t"))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
	})
}

func TestBackoff(t *testing.T) {
	if d := backoff(0, "2"); d != 2*time.Second {
		t.Errorf("Retry-After 2: %v", d)
	}
	if d := backoff(0, "3600"); d != maxRetryAfter {
		t.Errorf("Retry-After 3600: %v, want the cap %v", d, maxRetryAfter)
	}
	if d := backoff(1, time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)); d != 0 {
		t.Errorf("Retry-After in the past: %v", d)
	}
	if d := backoff(0, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); d != maxRetryAfter {
		t.Errorf("Retry-After date in an hour: %v", d)
	}
	for attempt, base := range []time.Duration{500 * time.Millisecond, time.Second} {
		for range 20 {
			if d := backoff(attempt, "soon"); d < base || d > base+base/4 {
				t.Errorf("backoff(%d) = %v, want within [%v, %v]", attempt, d, base, base+base/4)
			}
		}
	}
}
