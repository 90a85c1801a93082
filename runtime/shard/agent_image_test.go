package shard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/plan"
)

// TestTaskImage: a container sandbox runs a Harbor task's session in the
// task's own image (its docker_image, else its Dockerfile's FROM), named
// as the engine pulls it; the local sandbox takes none; a Dockerfile that
// builds is the sample's sandbox failure, with its line.
func TestTaskImage(t *testing.T) {
	dir := t.TempDir()
	write := func(dockerfile string) *harbor.Task {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "environment"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "environment", "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
			t.Fatal(err)
		}
		return &harbor.Task{Name: "fix-git", Dir: dir}
	}
	plain := write("FROM ghcr.io/org/tb-base:1.2\nWORKDIR /app\nCOPY . /app\n")
	for _, c := range []struct{ sandbox, want string }{
		{"local", ""},
		{"docker", "ghcr.io/org/tb-base:1.2"},
		{"apptainer", "docker://ghcr.io/org/tb-base:1.2"},
	} {
		if got, err := taskImage(c.sandbox, plain); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.sandbox, got, err, c.want)
		}
	}
	bare := &harbor.Task{Name: "y", Dir: t.TempDir()}
	if got, err := taskImage("docker", bare); err != nil || got != "" {
		t.Errorf("a task without an environment image: %q, %v; want the sandbox's (\"\")", got, err)
	}
	named := &harbor.Task{Name: "x", Dir: t.TempDir(), Config: harbor.Config{DockerImage: "docker://reg.example/env:3"}}
	if got, err := taskImage("apptainer", named); err != nil || got != "docker://reg.example/env:3" {
		t.Errorf("docker_image with a scheme: %q, %v", got, err)
	}
	built := write("FROM python:3.12\nRUN pip install numpy\n")
	if _, err := taskImage("local", built); err != nil {
		t.Errorf("the local sandbox reads no Dockerfile: %v", err)
	}
	if _, err := taskImage("docker", built); err == nil || !strings.Contains(err.Error(), "task fix-git: environment/Dockerfile: line 2: not supported yet: building a task image") {
		t.Errorf("a Dockerfile that builds: %v", err)
	}
}

// TestBuildsImages: the sandboxes that build a task's Dockerfile on the
// shard's node (sampleTask gives them the build context): docker, and
// apptainer but not an apptainer pool, whose servers take an image.
func TestBuildsImages(t *testing.T) {
	for _, c := range []struct {
		sb   plan.Sandbox
		want bool
	}{
		{plan.Sandbox{Type: "docker"}, true},
		{plan.Sandbox{Type: "apptainer"}, true},
		{plan.Sandbox{Type: "apptainer", Pool: true}, false},
		{plan.Sandbox{Type: "ecs_fargate"}, false},
		{plan.Sandbox{Type: "slurm"}, false},
		{plan.Sandbox{Type: "local"}, false},
	} {
		if got := buildsImages(&c.sb); got != c.want {
			t.Errorf("%+v: %v, want %v", c.sb, got, c.want)
		}
	}
}
