package main

import (
	"flag"
	"io"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nel-eval/nel/internal/cli/clidoc"
	"github.com/nel-eval/nel/internal/scripttest"
	"github.com/rogpeppe/go-internal/testscript"
)

// update rewrites the golden files of the scripts (the files cmp compares
// stdout and stderr with) and docs/cli's nel-run pages, from what the
// commands print now: go test ./cmd/nel-run -update.
var update = flag.Bool("update", false, "rewrite the scripts' golden files and docs/cli/nel-run*.md")

// TestScript runs testdata/script/*.txtar: nel-run as a user (or a
// compiled job) runs it. Each script sees $PORT, a free port for a
// simulated endpoint, $PORT2 another, and NEL_RUN_LOG=warn, so that what nel-run prints is
// the same on every run and cmp can hold it to a golden file.
func TestScript(t *testing.T) {
	var ports scripttest.Ports
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(e *testscript.Env) error {
			port, err := ports.Free()
			if err != nil {
				return err
			}
			e.Setenv("PORT", strconv.Itoa(port))
			// A second server (nel-run proxy in front of the simulator).
			if port, err = ports.Free(); err != nil {
				return err
			}
			e.Setenv("PORT2", strconv.Itoa(port))
			e.Setenv("NEL_RUN_LOG", "warn")
			return nil
		},
		Cmds: scripttest.Commands(),
	})
}

// TestCLIReference: docs/cli/ holds exactly the nel-run pages the commands
// generate (make docs rewrites them).
func TestCLIReference(t *testing.T) {
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
	clidoc.Test(t, root, filepath.Join("..", "..", "docs", "cli"), *update)
}
