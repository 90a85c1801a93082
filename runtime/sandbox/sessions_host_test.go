package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A local session command with Network reaches a listener on the host's
// loopback (an agent CLI reaching nel-run's model proxy); without it the
// sandbox's own loopback has nothing. ReadOnly shows a host folder under
// /tmp, over the session's /tmp, and nothing can be written there.
func TestLocalSessionHostAccess(t *testing.T) {
	s := openSessionT(t, SessionSpec{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	// bash's /dev/tcp: no client program needed in the sandbox.
	dial := Command{Argv: []string{"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + port + " && cat <&3"}}
	if res := execT(t, s, dial); res.ExitCode == 0 {
		t.Errorf("without Network the host's listener answered: %q", res.Stdout)
	}
	dial.Network = true
	if res := execT(t, s, dial); res.ExitCode != 0 || string(res.Stdout) != "hello from the host\n" {
		t.Errorf("with Network: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	host := t.TempDir() // under /tmp, which the session's /tmp hides
	if err := os.WriteFile(filepath.Join(host, "tool.txt"), []byte("installed"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := Command{Argv: []string{"sh", "-c", "cat " + host + "/tool.txt; echo x > " + host + "/new.txt"}, ReadOnly: []string{host}}
	res := execT(t, s, read)
	if string(res.Stdout) != "installed" || res.ExitCode == 0 {
		t.Errorf("ReadOnly: exit %d, stdout %q (want the file read and the write refused)", res.ExitCode, res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(host, "new.txt")); err == nil {
		t.Error("a ReadOnly folder was written")
	}
	for _, bad := range []string{"relative", "/", "/a/../b"} {
		_, err := s.Exec(context.Background(), Command{Argv: []string{"true"}, ReadOnly: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), "want a clean absolute path") {
			t.Errorf("ReadOnly %q: %v", bad, err)
		}
	}
}

// An engine that cannot give a command the host's network or paths
// refuses such a command rather than running it without them.
func TestSessionHostAccessRefused(t *testing.T) {
	recordingCLI(t, "docker", "info")
	sb, err := Open(context.Background(), Config{Type: "docker", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSession(context.Background(), sb, SessionSpec{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []Command{{Argv: []string{"true"}, Network: true}, {Argv: []string{"true"}, ReadOnly: []string{"/opt/x"}}} {
		if _, err := s.Exec(context.Background(), c); err == nil || !strings.Contains(err.Error(), "not supported yet: a session command with the host's network or host paths on this engine") {
			t.Errorf("docker session ran %+v: %v", c, err)
		}
	}
}
