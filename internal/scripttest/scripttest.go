// Package scripttest holds the testscript commands that nel's and
// nel-run's CLI scripts share (testdata/script/*.txtar): filling a file
// with the script's variables, waiting for an HTTP server, sending it a
// request, and handing out free ports. Only tests import it.
package scripttest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Commands are the shared commands, by name, for testscript.Params.Cmds.
func Commands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"expand":    Expand,
		"wait-http": WaitHTTP,
		"http":      HTTP,
	}
}

// Ports hands out TCP ports on 127.0.0.1 that were free a moment ago and
// that it has not handed out before: the kernel may hand a released port
// out again, and two scripts' servers on one port would answer each
// other's requests (a server that fails to bind still looks ready while
// the other one answers its health check).
type Ports struct {
	given sync.Map
}

// Free returns a fresh free port.
func (p *Ports) Free() (int, error) {
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if _, taken := p.given.LoadOrStore(port, true); !taken {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no fresh free port after 100 tries")
}

// Expand: expand FILE... replaces $VAR and ${VAR} in files with the
// script's variables; $$ stands for a literal $ (for ${VAR} references
// that recipes keep).
func Expand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: expand FILE...")
	}
	for _, f := range args {
		text := os.Expand(ts.ReadFile(f), func(k string) string {
			if k == "$" {
				return "$"
			}
			v := ts.Getenv(k)
			if v == "" {
				ts.Fatalf("expand %s: $%s is not set", f, k)
			}
			return v
		})
		ts.Check(os.WriteFile(ts.MkAbs(f), []byte(text), 0o644))
	}
}

// WaitHTTP: wait-http URL waits (up to 30 s) until URL answers 200;
// ! wait-http URL waits (up to 10 s) until nothing answers there (the
// connection fails: no server holds the port).
func WaitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] wait-http URL")
	}
	limit := 30 * time.Second
	if neg {
		limit = 10 * time.Second
	}
	deadline := time.Now().Add(limit)
	for {
		resp, err := http.Get(args[0])
		if err == nil {
			resp.Body.Close()
		}
		switch {
		case neg && err != nil:
			return
		case !neg && err == nil && resp.StatusCode == http.StatusOK:
			return
		}
		if time.Now().After(deadline) {
			if neg {
				ts.Fatalf("! wait-http %s: still answers after %s (%s)", args[0], limit, resp.Status)
			}
			ts.Fatalf("wait-http %s: not up after %s (%v)", args[0], limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// HTTP: http [-H NAME:VALUE]... GET URL | POST URL FILE sends a request
// and writes the response to stdout: the status line, then the body. It
// fails on a status other than 200 unless negated (! http ...).
func HTTP(ts *testscript.TestScript, neg bool, args []string) {
	header := http.Header{}
	for len(args) >= 2 && args[0] == "-H" {
		name, value, ok := strings.Cut(args[1], ":")
		if !ok {
			ts.Fatalf("http: -H %q: want NAME:VALUE", args[1])
		}
		header.Add(name, strings.TrimSpace(value))
		args = args[2:]
	}
	var body io.Reader
	switch {
	case len(args) == 2 && args[0] == "GET":
	case len(args) == 3 && args[0] == "POST":
		body = strings.NewReader(ts.ReadFile(args[2]))
		header.Set("Content-Type", "application/json")
	default:
		ts.Fatalf("usage: [!] http [-H NAME:VALUE]... GET URL | POST URL FILE")
	}
	req, err := http.NewRequest(args[0], args[1], body)
	ts.Check(err)
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%s\n%s", resp.Status, b)
	if ok := resp.StatusCode == http.StatusOK; ok == neg {
		ts.Fatalf("http %s %s: %s", args[0], args[1], resp.Status)
	}
}
