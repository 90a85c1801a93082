package storetest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/store/storetest"
)

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHandler(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "served")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	srv := httptest.NewServer(storetest.Handler(dir, true))
	defer srv.Close()

	if code, _ := do(t, "PUT", srv.URL+"/a/b/c.json", `{"x":1}`); code != http.StatusCreated {
		t.Errorf("PUT: %d", code)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b", "c.json")); err != nil || string(b) != `{"x":1}` {
		t.Errorf("PUT wrote %q, %v", b, err)
	}
	if code, body := do(t, "GET", srv.URL+"/a/b/c.json", ""); code != 200 || body != `{"x":1}` {
		t.Errorf("GET: %d %q", code, body)
	}
	if code, body := do(t, "HEAD", srv.URL+"/a/b/c.json", ""); code != 200 || body != "" {
		t.Errorf("HEAD: %d %q", code, body)
	}
	for _, p := range []string{"/sub", "/sub/", "/missing.json"} {
		if code, _ := do(t, "GET", srv.URL+p, ""); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
	// Paths that climb out are refused, encoded or not; nothing lands
	// beside the served directory.
	for _, p := range []string{"/../escape", "/a/../../escape", "/%2e%2e/escape", `/..%5cescape`} {
		if code, _ := do(t, "PUT", srv.URL+p, "x"); code != http.StatusBadRequest {
			t.Errorf("PUT %s: %d, want 400", p, code)
		}
	}
	if _, err := os.Stat(filepath.Join(parent, "escape")); err == nil {
		t.Error("a PUT escaped the served directory")
	}
	if code, _ := do(t, "DELETE", srv.URL+"/a/b/c.json", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d", code)
	}

	ro := httptest.NewServer(storetest.Handler(dir, false))
	defer ro.Close()
	if code, _ := do(t, "PUT", ro.URL+"/a/b/c.json", "changed"); code != http.StatusMethodNotAllowed {
		t.Errorf("read-only PUT: %d, want 405", code)
	}
	if code, body := do(t, "GET", ro.URL+"/a/b/c.json", ""); code != 200 || body != `{"x":1}` {
		t.Errorf("read-only GET: %d %q", code, body)
	}
}
