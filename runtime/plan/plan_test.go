package plan

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fullPlan returns a plan with every field set, so that a field the JSON
// loses shows in the round trip. TestFullPlanIsFull keeps it so when a
// field is added. Params and ExtraBody hold what encoding/json decodes an
// open map to (float64, []any, map[string]any), so they compare equal.
func fullPlan() *Plan {
	f := func(v float64) *float64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	i := func(v int) *int { return &v }
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	gen := Generation{
		Temperature: f(0.6), TopP: f(0.95), TopK: i64(20), MaxTokens: i64(4096), Seed: i64(7),
		Stop: []string{"</answer>", "\n\n"}, FrequencyPenalty: f(0.1), PresencePenalty: f(-0.2),
		ExtraBody: map[string]any{"chat_template_kwargs": map[string]any{"thinking": true}, "n": 1.0},
	}
	pin := DataPin{
		Spec: "hf://openai/gsm8k/main/test", Revision: "e53f048856ff4f594e959d75785d2c2d37b678ee",
		Digest: "sha256:" + strings.Repeat("ab", 32),
		Files:  []DataFile{{Name: "test.parquet", SHA256: strings.Repeat("cd", 32)}},
	}
	return &Plan{
		PlanVersion: Version, NelVersion: "v1.2.3", ScoringVersion: "3",
		RecipeHash: "sha256:" + strings.Repeat("01", 32), PlanHash: "sha256:" + strings.Repeat("23", 32),
		Recipe: "examples/suite.cue", RecipeDir: "examples", OutputDir: "eval_results/suite",
		Shards: 4, ProgressInterval: 30, Reports: []string{"markdown", "html"},
		Services: []Service{{
			Name: "model", Type: "vllm", Protocol: "chat_completions", Model: "llama-70b",
			URL: "http://${HOST:-localhost}:8000/v1", URLEnv: "NEL_SERVICE_MODEL_URL",
			APIKey: &EnvRef{Name: "NVIDIA_API_KEY", Default: s("none")}, Generation: gen,
			Managed: true, Port: 8000, HealthPath: "/health", StartupTimeout: 900,
			Command: []string{"vllm", "serve", "meta/llama-70b", "--port", "8000"},
			Env: []EnvVar{{
				Name: "HF_TOKEN", Value: "literal",
				From: &EnvRef{Name: "HF_TOKEN", Default: s("unset")},
			}},
			Image:        "vllm/vllm-openai:v0.8.0",
			Parallelism:  &Parallelism{TP: 4, PP: 2, DP: 1, NumNodes: 2},
			Serves:       &Benchmark{Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Solver: Solver{Type: "simple", Service: "g"}},
			Interceptors: []Interceptor{{Name: "system_message", Config: map[string]any{"system_message": "Be brief."}}},
			ModelTraffic: &ModelTraffic{CaptureToolCalls: b(false), CaptureReasoning: b(true), CaptureMessages: b(false),
				CaptureRequestBody: true, MaxContentChars: 200},
		}},
		Benchmarks: []Benchmark{{
			Key: "gsm8k#2", Name: "gsm8k", Dir: "gsm8k-2", Hash: "sha256:" + strings.Repeat("45", 32),
			Solver: Solver{
				Type: "simple", Service: "model", SystemPrompt: s("Think step by step."),
				Generation: gen, ImageDetail: "auto",
				// Every field set, though a simple solver has no tools
				// (the round trip must keep each).
				ResourceService: "tools", SandboxTools: true, MaxTurns: 50, ToolTimeout: 180,
				GymService: "g", GymAgent: "openhands", TrustReward: true,
				MaxOutputChars: 16384, ResponseMode: "last_message",
				OpenClaw: &OpenClaw{Bin: "openclaw", Thinking: "high", ContextWindow: 131072, MaxConcurrent: 4,
					IdleTimeoutSeconds: 600, RunTimeout: 900, TimeoutStrategy: "task", MaxAgentTimeout: 1200, SkipPreflight: true},
			},
			Repeats: 4, MaxProblems: i(100), MaxConcurrent: 64, Timeout: 1800,
			RequestTimeout: 120, MaxErrorRate: 0.01, ShuffleSeed: i64(-42), Fewshot: i(5),
			Params: map[string]any{"data_path": "data/gsm8k.jsonl", "k": 3.0, "subsets": []any{"a", "b"}},
			Scoring: Scoring{
				IncludeDefaults: true, Primary: s("judge"),
				Metrics: []Metric{{
					Type: "judge", Name: "judge", Service: "model", Rubric: s("Grade {{response}}."),
					RubricFile: s("rubric.txt"), SystemPrompt: s("You are a grader."),
					MaxScore: 10, Temperature: 0.1, MaxTokens: 512, Timeout: 60, MaxRetries: 2,
					AllowSelfJudge: true, ReferenceFree: true,
				}},
			},
			Sandbox: &Sandbox{
				Name: "py", Type: "docker", Image: "python:3.12", Memory: "2g", Cpus: 1.5,
				Timeout: 30, Concurrency: 8, Network: "none", MaxProcesses: 64,
				MaxFileSize: "10m", SlotsPerNode: 16, Env: map[string]string{"PYTHONHASHSEED": "0"},
				ECS: &ECS{Region: "us-west-2", Cluster: "c", SSMProject: "proj", Subnets: []string{"s"}, SecurityGroups: []string{"g"},
					AssignPublicIP: new(true), CPU: "2048", Memory: "4096", EphemeralStorageGiB: 30, ExecutionRoleARN: "arn:e",
					TaskRoleARN: "arn:t", LogGroup: "/l", LogStreamPrefix: "p", MaxTaskLifetimeSec: 60, ExecServerPort: 19542,
					NelRunImage: "nel:1"},
				ImageTemplate: "swebench/sweb.eval.x86_64.{instance_id}:latest",
				Pool:          true,
				SifCacheDir:   "/shared/sif",
			},
			SkipFailed: true, MaxSystemRetries: 3,
			Data:      []DataPin{pin},
			LocalData: []DataPin{{Spec: "data/gsm8k.jsonl", Digest: pin.Digest, Files: pin.Files}},
			// Every field set, though no recipe sets a pattern, a schema
			// and a command on one scorer (the round trip must keep each).
			BYOB: &BYOB{
				Dataset: "caps.jsonl", Prompt: "Capital of {country}? {{braces}}", Target: "capital",
				SystemPrompt: s("Answer briefly."), Category: "Geography",
				Fewshot: &BYOBFewshot{Dataset: "train.csv", N: 3, Answer: "{capital}"},
				Scorer: BYOBScorer{
					Name: "regex", Pattern: `(?i)answer:\s*(\w+)`, Letters: "ABCD", Test: "{test}\ncheck({entry_point})",
					Schema: `{"type":"object"}`, Command: []string{"python3", "score.py"}, Timeout: 12.5,
				},
				Verifier: []string{"bash", "-c", "{test_cmd}"},
			},
			Harness: &Harness{
				Kind: "lm-eval", Task: "gsm8k", Image: "nvcr.io/nvidia/nemo-evaluator:latest-lm-eval",
				Argv: []string{"lm_eval", "--tasks", "gsm8k"}, Config: "{}",
			},
			GymServer: "gym_cmd_0",
			Harbor: &HarborTasks{
				Dataset: "nel-smoke", Dir: "harbor_datasets/nel-smoke",
				Digest: "sha256:" + strings.Repeat("ef", 32), Tasks: 5,
				Git: &HarborGit{URL: "https://example.com/tb.git", Revision: strings.Repeat("ab", 20), Tasks: []string{"hello"}, Unsolvable: []string{"hello"}},
			},
			InstructionTemplate: "Fix {{ instance.problem_statement }} in {{ workspace_path }}.",
		}},
	}
}

// TestFullPlanIsFull checks that fullPlan sets every field of every struct
// type it holds to a value other than the zero value (in at least one
// place: a local data pin has no revision),
// so that a field added to Plan is round-tripped as soon as it exists, or
// this test names it.
func TestFullPlanIsFull(t *testing.T) {
	set := map[reflect.Type][]bool{} // per struct type, which fields were set somewhere
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			if set[v.Type()] == nil {
				set[v.Type()] = make([]bool, v.NumField())
			}
			for i := range v.NumField() {
				if !v.Field(i).IsZero() { // a zero field lost in the JSON would go unseen
					set[v.Type()][i] = true
				}
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(fullPlan()))
	if len(set) < 10 {
		t.Fatalf("only %d struct types reached", len(set))
	}
	for typ, fields := range set {
		for i, ok := range fields {
			if !ok {
				t.Errorf("fullPlan never sets %s.%s: give it a value that is not the zero value", typ.Name(), typ.Field(i).Name)
			}
		}
	}
}

// TestRoundTrip writes a plan with every field set as the compiler does
// (indented JSON) and reads it back with Read, as nel-run does.
func TestRoundTrip(t *testing.T) {
	want := fullPlan()
	b, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan-x.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("the plan changed in the round trip:\ngot  %s\nwant %s", g, b)
	}
}

// newFields are the fields added to Plan since testdata/suite-2720ac6.json
// was compiled, with what their absence reads as.
var newFields = map[string]any{
	"request_timeout": 0.0,                 // nel-run uses DefaultRequestTimeout
	"max_error_rate":  DefaultMaxErrorRate, // filled by Parse
}

// TestOlderPlanReads reads the plan the compiler wrote for
// examples/suite.cue at commit 2720ac6, before benchmarks had
// request_timeout, max_error_rate and local_data. It must read, lose
// nothing it says, and give the new fields the meaning their absence had.
func TestOlderPlanReads(t *testing.T) {
	path := filepath.Join("testdata", "suite-2720ac6.json")
	p, err := Read(path)
	if err != nil {
		t.Fatalf("an older plan no longer reads: %v", err)
	}
	if len(p.Benchmarks) != 5 || len(p.Services) != 2 {
		t.Fatalf("read %d benchmarks and %d services, want 5 and 2", len(p.Benchmarks), len(p.Services))
	}
	for _, b := range p.Benchmarks {
		if b.MaxErrorRate != DefaultMaxErrorRate {
			t.Errorf("%s: max_error_rate left out reads as %v, want the default %v", b.Key, b.MaxErrorRate, DefaultMaxErrorRate)
		}
		if b.RequestTimeout != 0 || b.LocalData != nil {
			t.Errorf("%s: request_timeout %v and local_data %v, want 0 (the default) and none", b.Key, b.RequestTimeout, b.LocalData)
		}
		if b.BYOB != nil {
			t.Errorf("%s: byob left out reads as %+v, want none (a built-in benchmark)", b.Key, b.BYOB)
		}
		if b.Harbor != nil || b.Solver.MaxTurns != 0 || b.Solver.SandboxTools || b.Solver.ResponseMode != "" {
			t.Errorf("%s: harbor %+v and solver %+v, want no tasks and no tool settings (a simple solver)", b.Key, b.Harbor, b.Solver)
		}
	}
	if sb := p.Benchmarks[3].Sandbox; sb == nil || sb.Type != "local" {
		t.Errorf("humaneval's sandbox is %+v, want the local one", sb)
	}

	// Written again, the plan says all the file said, and besides that
	// only the new fields.
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	if err := json.Unmarshal(old, &want); err != nil {
		t.Fatal(err)
	}
	for _, b := range want["benchmarks"].([]any) {
		for k, v := range newFields {
			b.(map[string]any)[k] = v
		}
	}
	again, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the older plan read differently from what it says:\ngot  %s\nwant %s", again, old)
	}
}

// TestUnknownFieldRefused checks the rule for fields this nel-run does not
// know: refused, with the field's name, wherever in the plan it is; open
// maps take any key.
func TestUnknownFieldRefused(t *testing.T) {
	edits := []struct {
		where string
		edit  func(p map[string]any)
	}{
		{"top level", func(p map[string]any) { p["shard_order"] = "random" }},
		{"a service", func(p map[string]any) { service(p)["tls"] = true }},
		{"a benchmark", func(p map[string]any) { benchmark(p)["max_tokens_total"] = 1000.0 }},
		{"a solver", func(p map[string]any) { benchmark(p)["solver"].(map[string]any)["tools"] = []any{"x"} }},
		{"a metric", func(p map[string]any) {
			scoring := benchmark(p)["scoring"].(map[string]any)
			scoring["metrics"].([]any)[0].(map[string]any)["weights"] = 2.0
		}},
		{"a sandbox", func(p map[string]any) { benchmark(p)["sandbox"].(map[string]any)["gpus"] = 1.0 }},
		{"a data pin", func(p map[string]any) { benchmark(p)["data"].([]any)[0].(map[string]any)["mirror"] = "x" }},
		{"harbor tasks", func(p map[string]any) { benchmark(p)["harbor"].(map[string]any)["registry"] = "x" }},
		{"a byob scorer", func(p map[string]any) {
			benchmark(p)["byob"].(map[string]any)["scorer"].(map[string]any)["weights"] = 2.0
		}},
	}
	for _, e := range edits {
		p := fullPlanJSON(t)
		e.edit(p)
		b, _ := json.Marshal(p)
		_, err := Parse(b)
		if err == nil {
			t.Errorf("an unknown field in %s was accepted", e.where)
			continue
		}
		if !strings.Contains(err.Error(), "unknown field") || !strings.Contains(err.Error(), "newer nel") {
			t.Errorf("an unknown field in %s: error %q does not say what is wrong", e.where, err)
		}
	}

	// The open maps: params, generation.extra_body, sandbox env.
	p := fullPlanJSON(t)
	benchmark(p)["params"].(map[string]any)["anything"] = "goes"
	benchmark(p)["sandbox"].(map[string]any)["env"].(map[string]any)["ANY"] = "x"
	service(p)["generation"].(map[string]any)["extra_body"].(map[string]any)["new_server_knob"] = 1.0
	b, _ := json.Marshal(p)
	if _, err := Parse(b); err != nil {
		t.Errorf("a new key in an open map was refused: %v", err)
	}
}

// TestOtherVersionRefused checks that a plan of another version is refused
// as such, even when it also has fields this version does not know.
func TestOtherVersionRefused(t *testing.T) {
	p := fullPlanJSON(t)
	p["plan_version"] = Version + 1.0
	p["services"] = map[string]any{"a": "reshaped"}
	p["new_field"] = true
	b, _ := json.Marshal(p)
	_, err := Parse(b)
	if err == nil || !strings.Contains(err.Error(), "plan version 2, this nel-run reads version 1") {
		t.Errorf("a version-2 plan: error %v, want one about the version", err)
	}
}

// TestMalformedRefused checks that a plan that is not JSON, or has a
// value of the wrong type, is refused by decode errors, not blamed on a
// newer nel.
func TestMalformedRefused(t *testing.T) {
	p := fullPlanJSON(t)
	p["shards"] = "4"
	typed, _ := json.Marshal(p)
	for _, b := range [][]byte{[]byte("{"), []byte(`{"plan_version": 1} {}`), typed} {
		_, err := Parse(b)
		if err == nil {
			t.Errorf("Parse(%.40q) accepted it", b)
			continue
		}
		if strings.Contains(err.Error(), "newer nel") {
			t.Errorf("Parse(%.40q): error %q blames a newer nel", b, err)
		}
	}
}

// fullPlanJSON is fullPlan as a generic JSON object, for editing.
func fullPlanJSON(t *testing.T) map[string]any {
	t.Helper()
	b, err := json.Marshal(fullPlan())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func service(p map[string]any) map[string]any   { return p["services"].([]any)[0].(map[string]any) }
func benchmark(p map[string]any) map[string]any { return p["benchmarks"].([]any)[0].(map[string]any) }

// TestLeaf checks that the contract imports nothing else of nel's: the
// compiler and nel-run share this package and nothing more, so it must not
// drag either side's code into the other.
func TestLeaf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	if len(files) == 0 {
		t.Fatal("no source files found")
	}
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "github.com/nel-eval/nel/") {
				t.Errorf("%s imports %s: runtime/plan must import nothing else of nel's", file, path)
			}
		}
	}
}
