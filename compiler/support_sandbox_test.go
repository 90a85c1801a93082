package compiler

import (
	"strings"
	"testing"
)

// TestUnsupportedSandboxFields: NeMo Evaluator's sandbox fields validate;
// those nel-run cannot honour are each refused at compile, where they are.
func TestUnsupportedSandboxFields(t *testing.T) {
	l := newTestLoader(t)
	s, err := l.Load("r.yaml", []byte(`services:
  m: {type: api, url: "http://127.0.0.1:8000/v1", model: m}
sandboxes:
  agentic:
    type: docker
    image: python:3.12-slim
    image_template: "repo/{task}:latest"
    capture_cmd: git diff
    stateful: true
    scrub_git_history: true
    verify_timeout: 60
  sif:
    type: apptainer
    image: docker://python:3.12-slim
    sif_cache_dir: /shared/sif
benchmarks:
  - name: humaneval
    solver: {type: simple, service: m}
    sandbox: agentic
  - name: humaneval
    solver: {type: simple, service: m}
    sandbox: sif
  - name: gsm8k
    solver: {type: simple, service: m}
    sandbox: {type: none}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range Unsupported(s) {
		got = append(got, e.Error())
	}
	want := []string{
		"r.yaml:7:21: sandboxes.agentic.image_template: not supported yet: image_template (it belongs to agentic benchmarks, which nel does not run yet)",
		"r.yaml:8:18: sandboxes.agentic.capture_cmd: not supported yet: capture_cmd (it belongs to agentic benchmarks, which nel does not run yet)",
		"r.yaml:9:15: sandboxes.agentic.stateful: not supported yet: stateful sandboxes (it belongs to agentic benchmarks, which nel does not run yet)",
		"r.yaml:10:24: sandboxes.agentic.scrub_git_history: not supported yet: scrub_git_history (it belongs to agentic benchmarks, which nel does not run yet)",
		"r.yaml:11:21: sandboxes.agentic.verify_timeout: not supported yet: verify_timeout (it belongs to agentic benchmarks, which nel does not run yet)",
		"r.yaml:15:20: sandboxes.sif.sif_cache_dir: not supported yet: sif_cache_dir (nel-run's apptainer keeps images in its own cache, $APPTAINER_CACHEDIR)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
