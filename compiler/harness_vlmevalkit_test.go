package compiler

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/plan"
)

// vlmRecipe is NeMo's 13_vlmevalkit_mmbench.yaml in shape.
const vlmRecipe = `services:
  vila:
    type: api
    url: https://integrate.api.nvidia.com/v1/chat/completions
    protocol: chat_completions
    model: nvidia/vila-3b
    api_key: ${NVIDIA_API_KEY}
benchmarks:
  - name: vlmevalkit://MMBench_DEV_EN
    max_problems: 5
    solver:
      type: simple
      service: vila
      image_detail: high
`

func vlmPlan(t *testing.T, edits ...string) *plan.Harness {
	t.Helper()
	s := loadHarness(t, vlmRecipe, edits...)
	p := mustPlan(t, s)
	return p.Benchmarks[0].Harness
}

// TestVLMEvalKitPlan: run.py runs the dataset with the registered model
// and rule-based matching; the driver's config carries image_detail as
// img_detail, max_problems as the limit, and no key.
func TestVLMEvalKitPlan(t *testing.T) {
	hp := vlmPlan(t)
	if hp.Kind != "vlmevalkit" || hp.Task != "MMBench_DEV_EN" || hp.Image != "nvcr.io/nvidia/nemo-evaluator:latest" {
		t.Fatalf("harness %+v", hp)
	}
	if got, want := strings.Join(hp.Argv, " "), "--model nel --data MMBench_DEV_EN --work-dir /nel-harness --judge exact_matching --api-nproc 32 --retry 3"; got != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	var cfg struct {
		Name  string         `json:"name"`
		Limit *int           `json:"limit"`
		Model map[string]any `json:"model"`
	}
	if err := json.Unmarshal([]byte(hp.Config), &cfg); err != nil {
		t.Fatalf("config: %v\n%s", err, hp.Config)
	}
	if cfg.Name != "nel" || cfg.Limit == nil || *cfg.Limit != 5 {
		t.Errorf("name %q limit %v", cfg.Name, cfg.Limit)
	}
	want := map[string]any{"model": "nvidia/vila-3b", "api_base": "${NEL_HARNESS_URL}/chat/completions", "img_detail": "high", "retry": 3.0, "verbose": false}
	for k, v := range want {
		if cfg.Model[k] != v {
			t.Errorf("model.%s = %v, want %v", k, cfg.Model[k], v)
		}
	}
	if len(cfg.Model) != len(want) {
		t.Errorf("model args %v, want exactly %v (no key: it is read on the node)", cfg.Model, want)
	}
	// auto: VLMEvalKit's wrapper takes low or high only; low is its default.
	hp = vlmPlan(t, "image_detail: high", "image_detail: auto", "max_problems: 5", "system_prompt: Look.",
		"      service: vila", "      service: vila\n      generation: {temperature: 0.2, top_p: 0.9, max_tokens: 64}")
	for _, want := range []string{`"img_detail": "low"`, `"temperature": 0.2`, `"top_p": 0.9`, `"max_tokens": 64`} {
		if !strings.Contains(hp.Config, want) {
			t.Errorf("config lacks %s:\n%s", want, hp.Config)
		}
	}
	if strings.Contains(hp.Config, "limit") {
		t.Errorf("config has a limit without max_problems:\n%s", hp.Config)
	}
}

// TestVLMEvalKitHash: the dataset, the image and image_detail are the
// benchmark's methodology; the model and the endpoint are not.
func TestVLMEvalKitHash(t *testing.T) {
	cases := []struct {
		name string
		edit []string
		same bool
	}{
		{"url", []string{"integrate.api.nvidia.com", "example.com"}, true},
		{"model", []string{"nvidia/vila-3b", "other"}, true},
		{"concurrency", []string{"max_problems: 5", "max_problems: 5\n    max_concurrent: 4"}, true},
		{"dataset", []string{"MMBench_DEV_EN", "MMBench_DEV_CN"}, false},
		{"image_detail", []string{"image_detail: high", "image_detail: low"}, false},
		{"image", []string{"benchmarks:", "cluster:\n  type: slurm\n  node_pools: {cpu: {nodes: 1}}\n  eval_image: vlmevalkit:v2\nbenchmarks:"}, false},
		{"generation", []string{"image_detail: high", "image_detail: high\n      generation: {temperature: 0.5}"}, false},
	}
	for _, c := range cases {
		base, _ := benchHash(t, vlmRecipe)
		got, _ := benchHash(t, vlmRecipe, c.edit...)
		if (got == base) != c.same {
			t.Errorf("%s: benchmark hash changed = %v, want %v", c.name, got != base, !c.same)
		}
	}
}

func TestVLMEvalKitRefusals(t *testing.T) {
	cases := []struct {
		edit []string
		want string
	}{
		{[]string{"max_problems: 5", "repeats: 2"}, "h.yaml:10:14: benchmarks[0].repeats: not supported yet: repeats > 1 for vlmevalkit://"},
		{[]string{"max_problems: 5", "fewshot: 1"}, "benchmarks[0].fewshot: not supported yet: fewshot for vlmevalkit://"},
		{[]string{"protocol: chat_completions", "protocol: completions"}, "services.vila.protocol: not supported yet: protocol completions for vlmevalkit://"},
		{[]string{"image_detail: high", "image_detail: high\n      generation: {top_k: 5}"}, "benchmarks[0].solver.generation: not supported yet: generation parameters other than temperature, top_p and max_tokens for vlmevalkit://"},
		{[]string{"max_problems: 5", "params: {nframe: 8}"}, "benchmarks[0].params: not supported yet: params for vlmevalkit://"},
		// nel's own loop sends no images: image_detail is refused there.
		{[]string{"vlmevalkit://MMBench_DEV_EN", "gsm8k"}, "h.yaml:14:21: benchmarks[0].solver.image_detail: not supported yet: image_detail outside vlmevalkit://"},
	}
	for _, c := range cases {
		s := loadHarness(t, vlmRecipe, c.edit...)
		h, _, _ := ComputeHashes(s)
		_, err := BuildPlan(s, h, "test")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v\nwant %q", c.edit, err, c.want)
		}
	}
}

// fakeVLMEvalKit is just enough of VLMEvalKit's layout for the driver:
// the vlmeval package (api.GPT4V, config.supported_VLM,
// dataset.image_base.ImageBaseDataset) and run.py beside it, which builds
// the registered model and a dataset as the real run.py does, logs the
// key as the real API wrapper does, and records what it saw.
var fakeVLMEvalKit = map[string]string{
	"vlmeval/__init__.py": "",
	"vlmeval/api.py": `import logging
class GPT4V:
    def __init__(self, **kw):
        self.kw = kw
        logging.getLogger("vlmeval.api").warning("Using API Base: %s; API Key: %s", kw["api_base"], kw["key"])
`,
	"vlmeval/config.py":           "supported_VLM = {}\n",
	"vlmeval/dataset/__init__.py": "",
	// Rows stands in for a pandas DataFrame: .iloc[:n] keeps n rows.
	"vlmeval/dataset/image_base.py": `class Rows(list):
    iloc = property(lambda self: self)
class ImageBaseDataset:
    def __init__(self, dataset):
        self.data = Rows(range(10))
`,
	"run.py": `import json, logging, sys
from vlmeval.config import supported_VLM
from vlmeval.dataset.image_base import ImageBaseDataset
logging.basicConfig(filename="log.txt", level=logging.INFO)
m = supported_VLM[sys.argv[2]]()
json.dump({"argv": sys.argv[1:], "kw": m.kw, "rows": len(ImageBaseDataset("x").data)}, open("seen.json", "w"))
`,
}

// TestVLMEvalKitDriver runs the harness script with a fake VLMEvalKit:
// the URL is filled in, the key reaches the API model from the
// environment and is redacted from the log, the limit cuts the dataset,
// and the key is not left under OpenAI's names for a judge to find.
func TestVLMEvalKitDriver(t *testing.T) {
	py := testenv.LookPath(t, testenv.Python3)
	if strings.Contains(vlmevalkitDriver, "'") {
		t.Fatal("the driver has a single quote; it sits in single quotes in the script")
	}
	root, work := t.TempDir(), t.TempDir()
	for name, text := range fakeVLMEvalKit {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hp := vlmPlan(t)
	if err := os.WriteFile(filepath.Join(work, harnessConfigFile), []byte(hp.Config), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.ReplaceAll(harnessPrelude, "cd "+harnessInside, "cd "+work) + harnessScript("vlmevalkit")
	// The judge check: a script line after the driver would see the key
	// under OPENAI_API_KEY; the driver's environment is the same.
	script = strings.Replace(script, "exec python3", `[ -z "${OPENAI_API_KEY:-}" ] || exit 7
exec python3`, 1)
	cmd := exec.Command("bash", append([]string{"-c", script, "nel-harness"}, hp.Argv...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+root, "NEL_HARNESS_URL=http://node:8000/v1", "NEL_HARNESS_API_KEY=nvapi-secret", "PATH="+filepath.Dir(py)+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("driver: %v\n%s", err, out)
	}
	var seen struct {
		Argv []string       `json:"argv"`
		KW   map[string]any `json:"kw"`
		Rows int            `json:"rows"`
	}
	b, err := os.ReadFile(filepath.Join(work, "seen.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &seen); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen.Argv, " ") != strings.Join(hp.Argv, " ") {
		t.Errorf("run.py got %q, want %q", seen.Argv, hp.Argv)
	}
	if seen.KW["api_base"] != "http://node:8000/v1/chat/completions" || seen.KW["key"] != "nvapi-secret" || seen.KW["img_detail"] != "high" {
		t.Errorf("API model kwargs %v", seen.KW)
	}
	if seen.Rows != 5 {
		t.Errorf("dataset rows %d, want max_problems' 5", seen.Rows)
	}
	log, err := os.ReadFile(filepath.Join(work, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "nvapi-secret") || !strings.Contains(string(log), "API Key: ***") {
		t.Errorf("log does not have the key redacted:\n%s", log)
	}
}
