// Package testenv decides what a test does when a real part it needs is
// missing from the machine: bubblewrap for the local sandbox, headless
// Chromium for the HTML report, the DuckDB reader for Parquet, shellcheck
// for compiled scripts, pdflatex for the LaTeX report, python3 for the
// programs the sandbox runs, docker for the docker sandbox.
//
// `make test` installs these parts first (.ci/testdeps), so on a machine
// where it could install them nothing is missing. Where it could not (no
// root, no sudo), a test that needs a missing part skips with the part's
// name and how to get it, and the test summary lists every skip at the end
// of the run. When CI is set, or NEL_REQUIRE_ALL=1, a missing part fails
// the test instead: a green run there means every real part was exercised.
//
// Engines a machine cannot be given by a package install are not parts in
// this sense: tests that need them skip with a plain t.Skip, and the
// summary lists those too. Apptainer is a part: .ci/testdeps builds
// SingularityCE, its sibling, from the Go module proxy (apptainer.go).
// A docker daemon is an engine where
// none answers and this process is not root (or dockerd will not start):
// as root, Docker (docker.go) starts a private daemon from docker.io's
// dockerd, whose CLI and base image's busybox-static and bash-static are
// parts.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Strict reports whether a missing part fails tests rather than skipping
// them: NEL_REQUIRE_ALL=1, or CI set to anything but "", "0" or "false"
// (CI systems set CI=true).
func Strict() bool {
	if os.Getenv("NEL_REQUIRE_ALL") == "1" {
		return true
	}
	ci := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return ci != "" && ci != "0" && ci != "false"
}

// Missing ends the test because part is missing (why says how we know):
// it fails under Strict, and skips otherwise. The message names the part
// and how to get it; `make testdeps` installs every part.
func Missing(tb testing.TB, part, why string) {
	tb.Helper()
	msg := MissingMessage(part, why)
	if Strict() {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// MissingMessage is what Missing says, for callers that report the
// missing part themselves (a testscript condition).
func MissingMessage(part, why string) string {
	msg := "needs " + part
	if why != "" {
		msg += " (" + why + ")"
	}
	msg += "; `make testdeps` installs it"
	if Strict() {
		msg += "; CI or NEL_REQUIRE_ALL=1 is set, so a missing part is a failure, not a skip"
	}
	return msg
}

// Tool is an executable a test needs, with the Debian package that
// provides it.
type Tool struct {
	Name    string // looked up on PATH
	Package string // Debian package, for the message
}

// The tools of the real parts. .ci/testdeps installs the same packages.
var (
	Shellcheck = Tool{"shellcheck", "shellcheck"}
	HAProxy    = Tool{"haproxy", "haproxy"}
	Pdflatex   = Tool{"pdflatex", "texlive-latex-base"}
	Python3    = Tool{"python3", "python3"}
	Node       = Tool{"node", "nodejs"}
)

// LookPath returns the path of t's executable, or ends the test through
// Missing.
func LookPath(tb testing.TB, t Tool) string {
	tb.Helper()
	p, err := exec.LookPath(t.Name)
	if err != nil {
		Missing(tb, t.Name+" (Debian package "+t.Package+")", t.Name+" is not on PATH")
	}
	return p
}

// LocalSandbox names the local sandbox's parts, for Missing when
// sandbox.Open says the local engine is unavailable.
const LocalSandbox = "the local sandbox (bwrap from Debian's bubblewrap, prlimit from util-linux, and user namespaces)"

// Root returns the project root (FindRoot), failing the test when there
// is none.
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := FindRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// FindRoot returns the project root: the nearest directory above the
// working directory that holds go.mod.
func FindRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("project root (go.mod) not found above the working directory")
		}
		dir = parent
	}
}

// DuckDBReader returns testdata/duckdb, where read.mjs reads Parquet
// files with the pinned @duckdb/node-api, or ends the test through
// Missing when node or the npm package is not there.
func DuckDBReader(tb testing.TB) string {
	tb.Helper()
	LookPath(tb, Node)
	dir := filepath.Join(Root(tb), "testdata", "duckdb")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api", "package.json")); err != nil {
		Missing(tb, "the DuckDB reader (npm ci --prefix testdata/duckdb)", "testdata/duckdb/node_modules/@duckdb/node-api is not installed")
	}
	return dir
}

// Chromium returns headless Chromium: $NEL_CHROMIUM when set, else the
// first of chromium, chromium-browser, google-chrome-stable and
// google-chrome on PATH; or it ends the test through Missing.
func Chromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("NEL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(tb, "headless Chromium (Debian package chromium, or NEL_CHROMIUM=/path/to/chrome)", "no chromium or google-chrome on PATH")
	return ""
}

// DuckDBRead runs testdata/duckdb/read.mjs on Parquet files and returns
// what it prints (a JSON object per file), failing the test when DuckDB
// cannot read them; it ends the test through Missing when the reader is
// not installed.
func DuckDBRead(tb testing.TB, files ...string) []byte {
	tb.Helper()
	dir := DuckDBReader(tb)
	return runNode(tb, dir, "read.mjs", append([]string{filepath.Join(dir, "read.mjs")}, files...)...)
}

// DuckDBQuery runs one SQL statement with the DuckDB reader in dir (so
// relative paths in it resolve there, as for a user in that directory)
// and returns the rows, each a column → value map (BIGINTs as decimal
// strings). It fails the test when DuckDB rejects the statement.
func DuckDBQuery(tb testing.TB, dir, sql string) []map[string]any {
	tb.Helper()
	// node resolves @duckdb/node-api from the script's own folder.
	out := runNode(tb, dir, fmt.Sprintf("DuckDB %q", sql), filepath.Join(DuckDBReader(tb), "query.mjs"), sql)
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		tb.Fatalf("DuckDB %q: decode %q: %v", sql, out, err)
	}
	return rows
}

// runNode runs node with args in dir and returns its stdout, failing the
// test (as what, with node's stderr) when it fails or takes two minutes.
func runNode(tb testing.TB, dir, what string, args ...string) []byte {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", what, err, stderr.String())
	}
	return out
}
