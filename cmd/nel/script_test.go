package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"nel": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// fakeNelRun is the nel-run the scripts compile against: fixed content, so
// the sha256 in compiled jobs, and so the output, is stable.
const fakeNelRun = "#!/bin/sh\necho fake\n"

// TestScript runs testdata/script/*.txtar. Each script sees $EXAMPLES (the
// repository's examples/) and $NEL_RUN (a fake nel-run in $WORK).
func TestScript(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			nelRun := filepath.Join(e.WorkDir, "nel-run")
			if err := os.WriteFile(nelRun, []byte(fakeNelRun), 0o755); err != nil {
				return err
			}
			e.Setenv("EXAMPLES", examples)
			e.Setenv("NEL_RUN", nelRun)
			return nil
		},
	})
}
