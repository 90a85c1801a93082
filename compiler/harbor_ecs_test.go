package compiler

import (
	"path/filepath"
	"strings"
	"testing"
)

// Harbor tasks in an ecs_fargate sandbox compile: each sample is a
// session in a task of its own (runtime/sandbox/ecs_session.go), run
// from the task's image; a task whose Dockerfile builds is refused as
// for docker, since nel builds no image for Fargate either.
func TestHarborECSSessions(t *testing.T) {
	path := harborDir(t, "")
	dir := filepath.Dir(path)
	ecs := strings.Replace(strings.Replace(harborRecipe, "SOLVER", "", 1), `sandbox: {type: "local"}`,
		`sandbox: {type: "ecs_fargate", cluster: "evals", subnets: ["subnet-1"], image: "python:3.12-slim", nel_run_image: "registry.example.org/nel:1"}`, 1)
	writeFiles(t, dir, map[string]string{"r.cue": ecs})
	s, _, err := loadWithEnv(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Unsupported(s); len(got) != 0 {
		t.Errorf("ecs_fargate sandbox: refusals %v, want none", got)
	}
	writeFiles(t, filepath.Join(dir, "harbor_datasets", "nel-smoke", "sort-names", "environment"), map[string]string{
		"Dockerfile": "FROM python:3.12-slim\nRUN pip install pytest\n",
	})
	if s, _, err = loadWithEnv(t, path, nil); err != nil {
		t.Fatal(err)
	}
	got := Unsupported(s)
	if len(got) != 1 || !strings.Contains(got[0].Error(), "benchmarks[0].sandbox: not supported yet: a task image nel cannot pull by name for an ecs_fargate session (task sort-names: environment/Dockerfile: line 2") {
		t.Errorf("a Dockerfile that builds: refusals %v", got)
	}
}

// A slurm pool's sessions run in the pool's image (its server is a Pyxis
// container that starts no other), so tasks made for another image are
// refused rather than verified in the wrong one; tasks made for the pool's
// image compile.
func TestHarborSlurmPoolTaskImages(t *testing.T) {
	path := harborDir(t, "")
	dir := filepath.Dir(path)
	pool := func(image string) string {
		r := strings.Replace(strings.Replace(harborRecipe, "SOLVER", "", 1), `sandbox: {type: "local"}`, `sandbox: "pool"`, 1)
		return r + `
sandboxes: pool: {type: "slurm", image: "` + image + `", node_pool: "sbx"}
cluster: {type: "slurm", node_pools: {eval: {partition: "cpu", nodes: 1}, sbx: {partition: "cpu", nodes: 1}}}
`
	}
	writeFiles(t, dir, map[string]string{"r.cue": pool("python:3.12-slim")})
	s, _, err := loadWithEnv(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Unsupported(s); len(got) != 0 {
		t.Errorf("the pool's own image: refusals %v, want none", got)
	}
	writeFiles(t, dir, map[string]string{"r.cue": pool("python:3.11")})
	if s, _, err = loadWithEnv(t, path, nil); err != nil {
		t.Fatal(err)
	}
	got := Unsupported(s)
	if len(got) != 1 || !strings.Contains(got[0].Error(), `benchmarks[0].sandbox: not supported yet: a task image nel cannot pull by name for a slurm session (task `) ||
		!strings.Contains(got[0].Error(), ` runs in python:3.12-slim, and a slurm pool's sessions run in the pool's image "python:3.11"`) {
		t.Errorf("tasks for another image than the pool's: refusals %v", got)
	}
	// An apptainer pool's servers run each task's image, and build none:
	// a Dockerfile that builds is refused there, though the apptainer
	// sandbox on the shard's node builds it.
	writeFiles(t, filepath.Join(dir, "harbor_datasets", "nel-smoke", "sort-names", "environment"), map[string]string{
		"Dockerfile": "FROM python:3.12-slim\nRUN pip install pytest\n",
	})
	r := strings.Replace(pool("x"), `{type: "slurm", image: "x", node_pool: "sbx"}`, `{type: "apptainer", node_pool: "sbx", sif_cache_dir: "/shared/sif"}`, 1)
	writeFiles(t, dir, map[string]string{"r.cue": r})
	if s, _, err = loadWithEnv(t, path, nil); err != nil {
		t.Fatal(err)
	}
	got = Unsupported(s)
	if len(got) != 1 || !strings.Contains(got[0].Error(), `a task image nel cannot pull by name for an apptainer session (task sort-names: environment/Dockerfile: line 2: not supported yet: building a task image (RUN pip install pytest`) {
		t.Errorf("an apptainer pool, a Dockerfile that builds: refusals %v", got)
	}
}
