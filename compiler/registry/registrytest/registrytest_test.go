package registrytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The Handler alone (as a testscript command serves it) speaks the token
// protocol a client follows by hand here.
func TestHandlerBearerFlow(t *testing.T) {
	m := IndexManifest("h")
	if IndexManifest("h") == nil || string(IndexManifest("h")) != string(m) {
		t.Fatal("IndexManifest is not deterministic")
	}
	srv := httptest.NewServer(Handler(Options{
		Auth:   AuthBearer,
		Images: []Image{{Repo: "a/b", Tag: "t", Manifest: m, MediaType: MediaTypeOCIIndex}},
	}))
	defer srv.Close()

	get := func(method, path, authz, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	resp := get("HEAD", "/v2/a/b/manifests/t", "", MediaTypeOCIIndex)
	ch := resp.Header.Get("WWW-Authenticate")
	want := `Bearer realm="` + srv.URL + `/token",service="registrytest",scope="repository:a/b:pull"`
	if resp.StatusCode != 401 || ch != want {
		t.Fatalf("anonymous HEAD: %d %q, want 401 %q", resp.StatusCode, ch, want)
	}
	resp = get("GET", "/token?service=registrytest&scope=repository:a/b:pull", "", "")
	var tok struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.Token == "" {
		t.Fatalf("token: %v %+v", err, tok)
	}
	if resp := get("GET", "/token?service=other&scope=repository:a/b:pull", "", ""); resp.StatusCode != 400 {
		t.Errorf("wrong service: %d, want 400", resp.StatusCode)
	}
	// An index is not served to a client that does not accept one.
	if resp := get("GET", "/v2/a/b/manifests/t", "Bearer "+tok.Token, MediaTypeDockerManifest); resp.StatusCode != 404 {
		t.Errorf("index without Accept: %d, want 404", resp.StatusCode)
	}
	resp = get("GET", "/v2/a/b/manifests/t", "Bearer "+tok.Token, MediaTypeDockerList+", "+MediaTypeOCIIndex)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != string(m) || resp.Header.Get("Docker-Content-Digest") != Digest(m) ||
		resp.Header.Get("Content-Type") != MediaTypeOCIIndex {
		t.Errorf("GET with token: %d %q %q", resp.StatusCode, resp.Header.Get("Docker-Content-Digest"), body)
	}
	// A token for one repository does not open another.
	if resp := get("HEAD", "/v2/c/d/manifests/t", "Bearer "+tok.Token, MediaTypeOCIIndex); resp.StatusCode != 401 {
		t.Errorf("other repo: %d, want 401", resp.StatusCode)
	}
	if !strings.HasPrefix(Digest(m), "sha256:") || len(Digest(m)) != 71 {
		t.Errorf("Digest = %q", Digest(m))
	}
}

func TestServerCounts(t *testing.T) {
	s := New(t, Options{})
	d := s.AddImage("x", "", ImageManifest("y"), MediaTypeOCIManifest)
	req, _ := http.NewRequest("HEAD", s.URL+"/v2/x/manifests/"+d, nil)
	req.Header.Set("Accept", MediaTypeOCIManifest)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || s.CountMethod("HEAD", "/v2/x/manifests/"+d) != 1 || s.Count("/v2/x/manifests/"+d) != 1 {
		t.Errorf("status %d, counts %d", resp.StatusCode, s.Count("/v2/x/manifests/"+d))
	}
	if !strings.HasPrefix(s.Host(), "127.0.0.1:") {
		t.Errorf("Host = %q", s.Host())
	}
}
