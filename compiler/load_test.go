package compiler

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// loadExamples lists every recipe under examples/, recursively, less the
// run folders `make example` writes there (eval_results/, ignored by git:
// each holds a copy of its recipe, without the data beside it).
func loadExamples(t testing.TB) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join("..", "examples"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "eval_results" {
			return filepath.SkipDir
		}
		switch filepath.Ext(path) {
		case ".cue", ".yaml", ".yml":
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recipes under ../examples")
	}
	return files
}

func newTestLoader(t testing.TB) *Loader {
	t.Helper()
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestExamplesLoad(t *testing.T) {
	l := newTestLoader(t)
	for _, f := range loadExamples(t) {
		t.Run(filepath.ToSlash(strings.TrimPrefix(f, ".."+string(filepath.Separator))), func(t *testing.T) {
			if _, err := l.LoadFile(f, nil); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
}

// loadJSON is the recipe's validated value as JSON with sorted keys.
func loadJSON(t *testing.T, l *Loader, path string) string {
	t.Helper()
	s, err := l.LoadFile(path, nil)
	if err != nil {
		t.Fatalf("%v", err)
	}
	raw, err := json.Marshal(s.Value)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(x, "", "  ") // maps marshal with sorted keys
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Each CUE example with a YAML twin describes the same data: key order,
// comments, hidden fields and how CUE computed a value do not show.
func TestTwinsSameValue(t *testing.T) {
	l := newTestLoader(t)
	twins, err := filepath.Glob(filepath.Join("..", "examples", "yaml", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gsm8k_chat", "mmlu_completions", "simpleqa_judge", "slurm_vllm"} {
		if !slices.Contains(twins, filepath.Join("..", "examples", "yaml", name+".yaml")) {
			t.Errorf("examples/yaml/%s.yaml is missing", name)
		}
	}
	for _, y := range twins {
		name := strings.TrimSuffix(filepath.Base(y), ".yaml")
		t.Run(name, func(t *testing.T) {
			c := filepath.Join("..", "examples", name+".cue")
			cj, yj := loadJSON(t, l, c), loadJSON(t, l, y)
			if cj != yj {
				t.Errorf("%s and %s differ:\n--- cue\n%s\n--- yaml\n%s", c, y, cj, yj)
			}
		})
	}
}

// Building blocks for the bad-input table.
const (
	ltAPI = `services:
  m:
    type: api
    url: https://integrate.api.nvidia.com/v1/chat/completions
    model: nvidia/nemotron-3-super-120b-a12b
`
	ltGSM8K = `benchmarks:
  - name: gsm8k
    solver: {type: simple, service: m}
`
	ltCUEAPI = `services: m: {
	type: "api"
	url:  "https://integrate.api.nvidia.com/v1/chat/completions"
}
`
	ltCUEGSM8K = `benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "m"}}]
`
	ltSlurm = `services:
  m:
    type: vllm
    model: nvidia/Llama-3.1-70B-Instruct
    node_pool: compute
    tensor_parallel_size: 4
benchmarks:
  - name: gsm8k
    max_problems: 50
    solver: {type: simple, service: m}
cluster:
  type: slurm
  node_pools:
    compute:
      partition: batch
      gres: "gpu:4"
`
)

type loadCase struct {
	name      string
	file      string
	src       string
	overrides []string
	want      []string // substrings of the error text, each on its own line; none: valid
}

func tooManyBenchmarks() string {
	var b strings.Builder
	b.WriteString(ltAPI + "benchmarks:\n")
	for range 10001 {
		b.WriteString("  - {name: gsm8k, solver: {type: simple, service: m}}\n")
	}
	return b.String()
}

var loadCases = []loadCase{
	// Syntax.
	{name: "yaml malformed", file: "r.yaml", src: "services:\n  m:\n    type: api\n   url: https://x\n",
		want: []string{"r.yaml:2:1: invalid syntax: did not find expected key (in the mapping that starts on this line: is a line below it indented differently from its siblings?)"}},
	{name: "yaml tab", file: "r.yaml", src: "services:\n\tm:\n    type: api\n",
		want: []string{"r.yaml:2:1: invalid syntax: found character that cannot start any token (a tab: YAML indents with spaces only)"}},
	{name: "yaml unclosed flow", file: "r.yaml", src: ltAPI + "benchmarks: [{name: gsm8k}\n",
		want: []string{"r.yaml:6:1: invalid syntax: did not find expected ',' or ']'"}},
	{name: "cue malformed", file: "r.cue", src: "services: m: {\n\ttype: \"api\"\n\turl:  \"https://x\"\nbenchmarks: []\n",
		want: []string{"r.cue:4:16: invalid syntax: expected '}', found 'EOF'"}},
	{name: "cue missing comma", file: "r.cue", src: "services: m: {type: \"api\" url: \"https://x\"}\n",
		want: []string{"r.cue:1:27: invalid syntax: missing ',' in struct literal"}},
	{name: "cue import", file: "r.cue", src: "import \"strings\"\n\n" + ltCUEAPI + ltCUEGSM8K,
		want: []string{"r.cue:1:8: imports are not supported in recipes"}},

	// A process service on a SLURM node pool has no num_nodes or
	// parallelism: it takes one node, and the pool checks must not divide
	// by its zero num_nodes (they did, and the loader reported a panic).
	{name: "process service on a node pool", file: "r.cue", src: `services: sim: {type: "process", command: ["srv"], port: 8000, model: "m", node_pool: "gpu"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "sim"}}]
cluster: {type: "slurm", node_pools: {gpu: {nodes: 1, gres: "gpu:1"}, cpu: {nodes: 2}}, eval_pool: "cpu"}
`},

	// Files in another format: one line that says which formats nel reads.
	{name: "launcher v1 config missing value", file: "r.yaml", src: "defaults:\n  - execution: local\n  - _self_\nexecution:\n  output_dir: out\ntarget:\n  api_endpoint:\n    url: ???\n    model_id: m\nevaluation:\n  tasks: [{name: gsm8k}]\n",
		want: []string{"r.yaml:8:10: target.api_endpoint.url: missing mandatory value (???): set it in the config or with -O target.api_endpoint.url=VALUE"}},
	{name: "launcher sections in cue", file: "r.cue", src: "deployment: type: \"none\"\nevaluation: tasks: []\n",
		want: []string{"r.cue:1:1: a NeMo Evaluator launcher (v1) config is YAML: write it as a .yaml file"}},
	{name: "unknown yaml", file: "r.yaml", src: "_vars: 1\nmodel: m\nprompts:\n  - hi\n",
		want: []string{"r.yaml:2:1: not a recipe: none of its top-level keys (model, prompts) is a recipe's; nel reads a nel recipe (services, benchmarks, and optionally sandboxes, cluster, output), a NeMo Evaluator config (the same sections, composed with defaults: [group/name], _base_ and playbooks) or a NeMo Evaluator launcher (v1) config"}},
	// One recipe section is enough to be a recipe: the other keys are
	// misspellings, named one by one.
	{name: "recipe with a launcher key", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: m}\ntarget: x\n",
		want: []string{`r.yaml:9:1: target: unknown field "target"`}},

	// A misspelt scorer or metric name: the closest one is suggested.
	{name: "scorer name did you mean", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: m}\n    scoring: {metrics: [{type: scorer, name: numeric_matc}]}\n",
		want: []string{`r.yaml:9:46: benchmarks[0].scoring.metrics[0].name: expected one of "answer_line", "exact_match", "fuzzy_match", "mcq_extract", "mcq_robust", "multichoice_regex", "numeric_match", found "numeric_matc" (did you mean "numeric_match"?)`}},
	{name: "primary did you mean", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: m}\n    scoring: {metrics: [{type: scorer, name: numeric_match}, {type: scorer, name: exact_match}], primary: exact_mach}\n",
		want: []string{`r.yaml:9:107: benchmarks[0].scoring.primary: primary must name one of the metrics, found "exact_mach" (did you mean "exact_match"?)`}},

	// Keys and types.
	{name: "unknown key did you mean", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    max_problem: 5\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:8:5: benchmarks[0].max_problem: unknown field "max_problem" (did you mean "max_problems"?)`}},
	{name: "unknown top-level key", file: "r.cue", src: ltCUEAPI + ltCUEGSM8K + "outputs: dir: \"x\"\n",
		want: []string{`r.cue:6:1: outputs: unknown field "outputs" (did you mean "output"?)`}},
	{name: "unknown section beside another error", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    repeats: 0\n    solver: {type: simple, service: m}\nclustr:\n  type: slurm\n",
		want: []string{"r.yaml:8:14: benchmarks[0].repeats: expected >=1, found 0", `r.yaml:10:1: clustr: unknown field "clustr" (did you mean "cluster"?)`}},
	{name: "unknown scalar beside another error", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    repeats: 0\n    solver: {type: simple, service: m}\nclustr: local\n",
		want: []string{"r.yaml:8:14: benchmarks[0].repeats: expected >=1, found 0", `r.yaml:10:1: clustr: unknown field "clustr" (did you mean "cluster"?)`}},
	{name: "unknown keys list only schema fields", file: "r.yaml", src: strings.Replace(ltSlurm, `      gres: "gpu:4"`, `      gres: "gpu:4"`+"\n      gress: 1\n      cpus: 2", 1),
		want: []string{`r.yaml:17:7: cluster.node_pools.compute.gress: unknown field "gress" (did you mean "gres"?)`,
			`r.yaml:18:7: cluster.node_pools.compute.cpus: unknown field "cpus"; expected one of: gpus_per_node, gres, nodes, ntasks_per_node, partition, sbatch_extra_flags`}},
	{name: "wrong type", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    repeats: two\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:8:14: benchmarks[0].repeats: expected int, found "two"`}},
	{name: "wrong type list", file: "r.cue", src: ltCUEAPI + "benchmarks: \"gsm8k\"\n",
		want: []string{`r.cue:5:13: benchmarks: expected a list, found "gsm8k"`}},
	{name: "wrong type mapping", file: "r.cue", src: ltCUEAPI + ltCUEGSM8K + "cluster: \"slurm\"\n",
		want: []string{`r.cue:6:10: cluster: expected a mapping, found "slurm"`}},
	{name: "out of range", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    repeats: 0\n    solver: {type: simple, service: m}\n",
		want: []string{"r.yaml:8:14: benchmarks[0].repeats: expected >=1, found 0"}},
	{name: "out of range float", file: "r.yaml", src: ltAPI + "    generation: {temperature: 3.5}\n" + ltGSM8K,
		want: []string{"r.yaml:6:31: services.m.generation.temperature: expected <=2, found 3.5"}},
	{name: "out of range port", file: "r.cue", src: "services: m: {type: \"vllm\", model: \"x\", port: 70000}\n" + ltCUEGSM8K,
		want: []string{"r.cue:1:47: services.m.port: expected <=65535, found 70000"}},
	{name: "bad enum in list", file: "r.cue", src: ltCUEAPI + ltCUEGSM8K + "output: report: [\"markdown\", \"pdf\"]\n",
		want: []string{`r.cue:6:30: output.report[1]: expected one of "csv", "html", "json", "latex", "markdown", found "pdf"`}},
	{name: "bad url", file: "r.yaml", src: "services:\n  m: {type: api, url: ftp://x}\n" + ltGSM8K,
		want: []string{`r.yaml:2:23: services.m.url: expected an http:// or https:// URL, found "ftp://x"`}},
	{name: "missing required field", file: "r.yaml", src: ltAPI + "benchmarks:\n  - solver: {type: simple, service: m}\n",
		want: []string{"r.yaml:7:5: benchmarks[0].name: missing required field"}},
	{name: "missing url", file: "r.yaml", src: "services:\n  m:\n    type: api\n" + ltGSM8K,
		want: []string{"r.yaml:2:3: services.m.url: missing required field"}},
	{name: "missing benchmarks", file: "r.yaml", src: ltAPI,
		want: []string{"r.yaml:1:1: benchmarks: missing required field"}},
	{name: "missing union type", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {service: m}\n",
		want: []string{"r.yaml:8:5: benchmarks[0].solver.type: missing required field"}},
	{name: "empty benchmark list", file: "r.cue", src: ltCUEAPI + "benchmarks: []\n",
		want: []string{"r.cue:5:13: benchmarks: expected at least 1 entry, found 0"}},
	{name: "unknown service type", file: "r.yaml", src: "services:\n  m:\n    type: openai\n    url: https://x\n" + ltGSM8K,
		want: []string{`r.yaml:3:11: services.m.type: expected one of "api", "vllm", "sglang", "trt_llm", "process", "nim", "docker_model", "dynamo", "gym", "nat", "nat_agent", "custom", found "openai"`}},
	{name: "unknown solver type", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {type: smart, service: m}\n",
		want: []string{`r.yaml:8:20: benchmarks[0].solver.type: expected one of "simple", "harbor", "agent", "tool_calling", "gym_delegation", "nat", "openclaw", "container", "oracle", "custom", found "smart"`}},
	{name: "unknown sandbox type", file: "r.cue", src: ltCUEAPI + "benchmarks: [{name: \"humaneval\", sandbox: {type: \"dockr\"}, solver: {type: \"simple\", service: \"m\"}}]\n",
		want: []string{`r.cue:5:50: benchmarks[0].sandbox.type: expected one of "none", "local", "slurm", "docker", "apptainer", "ecs_fargate", "custom", found "dockr"`}},
	{name: "api_key literal", file: "r.yaml", src: ltAPI + "    api_key: nvapi-abc123\n" + ltGSM8K,
		want: []string{`r.yaml:6:14: services.m.api_key: expected a ${VAR} reference to an environment variable (secrets are passed by name, never written in a recipe), found "nvapi-abc123"`}},
	{name: "yaml duplicate key", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    repeats: 1\n    repeats: 2\n    solver: {type: simple, service: m}\n",
		want: []string{"r.yaml:9:14: benchmarks[0].repeats: found two different values, 1 and 2 (is the field set twice?)"}},
	{name: "cue conflict", file: "r.cue", src: ltCUEAPI + "benchmarks: [{name: \"gsm8k\", repeats: 1 & 2, solver: {type: \"simple\", service: \"m\"}}]\n",
		want: []string{"r.cue:5:43: benchmarks[0].repeats: found two different values, 1 and 2 (is the field set twice?)"}},
	{name: "cue not concrete", file: "r.cue", src: ltCUEAPI + "benchmarks: [{name: \"gsm8k\", repeats: >5, solver: {type: \"simple\", service: \"m\"}}]\n",
		want: []string{"r.cue:5:30: benchmarks[0].repeats: expected a concrete value, found >5"}},
	{name: "cue undefined reference", file: "r.cue", src: ltCUEAPI + "benchmarks: [{name: _bench, solver: {type: \"simple\", service: \"m\"}}]\n",
		want: []string{`r.cue:5:21: benchmarks.name: reference "_bench" not found`}},

	// Cross-field rules.
	{name: "dangling solver service", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: nemotron}\n",
		want: []string{`r.yaml:8:37: benchmarks[0].solver.service: expected the name of a service, found "nemotron" (declared: m)`}},
	{name: "dangling sandbox", file: "r.yaml", src: ltAPI + "sandboxes:\n  py: {type: local}\nbenchmarks:\n  - name: humaneval\n    sandbox: python\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:10:14: benchmarks[0].sandbox: expected the name of a sandbox, found "python" (declared: py)`}},
	{name: "humaneval without a sandbox", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: m}\n  - name: humaneval\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:9:5: benchmarks[1].sandbox: humaneval runs the model's code and needs a sandbox, e.g. sandbox: {type: "local"}`}},
	{name: "humaneval with sandbox none", file: "r.yaml", src: ltAPI + "sandboxes:\n  off: {type: none}\nbenchmarks:\n  - name: humaneval\n    sandbox: off\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:10:14: benchmarks[0].sandbox: humaneval runs the model's code and needs a sandbox, e.g. sandbox: {type: "local"}`}},
	{name: "humaneval with a sandbox", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: humaneval\n    sandbox: {type: local}\n    solver: {type: simple, service: m}\n"},
	{name: "self judge", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: simpleqa\n    solver: {type: simple, service: m}\n    scoring:\n      metrics:\n        - {type: judge, name: correctness, service: m}\n",
		want: []string{`r.yaml:11:53: benchmarks[0].scoring.metrics[0].service: judge service "m" is the solver's own service; use a separate service, or set allow_self_judge: true`}},
	{name: "self judge allowed", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: simpleqa\n    solver: {type: simple, service: m}\n    scoring:\n      metrics:\n        - {type: judge, name: correctness, service: m, allow_self_judge: true}\n"},
	{name: "skip_failed with max_error_rate", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    skip_failed: true\n    max_error_rate: 0.1\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:9:21: benchmarks[0].max_error_rate: max_error_rate 0.1 contradicts skip_failed: true, which skips every infrastructure failure (max_error_rate 1); keep one of them`}},
	{name: "request_timeout past the sample's", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    timeout: 60\n    request_timeout: 90\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:9:22: benchmarks[0].request_timeout: request_timeout 90s is longer than the sample's timeout 60s, which bounds every request of the sample`}},
	{name: "timeout below a millisecond", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    timeout: 0.0001\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:8:14: benchmarks[0].timeout: expected >=0.001, found 0.0001`}},
	{name: "max_error_rate above 1", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    max_error_rate: 5\n    solver: {type: simple, service: m}\n",
		want: []string{`r.yaml:8:21: benchmarks[0].max_error_rate: expected <=1, found 5`}},
	{name: "depends_on cycle", file: "r.yaml", src: "services:\n  a:\n    type: api\n    url: https://x\n    depends_on: [b]\n  b:\n    type: api\n    url: https://x\n    depends_on: [a]\nbenchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: a}\n",
		want: []string{"r.yaml:9:5: services.b.depends_on: depends_on forms a cycle: a → b → a"}},
	{name: "depends_on self", file: "r.yaml", src: "services:\n  a:\n    type: api\n    url: https://x\n    depends_on: [a]\nbenchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: a}\n",
		want: []string{"r.yaml:5:18: services.a.depends_on[0]: a service cannot depend on itself"}},
	{name: "tp larger than gres", file: "r.yaml", src: strings.Replace(ltSlurm, "tensor_parallel_size: 4", "tensor_parallel_size: 8", 1),
		want: []string{`r.yaml:6:27: services.m.tensor_parallel_size: needs 8 GPUs per node (tensor_parallel_size 8 × pipeline_parallel_size 1 × data_parallel_size 1 over 1 node(s)) but node pool "compute" has 4`}},
	{name: "num_nodes larger than pool", file: "r.yaml", src: strings.Replace(ltSlurm, "    node_pool: compute\n", "    node_pool: compute\n    num_nodes: 2\n", 1),
		want: []string{`r.yaml:6:16: services.m.num_nodes: num_nodes is 2 but node pool "compute" has 1 node(s)`}},
	{name: "bad walltime", file: "r.yaml", src: strings.Replace(ltSlurm, "  type: slurm\n", "  type: slurm\n  walltime: 2h\n", 1),
		want: []string{`r.yaml:13:13: cluster.walltime: expected a SLURM time such as HH:MM:SS or D-HH:MM:SS, found "2h"`}},
	{name: "shards above max_problems", file: "r.yaml", src: strings.Replace(ltSlurm, "  type: slurm\n", "  type: slurm\n  shards: 64\n", 1),
		want: []string{"r.yaml:9:19: benchmarks[0].max_problems: cluster.shards is 64 but this benchmark has at most 50 problems: some shards would have nothing to do"}},
	{name: "duplicate metric names", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: m}\n    scoring:\n      primary: exact_match\n      metrics:\n        - {type: scorer, name: exact_match}\n        - {type: scorer, name: exact_match}\n",
		want: []string{`r.yaml:13:32: benchmarks[0].scoring.metrics[1].name: metric name "exact_match" is already used by metrics[0]`}},
	{name: "two metrics without primary", file: "r.yaml", src: ltAPI + "benchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: m}\n    scoring:\n      metrics:\n        - {type: scorer, name: exact_match}\n        - {type: scorer, name: numeric_match}\n",
		want: []string{"r.yaml:10:7: benchmarks[0].scoring.metrics: with more than one metric, set primary to the one the headline reports"}},
	{name: "reserved service name", file: "r.yaml", src: "services:\n  default: {type: api, url: https://x}\nbenchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: default}\n",
		want: []string{`r.yaml:2:3: services.default: service name "default" is reserved; choose another name`}},

	// A slurm sandbox: a pool of sandbox servers on a node pool of its own.
	{name: "slurm sandbox", file: "r.yaml", src: strings.Replace(ltSlurm, `      gres: "gpu:4"`+"\n", `      gres: "gpu:4"`+"\n    sbx: {nodes: 2}\n", 1) + "sandboxes:\n  py: {type: slurm, node_pool: sbx}\n"},
	{name: "slurm sandbox on a local cluster", file: "r.yaml", src: ltAPI + ltGSM8K + "sandboxes:\n  py:\n    type: slurm\n    node_pool: sbx\n",
		want: []string{"r.yaml:11:11: sandboxes.py.type: a slurm sandbox runs on a node pool of a SLURM job, but cluster.type is local; use a local, docker or apptainer sandbox, or cluster.type slurm"}},
	{name: "slurm sandbox without node_pool", file: "r.yaml", src: ltSlurm + "sandboxes:\n  py:\n    type: slurm\n",
		want: []string{"r.yaml:18:3: sandboxes.py.node_pool: a slurm sandbox needs node_pool, the node pool its sandbox servers run on (declared: compute)"}},
	{name: "slurm sandbox on a missing node pool", file: "r.yaml", src: ltSlurm + "sandboxes:\n  py:\n    type: slurm\n    node_pool: sbx\n",
		want: []string{`r.yaml:20:16: sandboxes.py.node_pool: expected the name of a node pool, found "sbx" (declared: compute)`}},
	{name: "slurm sandbox on the eval pool", file: "r.yaml", src: ltSlurm + "sandboxes:\n  py:\n    type: slurm\n    node_pool: compute\n",
		want: []string{`r.yaml:20:16: sandboxes.py.node_pool: node pool "compute" is where the shards run (cluster.eval_pool, or the first node pool when it is unset); a slurm sandbox needs a node pool of its own`}},
	// An apptainer sandbox with node_pool is such a pool too.
	{name: "apptainer sandbox on a local cluster", file: "r.yaml", src: ltAPI + ltGSM8K + "sandboxes:\n  sif:\n    type: apptainer\n    node_pool: sbx\n    sif_cache_dir: /shared/sif\n",
		want: []string{"r.yaml:12:16: sandboxes.sif.node_pool: an apptainer sandbox with node_pool runs its containers on a node pool of a SLURM job, but cluster.type is local; drop node_pool (apptainer then runs beside the shards) or use cluster.type slurm"}},
	{name: "apptainer sandbox on the eval pool", file: "r.yaml", src: ltSlurm + "sandboxes:\n  sif:\n    type: apptainer\n    node_pool: compute\n    sif_cache_dir: /shared/sif\n",
		want: []string{`r.yaml:20:16: sandboxes.sif.node_pool: node pool "compute" is where the shards run (cluster.eval_pool, or the first node pool when it is unset); an apptainer sandbox needs a node pool of its own`}},
	{name: "inline slurm sandbox", file: "r.yaml", src: strings.Replace(ltSlurm, "    max_problems: 50\n", "    max_problems: 50\n    sandbox: {type: slurm}\n", 1),
		want: []string{"r.yaml:10:21: benchmarks[0].sandbox.type: a slurm sandbox is a pool of servers the benchmarks share: declare it under sandboxes and refer to it by name"}},

	// Not a recipe at all.
	{name: "empty file", file: "r.yaml", src: "",
		want: []string{"r.yaml: recipe is empty: expected services and benchmarks"}},
	{name: "only comments", file: "r.yaml", src: "# nothing yet\n\n",
		want: []string{"r.yaml: recipe is empty: expected services and benchmarks"}},
	{name: "top-level list yaml", file: "r.yaml", src: "- name: gsm8k\n- name: mmlu\n",
		want: []string{"r.yaml:1:1: expected a mapping with services and benchmarks, found list"}},
	{name: "top-level list cue", file: "r.cue", src: "[{name: \"gsm8k\"}]\n",
		want: []string{"r.cue:1:1: expected a mapping with services and benchmarks, found list"}},
	{name: "binary garbage", file: "r.yaml", src: "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
		want: []string{"r.yaml:1:1: not a text file: expected UTF-8 yaml"}},
	{name: "unknown format", file: "r.toml", src: "services = 1\n",
		want: []string{"r.toml: unknown recipe format: expected a .cue, .yaml, .yml or .json file"}},
	{name: "10001 benchmarks", file: "r.yaml", src: tooManyBenchmarks(),
		want: []string{"r.yaml:6:1: benchmarks: expected at most 1000 entries, found 10001"}},

	// -O overrides.
	{name: "override index out of range", file: "r.yaml", src: ltAPI + ltGSM8K, overrides: []string{"benchmarks.3.repeats=4"},
		want: []string{"r.yaml: -O benchmarks.3.repeats=4: index 3 out of range: the list has 1 entries"}},
	{name: "override fails schema", file: "r.yaml", src: ltAPI + ltGSM8K, overrides: []string{"benchmarks[0].repeats=0"},
		want: []string{"-O benchmarks[0].repeats=0: benchmarks[0].repeats: expected >=1, found 0"}},
	{name: "override wrong type", file: "r.yaml", src: ltAPI + ltGSM8K, overrides: []string{"output.dir=null"},
		want: []string{"-O output.dir=null: output.dir: expected string, found null"}},
	{name: "override unknown field", file: "r.yaml", src: ltAPI + ltGSM8K, overrides: []string{"services.m.generation.temprature=0.5"},
		want: []string{`-O services.m.generation.temprature=0.5: services.m.generation.temprature: unknown field "temprature" (did you mean "temperature"?)`}},
	{name: "override dangling service", file: "r.yaml", src: ltAPI + ltGSM8K, overrides: []string{"benchmarks.0.solver.service=nemotron"},
		want: []string{`-O benchmarks.0.solver.service=nemotron: benchmarks[0].solver.service: expected the name of a service, found "nemotron" (declared: m)`}},
	{name: "override cue fails schema", file: "r.cue", src: ltCUEAPI + ltCUEGSM8K, overrides: []string{"benchmarks.0.max_concurrent=0"},
		want: []string{"-O benchmarks.0.max_concurrent=0: benchmarks[0].max_concurrent: expected >=1, found 0"}},
	// Errors elsewhere in an overridden CUE recipe keep their positions.
	{name: "override cue keeps positions", file: "r.cue", src: ltCUEAPI + "benchmarks: [{name: \"gsm8k\", solver: {type: \"simple\", service: \"mm\"}}]\n", overrides: []string{"output.dir=/tmp/x"},
		want: []string{`r.cue:5:64: benchmarks[0].solver.service: expected the name of a service, found "mm" (declared: m)`}},
}

func TestLoadErrors(t *testing.T) {
	l := newTestLoader(t)
	for _, c := range loadCases {
		t.Run(c.name, func(t *testing.T) {
			var ovs []Override
			for _, text := range c.overrides {
				o, err := ParseOverride(text)
				if err != nil {
					t.Fatal(err)
				}
				ovs = append(ovs, o)
			}
			start := time.Now()
			_, err := l.Load(c.file, []byte(c.src), ovs)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Load took %v; invalid input must fail fast", d)
			}
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error:\n%v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T, not compiler.Errors: %v", err, err)
			}
			lines := strings.Split(err.Error(), "\n")
			for _, w := range c.want {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }) {
					t.Errorf("error does not contain %q; got:\n%v", w, err)
				}
			}
			if len(lines) > len(c.want) {
				t.Errorf("%d errors, want %d:\n%v", len(lines), len(c.want), err)
			}
		})
	}
}

// Overrides are typed as NeMo Evaluator types them, address list entries
// both ways, and may create fields.
func TestLoadOverrides(t *testing.T) {
	l := newTestLoader(t)
	yamlSrc := ltAPI + ltGSM8K
	cueSrc := ltCUEAPI + ltCUEGSM8K
	cases := []struct {
		override string
		path     string // where to look, as JSON pointer-ish dotted path
		want     string // the JSON of the value there
	}{
		{"benchmarks.0.max_problems=null", "benchmarks.0.max_problems", "null"},
		{"benchmarks.0.max_problems=~", "benchmarks.0.max_problems", "null"},
		{"output.timestamped=true", "output.timestamped", "true"},
		{"output.timestamped=FALSE", "output.timestamped", "false"},
		{"benchmarks.0.repeats=3", "benchmarks.0.repeats", "3"},
		{"benchmarks.0.timeout=2.5", "benchmarks.0.timeout", "2.5"},
		{"output.dir=results/run 1", "output.dir", `"results/run 1"`},
		{"services.m.model=meta/llama-3.3-70b-instruct", "services.m.model", `"meta/llama-3.3-70b-instruct"`},
		{"benchmarks.0.repeats=4", "benchmarks.0.repeats", "4"},
		{"benchmarks[0].repeats=4", "benchmarks.0.repeats", "4"},
		// generation does not exist yet: the override creates it.
		{"services.m.generation.temperature=0.5", "services.m.generation", `{"temperature":0.5}`},
		{"benchmarks[0].params.subset.language=de", "benchmarks.0.params", `{"subset":{"language":"de"}}`},
	}
	for _, format := range []string{"yaml", "cue"} {
		src := yamlSrc
		if format == "cue" {
			src = cueSrc
		}
		for _, c := range cases {
			t.Run(format+"/"+c.override, func(t *testing.T) {
				o, err := ParseOverride(c.override)
				if err != nil {
					t.Fatal(err)
				}
				s, err := l.Load("r."+format, []byte(src), []Override{o})
				if err != nil {
					t.Fatalf("%v", err)
				}
				raw, err := json.Marshal(s.Value)
				if err != nil {
					t.Fatal(err)
				}
				var x any
				if err := json.Unmarshal(raw, &x); err != nil {
					t.Fatal(err)
				}
				for _, k := range strings.Split(c.path, ".") {
					switch v := x.(type) {
					case map[string]any:
						x = v[k]
					case []any:
						var i int
						fmt.Sscan(k, &i)
						x = v[i]
					}
				}
				got, _ := json.Marshal(x)
				if string(got) != c.want {
					t.Errorf("%s = %s, want %s", c.path, got, c.want)
				}
			})
		}
	}
	for _, bad := range []string{"no-equals-sign", "=1", "a..b=1"} {
		if _, err := ParseOverride(bad); err == nil {
			t.Errorf("ParseOverride(%q): no error", bad)
		}
	}
}

func TestParseWalltime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int // seconds; 0: an error
	}{
		{"30", 30 * 60},                      // MM
		{"90", 90 * 60},                      // MM above an hour
		{"30:15", 30*60 + 15},                // MM:SS
		{"02:00:00", 2 * 3600},               // HH:MM:SS
		{"4:00:00", 4 * 3600},                // H:MM:SS
		{"48:00:00", 48 * 3600},              // hours above a day
		{"1-12", 86400 + 12*3600},            // D-HH
		{"1-12:30", 86400 + 12*3600 + 30*60}, // D-HH:MM
		{"2-00:00:01", 2*86400 + 1},          // D-HH:MM:SS
		{"0:0:1", 1},
		{"", 0},
		{"2h", 0},
		{"00:00:00", 0},
		{"0", 0},
		{"-1", 0},
		{"1:2:3:4", 0},
		{"01:60:00x", 0},
		{"1-", 0},
		{"1-2-3", 0},
		{"1:", 0},
		{":30", 0},
		{"1:123", 0},
		{" 01:00:00", 0},
		{"１:00", 0}, // fullwidth digit
	} {
		got, err := ParseWalltime(c.in)
		switch {
		case c.want == 0 && err == nil:
			t.Errorf("ParseWalltime(%q) = %d, want an error", c.in, got)
		case c.want != 0 && err != nil:
			t.Errorf("ParseWalltime(%q): %v", c.in, err)
		case got != c.want:
			t.Errorf("ParseWalltime(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// FuzzLoad feeds the loader arbitrary recipes (and an optional override).
// The loader recovers panics into an Error whose text says "parser
// failure"; the fuzz test fails on one, so that every panic is found and
// fixed rather than hidden.
func FuzzLoad(f *testing.F) {
	for _, path := range loadExamples(f) {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(strings.TrimPrefix(filepath.Ext(path), "."), src, "")
	}
	for _, c := range loadCases {
		if len(c.src) > 64<<10 {
			continue // the 10001-benchmark recipe: too slow to mutate
		}
		o := ""
		if len(c.overrides) > 0 {
			o = c.overrides[0]
		}
		f.Add(strings.TrimPrefix(filepath.Ext(c.file), "."), []byte(c.src), o)
	}
	f.Add("json", []byte(`{"services": {"m": {"type": "api", "url": "https://x"}}, "benchmarks": [{"name": "gsm8k", "solver": {"type": "simple", "service": "m"}}]}`), "")

	l := newTestLoader(f)
	n := 0
	f.Fuzz(func(t *testing.T, ext string, src []byte, override string) {
		// A cue.Context keeps what it has evaluated: start afresh now
		// and then so that a long fuzz run does not grow without bound.
		if n++; n%500 == 0 {
			l = newTestLoader(t)
		}
		var ovs []Override
		if override != "" {
			o, err := ParseOverride(override)
			if err != nil {
				return
			}
			ovs = append(ovs, o)
		}
		start := time.Now()
		_, err := l.Load("fuzz."+ext, src, ovs)
		// The fuzzer has no time limit per input; a recipe that takes
		// this long is a hang for a user.
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("Load took %v", d)
		}
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "parser failure") {
			t.Fatalf("Load panicked (recovered):\n%v", err)
		}
		var es Errors
		var pe *fs.PathError
		if !errors.As(err, &es) && !errors.As(err, &pe) {
			t.Fatalf("error is %T, neither compiler.Errors nor an fs error: %v", err, err)
		}
	})
}

// generatedRecipe is a 20-benchmark slurm recipe of the size nel validate
// sees in practice.
func generatedRecipe(n int) []byte {
	var b strings.Builder
	b.WriteString(`services:
  model:
    type: vllm
    model: nvidia/Llama-3.1-70B-Instruct
    tensor_parallel_size: 4
    node_pool: gpu
    generation: {temperature: 0.0, max_tokens: 2048}
  judge:
    type: api
    url: https://integrate.api.nvidia.com/v1/chat/completions
    model: meta/llama-3.3-70b-instruct
    api_key: ${NVIDIA_API_KEY}
cluster:
  type: slurm
  account: llm-eval
  walltime: "04:00:00"
  eval_pool: cpu
  node_pools:
    gpu: {partition: batch, gres: "gpu:8"}
    cpu: {partition: cpu, nodes: 2}
benchmarks:
`)
	names := []string{"gsm8k", "mmlu", "math500"}
	for i := range n {
		fmt.Fprintf(&b, "  - name: %s\n    max_problems: %d\n    repeats: %d\n    solver: {type: simple, service: model}\n", names[i%3], 100+i, 1+i%4)
		if i%5 == 4 {
			b.WriteString("    scoring:\n      primary: judge\n      metrics:\n        - {type: scorer, name: exact_match}\n        - {type: judge, name: judge, service: judge}\n")
		}
	}
	return []byte(b.String())
}

// BenchmarkValidate20 is what one `nel validate` process does: compile the
// schema, then load and check a 20-benchmark recipe.
func BenchmarkValidate20(b *testing.B) {
	src := generatedRecipe(20)
	for b.Loop() {
		l, err := NewLoader()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Load("bench.yaml", src, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadSuite(b *testing.B) {
	path := filepath.Join("..", "examples", "suite.cue")
	l := newTestLoader(b)
	for b.Loop() {
		if _, err := l.LoadFile(path, nil); err != nil {
			b.Fatal(err)
		}
	}
}
