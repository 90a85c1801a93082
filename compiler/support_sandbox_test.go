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
    slots_per_node: 2
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
	got := Unsupported(s).Error() // one error a line
	want := []string{
		"r.yaml:7:21: sandboxes.agentic.image_template: not supported yet: image_template outside byob tasks (it is filled from a record's fields: a byob benchmark with a verifier, run by the tool_calling solver; a Harbor task names its own image)",
		"r.yaml:8:18: sandboxes.agentic.capture_cmd: not supported yet: capture_cmd (a lifecycle option of NeMo Evaluator's agentic sandboxes, which nel's agent solvers do not apply yet)",
		"r.yaml:9:15: sandboxes.agentic.stateful: not supported yet: stateful sandboxes (a lifecycle option of NeMo Evaluator's agentic sandboxes, which nel's agent solvers do not apply yet)",
		"r.yaml:10:24: sandboxes.agentic.scrub_git_history: not supported yet: scrub_git_history (a lifecycle option of NeMo Evaluator's agentic sandboxes, which nel's agent solvers do not apply yet)",
		"r.yaml:11:21: sandboxes.agentic.verify_timeout: not supported yet: verify_timeout (a lifecycle option of NeMo Evaluator's agentic sandboxes, which nel's agent solvers do not apply yet)",
		"r.yaml:16:21: sandboxes.sif.slots_per_node: not supported yet: slots_per_node on an apptainer sandbox (it sizes a pool of sandbox nodes; nel-run runs apptainer on the shards' nodes, concurrency jobs at a time)",
	}
	if w := strings.Join(want, "\n"); got != w {
		t.Errorf("got\n%s\nwant\n%s", got, w)
	}
}

// TestUnsupportedEnvRefs: environment values that keep their ${VAR} are
// refused where nothing would resolve it: a sandbox's container_env, a
// reference inside longer text, a local cluster's container_env.
func TestUnsupportedEnvRefs(t *testing.T) {
	l := newTestLoader(t)
	for _, c := range []struct{ src, want string }{
		{`services: m: {type: "api", url: "http://127.0.0.1:8000/v1", model: "m"}
sandboxes: s: {type: "docker", image: "python:3.12-slim", container_env: {TOKEN: "${HF_TOKEN}"}}
benchmarks: [{name: "humaneval", solver: {type: "simple", service: "m"}, sandbox: "s"}]
`, `r.cue:2:82: sandboxes.s.container_env.TOKEN: not supported yet: ${VAR} in a sandbox's container_env (nel-run gives the sandbox the text as written)`},
		{`services: m: {type: "api", url: "http://127.0.0.1:8000/v1", model: "m"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "m"}}]
cluster: {type: "slurm", node_pools: p: {}, container_env: {P: "/x/${USER}"}}
`, `r.cue:3:64: cluster.container_env.P: not supported yet: ${VAR} inside a longer value (write the whole value as ${VAR})`},
		{`services: m: {type: "api", url: "http://127.0.0.1:8000/v1", model: "m"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "m"}}]
cluster: {type: "local", container_env: {P: "x"}}
`, `r.cue:3:26: cluster.container_env: not supported yet: container_env on a local cluster (nel run does not set it; export the variables before nel run)`},
	} {
		s, err := l.Load("r.cue", []byte(c.src), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := Unsupported(s).Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// A slurm pool runs every session in its own image, so a record's image
// (image_template) would be ignored there: refused, even on byob tasks.
func TestImageTemplateOnSlurmPool(t *testing.T) {
	l := newTestLoader(t)
	s, err := l.Load("r.cue", []byte(`services: m: {type: "api", url: "http://127.0.0.1:8000/v1", model: "m"}
sandboxes: pool: {type: "slurm", image: "python:3.12-slim", image_template: "repo/{task}:latest", node_pool: "sbx"}
benchmarks: [{name: "humaneval", solver: {type: "simple", service: "m"}, sandbox: "pool"}]
cluster: {type: "slurm", node_pools: {eval: {partition: "cpu", nodes: 1}, sbx: {partition: "cpu", nodes: 1}}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `r.cue:2:77: sandboxes.pool.image_template: not supported yet: image_template on a slurm sandbox pool (its server is a Pyxis container that starts no other per session: every session runs in the pool's image; use an apptainer pool, whose sessions run each record's image)`
	if got := Unsupported(s).Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
