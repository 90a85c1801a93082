package local

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/compiler"
)

// TestContainerArgv: docker when it is installed, else apptainer, else
// singularity, else a
// refusal that says why; values never on the command line; a docker
// container named, so that a stopped run can kill it.
func TestContainerArgv(t *testing.T) {
	lh := compiler.LocalHarness{Inside: "/nel-harness", Mounts: []string{"/data:/data"}}
	env := map[string]string{"NEL_HARNESS_URL": "http://localhost:8000/v1", "NEL_HARNESS_API_KEY": "secret"}
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	if _, err := containerArgv("img:1", "/out/h", lh, env, "nel-harness-1"); err == nil || !strings.Contains(err.Error(), "neither docker nor apptainer (or singularity) is installed") {
		t.Errorf("no engine: err = %v", err)
	}
	fake := func(name string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake("singularity")
	argv, err := containerArgv("img:1", "/out/h", lh, env, "nel-harness-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(bin, "singularity"), "exec", "--bind", "/out/h:/nel-harness,/data:/data", "docker://img:1"}; !slices.Equal(argv, want) {
		t.Errorf("singularity argv %q, want %q", argv, want)
	}
	fake("apptainer") // preferred to singularity when both are installed
	argv, err = containerArgv("img:1", "/out/h", lh, env, "nel-harness-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(bin, "apptainer"), "exec", "--bind", "/out/h:/nel-harness,/data:/data", "docker://img:1"}; !slices.Equal(argv, want) {
		t.Errorf("apptainer argv %q, want %q", argv, want)
	}
	fake("docker")
	argv, err = containerArgv("img:1", "/out/h", lh, env, "nel-harness-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(bin, "docker"), "run", "--rm", "--name", "nel-harness-1", "--network", "host", "-v", "/out/h:/nel-harness", "-v", "/data:/data",
		"-e", "NEL_HARNESS_API_KEY", "-e", "NEL_HARNESS_URL", "img:1"}
	if !slices.Equal(argv, want) {
		t.Errorf("docker argv %q, want %q", argv, want)
	}
}
