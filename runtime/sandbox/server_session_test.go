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

// sessionReq sends v as JSON (nil: no body) with a session's token
// and returns the status and body.
func sessionReq(t *testing.T, method, url, token string, v any) (int, string) {
	t.Helper()
	var b []byte
	if v != nil {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(SessionTokenHeader, token)
	resp, err := http.DefaultClient.Do(req)
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

// The session of a task's container engine, on the one protocol of
// server_session.go: /app's files arrive with the opening (modes kept),
// commands share the files, /tests arrive with the command that asks for
// them and are gone after it, a second session of the container is
// refused, and nothing runs once the session is removed.
func TestServerContainerSession(t *testing.T) {
	root := t.TempDir()
	c := openContainer("task", Config{Root: root})
	srv := httptest.NewServer(NewServer(c, ServerOptions{Slots: 2}))
	t.Cleanup(srv.Close)

	app := []treeEntry{{Path: "run.sh", Data: []byte("#!/bin/sh\necho ran\n"), Mode: 0o755}, {Path: "d", Dir: true, Mode: 0o755}, {Path: "d/x.txt", Data: []byte("x\n"), Mode: 0o644}}
	st, body := sessionReq(t, http.MethodPost, srv.URL+"/session", "", wireSessionSpec{App: app, HasTests: true})
	if st != http.StatusOK {
		t.Fatalf("open: %d %s", st, body)
	}
	var opened wireSessionOpened
	if err := json.Unmarshal([]byte(body), &opened); err != nil || opened.ID == "" || opened.Token == "" {
		t.Fatalf("open answered %s (%v)", body, err)
	}
	if st, body := sessionReq(t, http.MethodPost, srv.URL+"/session", "", wireSessionSpec{}); st != http.StatusInternalServerError || !strings.Contains(body, "holds a session already") {
		t.Errorf("second open: %d %s", st, body)
	}
	execURL := srv.URL + "/session/" + opened.ID + "/exec"
	if st, body := sessionReq(t, http.MethodPost, execURL, "wrong", wireCommand{Argv: []string{"true"}}); st != http.StatusForbidden {
		t.Errorf("exec with another token: %d %s", st, body)
	}
	exec := func(c wireCommand) string {
		t.Helper()
		st, body := sessionReq(t, http.MethodPost, execURL, opened.Token, c)
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
	tests := []treeEntry{{Path: "test.sh", Data: []byte("#!/bin/sh\necho secret\n"), Mode: 0o755}}
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
	if st, body := sessionReq(t, http.MethodDelete, srv.URL+"/session/"+opened.ID, opened.Token, nil); st != http.StatusNoContent {
		t.Errorf("close: %d %s", st, body)
	}
	if st, _ := sessionReq(t, http.MethodPost, execURL, opened.Token, wireCommand{Argv: []string{"true"}}); st != http.StatusNotFound {
		t.Errorf("exec after close: %d", st)
	}
}

// A session without tests refuses a command that asks for them.
func TestServerSessionNoTests(t *testing.T) {
	srv := httptest.NewServer(NewServer(openContainer("task", Config{Root: t.TempDir()}), ServerOptions{}))
	t.Cleanup(srv.Close)
	_, body := sessionReq(t, http.MethodPost, srv.URL+"/session", "", wireSessionSpec{})
	var opened wireSessionOpened
	if err := json.Unmarshal([]byte(body), &opened); err != nil {
		t.Fatalf("open answered %s (%v)", body, err)
	}
	st, body := sessionReq(t, http.MethodPost, srv.URL+"/session/"+opened.ID+"/exec", opened.Token, wireCommand{Argv: []string{"true"}, WithTests: true})
	if st != http.StatusBadRequest || !strings.Contains(body, "no tests directory") {
		t.Errorf("verifier without tests: %d %s", st, body)
	}
}

// An engine that keeps no session says so.
func TestServerSessionUnsupported(t *testing.T) {
	srv := httptest.NewServer(NewServer(&fakeSandbox{name: "f"}, ServerOptions{}))
	t.Cleanup(srv.Close)
	if st, body := sessionReq(t, http.MethodPost, srv.URL+"/session", "", wireSessionSpec{}); st != http.StatusNotImplemented || !strings.Contains(body, "not supported yet: sessions") {
		t.Errorf("open: %d %s", st, body)
	}
}

// The request that opens a session carries /app's files and no test: the
// tests stay with the client until the verifier's command, in a pool's
// session as in an ecs_fargate task's.
func TestSessionRequestKeepsTests(t *testing.T) {
	app, tests := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(app, "a.txt"), []byte("app-file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tests, "test.sh"), []byte("verifier-secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	body, got, err := sessionRequest("pool", SessionSpec{App: app, Tests: tests})
	if err != nil {
		t.Fatal(err)
	}
	var ws map[string]any
	if err := json.Unmarshal(body, &ws); err != nil {
		t.Fatal(err)
	}
	if _, ok := ws["tests"]; ok || ws["has_tests"] != true || !strings.Contains(string(body), `"path":"a.txt"`) {
		t.Errorf("opening request %s: want /app's files, has_tests and no tests", body)
	}
	if strings.Contains(string(body), "dmVyaWZpZXItc2VjcmV0") { // base64 of the test's bytes
		t.Errorf("the test's contents travel with the opening: %s", body)
	}
	if len(got) != 1 || got[0].Path != "test.sh" || string(got[0].Data) != "verifier-secret" || got[0].Mode != 0o755 {
		t.Errorf("tests kept for the verifier: %+v", got)
	}
}
