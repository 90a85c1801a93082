package compiler

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The harness step's statement puts the judge's address, from the job's
// environment, into the run_config the image reads; the judge's key goes
// by name only.
func TestServiceRefStepsFillAddress(t *testing.T) {
	s := loadRecipe(t, `services:
  model: {type: vllm, model: org/m, node_pool: gpu}
  judge: {type: vllm, model: org/j, node_pool: judge}
benchmarks:
  - name: "container://nvcr.io/nvidia/eval-factory/simple-evals:26.03#AIME_2025"
    params: {extra: {judge: {url: "http://$${NEL_SERVICE_JUDGE_HOST}:8001/v1/chat/completions", api_key: NEL_SERVICE_JUDGE_API_KEY}}}
    solver: {type: container, service: model}
cluster:
  type: slurm
  walltime: "01:00:00"
  eval_pool: gpu
  node_pools:
    gpu: {nodes: 1}
    judge: {nodes: 1}
`)
	if errs := Unsupported(s); len(errs) > 0 {
		t.Fatalf("unsupported: %v", errs)
	}
	stmts, names := serviceRefSteps(s.Recipe, s.Recipe.Benchmarks[0])
	if len(stmts) != 1 || strings.Join(names, ",") != "NEL_SERVICE_JUDGE_API_KEY" {
		t.Fatalf("statements %q, names %q; want one statement and the judge's key", stmts, names)
	}
	dir := t.TempDir()
	cfg := `{"url": "http://${NEL_SERVICE_JUDGE_HOST}:8001/v1/chat/completions", "model": "${NEL_HARNESS_URL}"}`
	if err := os.WriteFile(filepath.Join(dir, harnessConfigFile), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", "nel_fail() { echo \"$*\" >&2; exit 1; }\nnel_hdir="+dir+"\n"+stmts[0])
	cmd.Env = append(os.Environ(), "NEL_SERVICE_JUDGE_HOST=10.1.2.3")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := strings.TrimSpace(readFile(t, filepath.Join(dir, harnessConfigFile)))
	want := `{"url": "http://10.1.2.3:8001/v1/chat/completions", "model": "${NEL_HARNESS_URL}"}`
	if got != want {
		t.Errorf("run_config = %s\nwant %s", got, want)
	}
}
