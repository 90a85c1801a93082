package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// poolServer is a real nel-run sandbox-serve process (this test binary run
// as nel-run, testscript.Main) with the local engine, as a slurm sandbox
// pool runs one per node. Its temporary files go to tmp, so that the test
// sees what its sessions leave.
type poolServer struct {
	addr, tmp string
	cmd       *exec.Cmd
	log       *syncBuffer
	exited    chan error
}

func startPoolServer(t *testing.T, slots string, flags ...string) *poolServer {
	t.Helper()
	nelRun, err := exec.LookPath("nel-run")
	if err != nil {
		t.Fatalf("nel-run is not on PATH (testscript.Main puts this test binary there): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &poolServer{addr: ln.Addr().String(), tmp: t.TempDir(), log: &syncBuffer{}, exited: make(chan error, 1)}
	ln.Close()
	args := append([]string{"sandbox-serve", "--name", "pool", "--listen", p.addr, "--slots", slots, "--timeout", "20s", "--grace", "1s"}, flags...)
	p.cmd = exec.Command(nelRun, args...)
	p.cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp, "NEL_RUN_LOG=debug")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + p.addr + "/health")
		if err == nil {
			resp.Body.Close()
			return p
		}
		select {
		case err := <-p.exited:
			if strings.Contains(p.log.String(), sandbox.ErrUnavailable.Error()) {
				testenv.Missing(t, testenv.LocalSandbox, p.log.String())
			}
			t.Fatalf("sandbox-serve exited (%v): %s", err, p.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox-serve: no health answer in 15s: %s", p.log.String())
		}
	}
}

// left lists what the server's sessions left in its temporary directory.
func (p *poolServer) left(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(p.tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// request sends one protocol request and returns its status and body.
func (p *poolServer) request(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+p.addr+path, bytes.NewReader(b))
	if token != "" {
		req.Header.Set(sandbox.SessionTokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

func sessionExec(t *testing.T, s sandbox.Session, c sandbox.Command) *sandbox.Result {
	t.Helper()
	res, err := s.Exec(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func sh(script string) sandbox.Command { return sandbox.Command{Argv: []string{"sh", "-c", script}} }

// A session on a pool's server through the client the shards use: the
// task's files (modes kept) at /app, what one command writes is there for
// the next, /tests only for a WithTests command, the session's slot held
// until Close, and nothing left on the server after it.
func TestPoolSessionPersists(t *testing.T) {
	p := startPoolServer(t, "1")
	app, tests := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(app, "hello.txt"), []byte("hi\n"), 0o644)
	os.MkdirAll(filepath.Join(app, "src"), 0o755)
	os.WriteFile(filepath.Join(app, "src", "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755)
	os.Symlink("hello.txt", filepath.Join(app, "link"))
	os.WriteFile(filepath.Join(tests, "test.sh"), []byte("#!/bin/sh\ngrep -q fixed /app/hello.txt && echo 1 > /logs/verifier/reward.txt\n"), 0o755)

	sb, err := sandbox.Open(t.Context(), sandbox.Config{Name: "pool", Type: "slurm", Endpoints: []string{p.addr}, Env: map[string]string{"BASE": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	s, err := sandbox.OpenSession(t.Context(), sb, sandbox.SessionSpec{App: app, Tests: tests, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res := sessionExec(t, s, sh(`cat link; ./src/run.sh; pwd; echo "$BASE"; ls /tests >/dev/null 2>&1 || echo no-tests`)); res.ExitCode != 0 ||
		string(res.Stdout) != "hi\nran\n/app\nb\nno-tests\n" {
		t.Errorf("first command: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	sessionExec(t, s, sh(`echo fixed > /app/hello.txt && echo note > /tmp/note`))
	if res := sessionExec(t, s, sh(`cat /app/hello.txt /tmp/note`)); string(res.Stdout) != "fixed\nnote\n" {
		t.Errorf("the second command sees %q, want what the first wrote", res.Stdout)
	}
	if res := sessionExec(t, s, sandbox.Command{Argv: []string{"sh", "-c", "/tests/test.sh; cat /logs/verifier/reward.txt"}, WithTests: true}); string(res.Stdout) != "1\n" {
		t.Errorf("verifier: exit %d, stdout %q, stderr %q; want reward 1", res.ExitCode, res.Stdout, res.Stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(app, "hello.txt")); string(got) != "hi\n" {
		t.Errorf("the task's own folder changed: hello.txt %q", got)
	}
	var h sandbox.Health
	_, b := p.request(t, http.MethodGet, "/health", "", nil)
	if json.Unmarshal(b, &h); h.Running != 1 {
		t.Errorf("health while a session is open: %+v, want its slot running", h)
	}
	if len(p.left(t)) == 0 {
		t.Error("no session directory on the server while the session is open")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left := p.left(t); len(left) != 0 {
		t.Errorf("the server kept %q after Close", left)
	}
	_, b = p.request(t, http.MethodGet, "/health", "", nil)
	if json.Unmarshal(b, &h); h.Running != 0 {
		t.Errorf("health after Close: %+v, want the slot free", h)
	}
	if _, err := s.Exec(t.Context(), sh("true")); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a command after Close: %v, want the server's 404", err)
	}
}

// The protocol refuses a request without the session's token, an unknown
// session, and a task tree whose paths leave the session's directory; a
// command's writes outside /app, /logs and /tmp never reach the host.
func TestPoolSessionRefusals(t *testing.T) {
	p := startPoolServer(t, "2")
	code, b := p.request(t, http.MethodPost, "/session", "", map[string]any{})
	var opened struct{ ID, Token string }
	if json.Unmarshal(b, &opened); code != http.StatusOK || opened.ID == "" || len(opened.Token) != 64 {
		t.Fatalf("open: %d %s", code, b)
	}
	exec := map[string]any{"argv": []string{"sh", "-c", "echo ok"}}
	for _, c := range []struct {
		id, token string
		want      int
	}{
		{opened.ID, "", http.StatusForbidden},
		{opened.ID, strings.Repeat("0", 64), http.StatusForbidden},
		{"feedfacefeedface", opened.Token, http.StatusNotFound},
	} {
		if code, b := p.request(t, http.MethodPost, "/session/"+c.id+"/exec", c.token, exec); code != c.want {
			t.Errorf("exec in %s with token %q: %d %s, want %d", c.id, c.token, code, b, c.want)
		}
		if code, _ := p.request(t, http.MethodDelete, "/session/"+c.id, c.token, nil); code != c.want {
			t.Errorf("close %s with token %q: %d, want %d", c.id, c.token, code, c.want)
		}
	}
	if code, b := p.request(t, http.MethodPost, "/session/"+opened.ID+"/exec", opened.Token, exec); code != http.StatusOK || !bytes.Contains(b, []byte(`"stdout":"b2sK"`)) {
		t.Errorf("exec with the token: %d %s, want 200 with ok", code, b)
	}

	outside := filepath.Join(t.TempDir(), "escape")
	for name, tree := range map[string][]map[string]any{
		"dot-dot":  {{"path": "../../../../../.." + outside, "data": "eA=="}},
		"absolute": {{"path": outside, "data": "eA=="}},
		"via link": {{"path": "l", "link": filepath.Dir(outside)}, {"path": "l/escape", "data": "eA=="}},
	} {
		if code, b := p.request(t, http.MethodPost, "/session", "", map[string]any{"app": tree}); code == http.StatusOK || !bytes.Contains(b, []byte("tree entry")) {
			t.Errorf("%s: open %d %s, want a refused tree entry", name, code, b)
		}
	}
	// A command writes where it may not: the host's paths stay as they were.
	script := "echo x > " + outside + "; echo x > /app/../../" + outside + "; ln -s " + filepath.Dir(outside) + " /app/l && echo x > /app/l/escape; true"
	if code, b := p.request(t, http.MethodPost, "/session/"+opened.ID+"/exec", opened.Token, map[string]any{"argv": []string{"sh", "-c", script}}); code != http.StatusOK {
		t.Errorf("escape attempt: %d %s", code, b)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists on the host (%v): a session wrote outside itself", outside, err)
	}
	if code, _ := p.request(t, http.MethodDelete, "/session/"+opened.ID, opened.Token, nil); code != http.StatusNoContent {
		t.Errorf("close: %d, want 204", code)
	}
	if left := p.left(t); len(left) != 0 {
		t.Errorf("the server kept %q", left)
	}
	if strings.Contains(p.log.String(), opened.Token) {
		t.Errorf("the session's token is in the server's log:\n%s", p.log.String())
	}
}

// A command whose client gives up is killed; Close after a cancelled
// sample removes the session; a session still open when the server gets
// SIGTERM is removed before it exits.
func TestPoolSessionCleanup(t *testing.T) {
	p := startPoolServer(t, "2")
	sb, err := sandbox.Open(t.Context(), sandbox.Config{Name: "pool", Type: "slurm", Endpoints: []string{p.addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	s, err := sandbox.OpenSession(t.Context(), sb, sandbox.SessionSpec{})
	if err != nil {
		t.Fatal(err)
	}
	mark := "nel-pool-cancel-" + filepath.Base(p.tmp)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Exec(ctx, sandbox.Command{Argv: []string{"sh", "-c", "sleep 30; : " + mark}}); err == nil {
		t.Fatal("a cancelled command returned no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancelled command returned after %s", d)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left := p.left(t); len(left) != 0 {
		t.Errorf("the server kept %q after a cancelled sample's Close", left)
	}
	deadline := time.Now().Add(10 * time.Second)
	for stillRunning(mark) {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled command still runs 10s later")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if _, err := sandbox.OpenSession(t.Context(), sb, sandbox.SessionSpec{}); err != nil {
		t.Fatal(err)
	}
	if len(p.left(t)) == 0 {
		t.Fatal("no session directory on the server")
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			t.Errorf("sandbox-serve exit after SIGTERM: %v\n%s", err, p.log.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("sandbox-serve still running 15s after SIGTERM")
	}
	if left := p.left(t); len(left) != 0 {
		t.Errorf("the server left %q at its exit", left)
	}
	if !strings.Contains(p.log.String(), "session closed at shutdown") {
		t.Errorf("log lacks the shutdown's session removal:\n%s", p.log.String())
	}
}

// A session whose client is gone without closing it (no request for
// --session-idle) is removed and its slot freed; one whose command runs
// longer than that is not.
func TestPoolSessionIdle(t *testing.T) {
	p := startPoolServer(t, "2", "--session-idle", "1s")
	open := func() (id, token string) {
		code, b := p.request(t, http.MethodPost, "/session", "", map[string]any{})
		var opened struct{ ID, Token string }
		if json.Unmarshal(b, &opened); code != http.StatusOK {
			t.Fatalf("open: %d %s", code, b)
		}
		return opened.ID, opened.Token
	}
	busyID, busyToken := open()
	goneID, goneToken := open()
	// A command of 2.5s in one session, past the idle limit.
	code, b := p.request(t, http.MethodPost, "/session/"+busyID+"/exec", busyToken, map[string]any{"argv": []string{"sh", "-c", "sleep 2.5; echo done"}})
	if code != http.StatusOK || !bytes.Contains(b, []byte(`"stdout":"ZG9uZQo="`)) {
		t.Errorf("a command longer than --session-idle: %d %s, want it done", code, b)
	}
	if code, b := p.request(t, http.MethodPost, "/session/"+goneID+"/exec", goneToken, map[string]any{"argv": []string{"true"}}); code != http.StatusNotFound {
		t.Errorf("the session left idle for 2.5s: %d %s, want it removed (404)", code, b)
	}
	if code, _ := p.request(t, http.MethodDelete, "/session/"+busyID, busyToken, nil); code != http.StatusNoContent {
		t.Errorf("close of the busy session: %d, want 204", code)
	}
	if left := p.left(t); len(left) != 0 {
		t.Errorf("the server kept %q", left)
	}
	if !regexp.MustCompile(`msg="idle session removed" .*session=` + goneID).MatchString(p.log.String()) {
		t.Errorf("log lacks the idle session's removal:\n%s", p.log.String())
	}
}

// stillRunning says whether a process whose command line holds mark runs.
func stillRunning(mark string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(mark)) {
			return true
		}
	}
	return false
}
