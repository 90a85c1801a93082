package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// postSession posts v as JSON to path and returns the status and body.
func postSession(t *testing.T, url, path string, v any) (int, string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// The server holds one session of its container engine: /app's files
// arrive with the opening (modes kept), commands share the files, /tests
// arrive with the command that asks for them and are gone after it, a
// second opening is refused, and nothing runs once it is closed.
func TestServerContainerSession(t *testing.T) {
	root := t.TempDir()
	c := openContainer("task", Config{Root: root})
	srv := httptest.NewServer(NewServer(c, ServerOptions{}))
	t.Cleanup(srv.Close)

	if st, body := postSession(t, srv.URL, "/session/exec", wireCommand{Argv: []string{"true"}}); st != http.StatusConflict || !strings.Contains(body, "no session is open") {
		t.Errorf("exec before open: %d %s", st, body)
	}
	app := tree{"run.sh": {Data: []byte("#!/bin/sh\necho ran\n"), Mode: 0o755}, "d/x.txt": {Data: []byte("x\n"), Mode: 0o644}}
	if st, body := postSession(t, srv.URL, "/session", wireSession{App: app}); st != http.StatusOK {
		t.Fatalf("open: %d %s", st, body)
	}
	if st, body := postSession(t, srv.URL, "/session", wireSession{}); st != http.StatusConflict || !strings.Contains(body, "already holds a session") {
		t.Errorf("second open: %d %s", st, body)
	}
	exec := func(c wireCommand) string {
		t.Helper()
		st, body := postSession(t, srv.URL, "/session/exec", c)
		if st != http.StatusOK {
			t.Fatalf("exec %q: %d %s", c.Argv, st, body)
		}
		var wr wireResult
		if err := json.Unmarshal([]byte(body), &wr); err != nil {
			t.Fatal(err)
		}
		return string(wr.Stdout) + string(wr.Stderr)
	}
	if got := exec(wireCommand{Argv: []string{"sh", "-c", "./run.sh; cat d/x.txt; echo kept > k"}}); got != "ran\nx\n" {
		t.Errorf("first command: %q", got)
	}
	tests := tree{"test.sh": {Data: []byte("#!/bin/sh\necho secret\n"), Mode: 0o755}}
	if got := exec(wireCommand{Argv: []string{"sh", "-c", "cat k; ../tests/test.sh"}, WithTests: true, Tests: tests}); got != "kept\nsecret\n" {
		t.Errorf("verifier: %q", got)
	}
	// Tests sent with a command that does not ask for them are not placed.
	if got := exec(wireCommand{Argv: []string{"sh", "-c", "ls ../tests 2>&1 >/dev/null | wc -l"}, Tests: tests}); strings.TrimSpace(got) != "1" {
		t.Errorf("tests without WithTests: ls said %q, want an error line", got)
	}
	if _, err := os.Stat(filepath.Join(root, "tests")); !os.IsNotExist(err) {
		t.Errorf("/tests after the verifier: %v", err)
	}
	if st, body := postSession(t, srv.URL, "/session/close", struct{}{}); st != http.StatusOK {
		t.Errorf("close: %d %s", st, body)
	}
	if st, _ := postSession(t, srv.URL, "/session/exec", wireCommand{Argv: []string{"true"}}); st != http.StatusConflict {
		t.Errorf("exec after close: %d", st)
	}
}

// An engine that keeps no session says so.
func TestServerSessionUnsupported(t *testing.T) {
	srv := httptest.NewServer(NewServer(&fakeSandbox{name: "f"}, ServerOptions{}))
	t.Cleanup(srv.Close)
	if st, body := postSession(t, srv.URL, "/session", wireSession{}); st != http.StatusNotImplemented || !strings.Contains(body, "keeps no session") {
		t.Errorf("open: %d %s", st, body)
	}
}
