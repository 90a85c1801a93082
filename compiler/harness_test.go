package compiler

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/shelltest"
	"github.com/nel-eval/nel/runtime/shellquote"
)

// harnessRecipe is NeMo's 03_mmlu_lmeval.yaml in shape; edit replaces
// text in it.
const harnessRecipe = `services:
  nemotron:
    type: api
    url: https://integrate.api.nvidia.com/v1/chat/completions
    protocol: chat_completions
    model: nvidia/nemotron-3-super-120b-a12b
    api_key: ${NVIDIA_API_KEY}
benchmarks:
  - name: lm-eval://mmlu_generative
    max_problems: 5
    solver:
      type: simple
      service: nemotron
    scoring:
      metrics:
        - type: scorer
          name: mcq_extract
`

const containerRecipe = `services:
  nemotron:
    type: api
    url: https://integrate.api.nvidia.com/v1/chat/completions
    protocol: chat_completions
    model: nvidia/nemotron-3-nano-30b-a3b
    api_key: ${NVIDIA_API_KEY}
benchmarks:
  - name: "container://nvcr.io/nvidia/eval-factory/nemo-skills:26.03#ns_ifeval"
    params:
      temperature: 1.0
      limit_samples: 10
    solver:
      type: container
      service: nemotron
      adapter_config:
        process_reasoning_traces: true
`

func loadHarness(t *testing.T, text string, edits ...string) *Source {
	t.Helper()
	text = strings.NewReplacer(edits...).Replace(text)
	s, err := newTestLoader(t).Load("h.yaml", []byte(text), nil)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, text)
	}
	return s
}

func benchHash(t *testing.T, text string, edits ...string) (bench, recipe string) {
	t.Helper()
	h, _, err := ComputeHashes(loadHarness(t, text, edits...))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range h.BenchmarkKeys() {
		return h.Benchmarks[k], h.Recipe
	}
	t.Fatal("no benchmark")
	return "", ""
}

// TestHarnessBenchmarkHash: what decides a harness benchmark's methodology
// changes its benchmark hash; the model, the endpoint and concurrency do
// not.
func TestHarnessBenchmarkHash(t *testing.T) {
	cases := []struct {
		name, text string
		edit       []string
		same       bool
	}{
		{"url", harnessRecipe, []string{"integrate.api.nvidia.com", "example.com"}, true},
		{"model", harnessRecipe, []string{"nemotron-3-super-120b-a12b", "other"}, true},
		{"concurrency", harnessRecipe, []string{"max_problems: 5", "max_problems: 5\n    max_concurrent: 4"}, true},
		{"task", harnessRecipe, []string{"mmlu_generative", "mmlu_pro"}, false},
		{"harness", harnessRecipe, []string{"lm-eval://", "skills://", "    scoring:\n      metrics:\n        - type: scorer\n          name: mcq_extract\n", ""}, false},
		{"limit", harnessRecipe, []string{"max_problems: 5", "max_problems: 6"}, false},
		{"endpoint type", harnessRecipe, []string{"protocol: chat_completions", "protocol: completions"}, false},
		{"image", harnessRecipe, []string{"benchmarks:", "cluster:\n  type: slurm\n  node_pools: {cpu: {nodes: 1}}\n  eval_image: lm-eval:v2\nbenchmarks:"}, false},
		{"container image", containerRecipe, []string{"26.03", "26.04"}, false},
		{"container params", containerRecipe, []string{"limit_samples: 10", "limit_samples: 11"}, false},
		{"adapter_config", containerRecipe, []string{"process_reasoning_traces: true", "process_reasoning_traces: false"}, false},
	}
	for _, c := range cases {
		base, _ := benchHash(t, c.text)
		got, _ := benchHash(t, c.text, c.edit...)
		if (got == base) != c.same {
			t.Errorf("%s: benchmark hash changed = %v, want %v", c.name, got != base, !c.same)
		}
	}
	// The model is in the recipe hash, as for every benchmark.
	_, r1 := benchHash(t, harnessRecipe)
	_, r2 := benchHash(t, harnessRecipe, "nemotron-3-super-120b-a12b", "other")
	if r1 == r2 {
		t.Error("the recipe hash does not see the model")
	}
}

func TestHarnessPlan(t *testing.T) {
	s := loadHarness(t, harnessRecipe)
	h, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	hp := p.Benchmarks[0].Harness
	if hp == nil || hp.Kind != "lm-eval" || hp.Task != "mmlu_generative" || hp.Image != "nvcr.io/nvidia/nemo-evaluator:latest-lm-eval" {
		t.Fatalf("harness %+v", hp)
	}
	argv := strings.Join(hp.Argv, " ")
	for _, want := range []string{
		"lm_eval --model local-chat-completions",
		"model=nvidia/nemotron-3-super-120b-a12b,base_url=${NEL_HARNESS_URL}/chat/completions,num_concurrent=32,",
		"--tasks mmlu_generative", "--apply_chat_template", "--limit 5", "--output_path /nel-harness", "--log_samples",
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv %q lacks %q", argv, want)
		}
	}
	s = loadHarness(t, harnessRecipe, "benchmarks:", "cluster:\n  type: slurm\n  node_pools: {cpu: {nodes: 1}}\n  eval_image: registry.example/lm-eval:1\nbenchmarks:")
	h, _, _ = ComputeHashes(s)
	if p, err = BuildPlan(s, h, "test"); err != nil || p.Benchmarks[0].Harness.Image != "registry.example/lm-eval:1" {
		t.Errorf("eval_image: err %v, plan %+v", err, p)
	}
}

// TestHarnessContainerConfig: the run_config carries the endpoint as NeMo
// builds it, with the key by name only.
func TestHarnessContainerConfig(t *testing.T) {
	s := loadHarness(t, containerRecipe)
	h, _, _ := ComputeHashes(s)
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	hp := p.Benchmarks[0].Harness
	if hp.Image != "nvcr.io/nvidia/eval-factory/nemo-skills:26.03" || hp.Task != "ns_ifeval" {
		t.Errorf("image %q task %q", hp.Image, hp.Task)
	}
	for _, want := range []string{`"type": "ns_ifeval"`, `"output_dir": "/nel-harness"`, `"limit_samples": 10`,
		`"url": "${NEL_HARNESS_URL}/chat/completions"`, `"api_key_name": "NEMO_API_KEY"`, `"process_reasoning_traces": true`,
		`"model_id": "nvidia/nemotron-3-nano-30b-a3b"`, `"type": "chat"`} {
		if !strings.Contains(hp.Config, want) {
			t.Errorf("run_config lacks %s:\n%s", want, hp.Config)
		}
	}
}

func TestHarnessRefusals(t *testing.T) {
	cases := []struct {
		text string
		edit []string
		want string
	}{
		{harnessRecipe, []string{"max_problems: 5", "repeats: 2"}, "h.yaml:10:14: benchmarks[0].repeats: not supported yet: repeats > 1 for lm-eval://"},
		{harnessRecipe, []string{"max_problems: 5", "params: {k: 1}"}, "benchmarks[0].params: not supported yet: params for lm-eval://"},
		{harnessRecipe, []string{"type: scorer\n          name: mcq_extract", "type: judge\n          name: j\n          service: nemotron\n          allow_self_judge: true"}, "benchmarks[0].scoring.metrics[0].type: not supported yet: metric type judge for lm-eval://"},
		{harnessRecipe, []string{"https://integrate.api.nvidia.com", "https://$${HOST}"}, "services.nemotron.url: not supported yet: ${VAR} in the url"},
		{harnessRecipe, []string{"benchmarks:", "cluster:\n  type: slurm\n  node_pools: {cpu: {nodes: 1}}\n  shards: 2\nbenchmarks:"}, "cluster.shards: not supported yet: cluster.shards > 1"},
		{harnessRecipe, []string{"lm-eval://mmlu_generative", "skills://mmlu-pro", "max_problems: 5", "fewshot: 5"}, "benchmarks[0].fewshot: not supported yet: fewshot for skills://"},
		{harnessRecipe, []string{"lm-eval://mmlu_generative", "gym://gsm8k"}, "benchmarks[0].name: not supported yet: gym://NAME"},
		{containerRecipe, []string{"    params:", "    max_problems: 3\n    params:"}, "benchmarks[0].max_problems: not supported yet: max_problems for container:// (set params.limit_samples"},
		{containerRecipe, []string{"type: container", "type: simple", "      adapter_config:\n        process_reasoning_traces: true\n", ""}, "benchmarks[0].solver.type: not supported yet: solver type simple for container://"},
		{containerRecipe, []string{"    api_key: ${NVIDIA_API_KEY}", "    api_key: ${NVIDIA_API_KEY}\n    generation: {temperature: 0.5}"}, "services.nemotron.generation: not supported yet: the service's generation for container://"},
	}
	for _, c := range cases {
		s := loadHarness(t, c.text, c.edit...)
		h, _, _ := ComputeHashes(s)
		_, err := BuildPlan(s, h, "test")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v\nwant %q", c.edit, err, c.want)
		}
	}
}

// TestHarnessOffSLURM: a Makefile cannot start a harness (a SLURM job or
// nel run does), and says where.
func TestHarnessOffSLURM(t *testing.T) {
	s := loadHarness(t, harnessRecipe)
	_, err := Compile(s, CompileOptions{Target: "make", NelVersion: "test", NelRun: "/x/nel-run", NelRunSHA256: strings.Repeat("0", 64)})
	var errs Errors
	if !errors.As(err, &errs) || !strings.Contains(err.Error(), "h.yaml:9:11: benchmarks[0].name: not supported yet: lm-eval:// benchmarks in a Makefile") {
		t.Errorf("err = %v", err)
	}
}

// TestHarnessScriptSecrets: the key reaches the harness by name; its value
// is never in the script.
func TestHarnessScriptSecrets(t *testing.T) {
	t.Setenv("NVIDIA_API_KEY", "nvapi-secret-value")
	s := loadHarness(t, harnessRecipe)
	out, err := Compile(s, CompileOptions{Target: "slurm", NelVersion: "test", NelRun: "/x/nel-run", NelRunSHA256: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	script := string(out)
	if strings.Contains(script, "nvapi-secret-value") {
		t.Fatal("the key's value is in the script")
	}
	lines := strings.Split(script, "\n")
	for _, want := range []string{
		`  export NEL_HARNESS_API_KEY="$NVIDIA_API_KEY"`,
		`  export NEL_HARNESS_URL=https://integrate.api.nvidia.com/v1`,
		`[ -n "${NVIDIA_API_KEY:-}" ] || nel_fail 'NVIDIA_API_KEY is not set or empty: export it before sbatch (services.nemotron.api_key)'`,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("script lacks the line %q", want)
		}
	}
	if !strings.Contains(script, "--container-env=NEL_HARNESS_URL,NEL_HARNESS_API_KEY") {
		t.Error("the harness's container does not get the key by name")
	}
}

// TestHarnessLock: nel lock pins a harness's default image like any other
// (benchmarks[i].harness.image); the plan then runs the pinned reference
// and the benchmark hash covers its digest. The data is the harness's own:
// the lock records the benchmark with no sources.
func TestHarnessLock(t *testing.T) {
	s := loadHarness(t, harnessRecipe)
	unlocked, _ := benchHash(t, harnessRecipe)
	fields := ImageFields(s.Recipe)
	if len(fields) != 1 || fields[0].Field != "benchmarks[0].harness.image" || fields[0].Ref != "nvcr.io/nvidia/nemo-evaluator:latest-lm-eval" {
		t.Fatalf("image fields %+v", fields)
	}
	in, err := BenchmarkInputs(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	pinned := "nvcr.io/nvidia/nemo-evaluator@sha256:" + strings.Repeat("a", 64)
	lk := &Lock{LockVersion: LockVersion,
		Datasets: []LockedBenchmark{{Benchmark: "lm-eval://mmlu_generative", Inputs: in}},
		Images:   []LockedImage{{Field: fields[0].Field, Ref: fields[0].Ref, Digest: "sha256:" + strings.Repeat("a", 64), Pinned: pinned}},
	}
	if err := s.ApplyLock(lk, "h.lock.json"); err != nil {
		t.Fatal(err)
	}
	h, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Benchmarks[0].Harness.Image; got != pinned {
		t.Errorf("plan image %q, want the pinned %q", got, pinned)
	}
	if h.Benchmarks["lm-eval://mmlu_generative"] == unlocked {
		t.Error("the benchmark hash does not see the pinned digest")
	}
	// With cluster.eval_image, that field is the one pinned.
	s = loadHarness(t, harnessRecipe, "benchmarks:", "cluster:\n  type: slurm\n  node_pools: {cpu: {nodes: 1}}\n  eval_image: lm-eval:v2\nbenchmarks:")
	if fields := ImageFields(s.Recipe); len(fields) != 1 || fields[0].Field != "cluster.eval_image" {
		t.Errorf("image fields with eval_image: %+v", fields)
	}
}

// TestHarnessArgvInert runs the harness step's own script (but for its cd
// and exec, which print the arguments instead) with a hostile task, model
// and endpoint URL: every argument arrives as written, the URL put in as
// text, and nothing runs.
func TestHarnessArgvInert(t *testing.T) {
	s := loadHarness(t, harnessRecipe,
		"lm-eval://mmlu_generative", `"lm-eval://t$(touch PWNED)'\"`+"`touch PWNED`\"",
		"model: nvidia/nemotron-3-super-120b-a12b", `model: "m';touch PWNED;'"`)
	h, _, _ := ComputeHashes(s)
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	argv := p.Benchmarks[0].Harness.Argv
	if j := strings.Join(argv, " "); !strings.Contains(j, "--tasks t$(touch PWNED)'\"`touch PWNED`") || !strings.Contains(j, "model=m';touch PWNED;'") {
		t.Fatalf("the hostile task and model are not in the arguments: %q", argv)
	}
	url := `http://h:1/v1?a=$(touch PWNED)&b=\&c`
	script := strings.Replace(harnessPrelude, "cd "+harnessInside+"\n", "", 1) + `printf '%s\0' "${args[@]}"`
	cmd := "NEL_HARNESS_URL=" + shellquote.Quote(url) + " bash -c " + shellquote.Quote(script) + " nel-harness " + shellquote.Join(argv)
	want := make([]string, len(argv))
	for i, a := range argv {
		want[i] = strings.ReplaceAll(a, harnessURLRef, url)
	}
	if !strings.Contains(strings.Join(want, " "), "base_url="+url+"/chat/completions") {
		t.Fatalf("the URL is not in the arguments: %q", want)
	}
	for _, locale := range shelltest.Locales() {
		got := shelltest.SplitNUL(shelltest.Run(t, shelltest.Shells(t)[0], locale, cmd))
		shelltest.CompareArgs(t, "harness argv", got, want)
	}
}
