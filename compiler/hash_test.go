package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hashBase is the recipe every hash case starts from. It has one value of
// each kind the hashes are meant to tell apart: methodology (prompt,
// sampling, scoring, judge, model, dataset, sandbox) and deployment (URL,
// partition, shards, walltime, output dir, concurrency).
const hashBase = `# the base recipe of hash_test.go
services:
  solver:
    type: api
    url: https://api.example.com/v1/chat/completions
    protocol: chat_completions
    model: org/solver-model
    api_key: ${NEL_HASH_TEST_KEY}
    generation:
      temperature: 1.0
      max_tokens: 1024
  judge:
    type: api
    url: https://judge.example.com/v1/chat/completions
    model: org/judge-model
    api_key: ${NEL_HASH_TEST_KEY}
sandboxes:
  box:
    type: docker
    image: python:3.12
benchmarks:
  - name: gsm8k
    repeats: 4
    max_problems: 50
    max_concurrent: 16
    shuffle_seed: 7
    system_prompt: "Think step by step. <b> & </b>"
    sandbox: box
    params:
      data_path: /data/gsm8k.jsonl
    solver:
      type: simple
      service: solver
      generation:
        top_p: 0.9
    scoring:
      primary: exact_match
      metrics:
        - type: scorer
          name: exact_match
        - type: judge
          name: correctness
          service: judge
cluster:
  type: slurm
  partition: batch
  walltime: "02:00:00"
  shards: 2
  node_pools:
    default:
      nodes: 1
output:
  dir: ./out/base
`

// hashBasePermuted is hashBase with every mapping's keys in another order
// and comments added: the same data.
const hashBasePermuted = `output: {dir: ./out/base}   # flow style too
cluster:
  node_pools:
    default:
      nodes: 1
  shards: 2
  walltime: "02:00:00"
  partition: batch
  type: slurm
benchmarks:
  # a comment inside a list
  - scoring:
      metrics:
        - name: exact_match
          type: scorer
        - service: judge
          name: correctness
          type: judge
      primary: exact_match
    solver:
      generation: {top_p: 0.9}
      service: solver
      type: simple
    params: {data_path: /data/gsm8k.jsonl}
    sandbox: box
    system_prompt: "Think step by step. <b> & </b>"
    shuffle_seed: 7
    max_concurrent: 16
    max_problems: 50
    repeats: 4
    name: gsm8k
sandboxes:
  box: {image: "python:3.12", type: docker}
services:
  judge:
    api_key: ${NEL_HASH_TEST_KEY}
    model: org/judge-model
    url: https://judge.example.com/v1/chat/completions
    type: api
  solver:
    generation: {max_tokens: 1024, temperature: 1.0}
    api_key: ${NEL_HASH_TEST_KEY}
    model: org/solver-model
    protocol: chat_completions
    url: https://api.example.com/v1/chat/completions
    type: api
`

// hashBaseCUE is hashBase written in CUE, with values CUE computes: a hidden
// field reused, arithmetic, interpolation and a comprehension.
const hashBaseCUE = `// The base recipe in CUE.
_key: "${NEL_HASH_TEST_KEY}"
_m: {solver: "org/solver-model", judge: "org/judge-model"}
_host: {solver: "api", judge: "judge"}

services: {
	for name, id in _m {
		(name): {
			type:    "api"
			url:     "https://\(_host[name]).example.com/v1/chat/completions"
			model:   id
			api_key: _key
		}
	}
	solver: protocol: "chat_completions"
	solver: generation: {temperature: 2 / 2, max_tokens: 32 * 32}
}
sandboxes: box: {type: "docker", image: "python:3.\(10+2)"}
benchmarks: [{
	name:           "gsm" + "8k"
	repeats:        2 * 2
	max_problems:   _m50
	max_concurrent: 16
	shuffle_seed:   7
	system_prompt:  "Think step by step. <b> & </b>"
	sandbox:        "box"
	params: data_path: "/data/\(name).jsonl"
	solver: {type: "simple", service: "solver", generation: top_p: 9 / 10}
	scoring: {
		primary: metrics[0].name
		metrics: [{type: "scorer", name: "exact_match"}, {type: "judge", name: "correctness", service: "judge"}]
	}
}]
_m50: 50
cluster: {
	type:      "slurm"
	partition: "batch"
	walltime:  "02:00:00"
	shards:    2
	node_pools: default: nodes: 1
}
output: dir: "./out/base"
`

// hashBaseJSON is hashBase as JSON.
const hashBaseJSON = `{
  "services": {
    "solver": {"type": "api", "url": "https://api.example.com/v1/chat/completions",
      "protocol": "chat_completions", "model": "org/solver-model", "api_key": "${NEL_HASH_TEST_KEY}",
      "generation": {"temperature": 1.0, "max_tokens": 1024}},
    "judge": {"type": "api", "url": "https://judge.example.com/v1/chat/completions",
      "model": "org/judge-model", "api_key": "${NEL_HASH_TEST_KEY}"}
  },
  "sandboxes": {"box": {"type": "docker", "image": "python:3.12"}},
  "benchmarks": [{
    "name": "gsm8k", "repeats": 4, "max_problems": 50, "max_concurrent": 16, "shuffle_seed": 7,
    "system_prompt": "Think step by step. \u003cb\u003e \u0026 \u003c/b\u003e", "sandbox": "box",
    "params": {"data_path": "/data/gsm8k.jsonl"},
    "solver": {"type": "simple", "service": "solver", "generation": {"top_p": 0.9}},
    "scoring": {"primary": "exact_match", "metrics": [
      {"type": "scorer", "name": "exact_match"},
      {"type": "judge", "name": "correctness", "service": "judge"}]}
  }],
  "cluster": {"type": "slurm", "partition": "batch", "walltime": "02:00:00", "shards": 2,
    "node_pools": {"default": {"nodes": 1}}},
  "output": {"dir": "./out/base"}
}
`

type hashEffect int

const (
	same    hashEffect = iota // the hash must not change
	changed                   // the hash must change
)

func (e hashEffect) String() string {
	if e == same {
		return "same"
	}
	return "changed"
}

// hashCase is one claim: the base recipe, changed by overrides (-O) or
// replaced by other text, keeps or changes each of the three hashes.
type hashCase struct {
	name   string
	over   []string // -O overrides applied to hashBase (or to text)
	path   string   // file name of text (decides the format)
	text   string   // replaces hashBase when set
	env    map[string]string
	recipe hashEffect
	plan   hashEffect
	bench  hashEffect // of the one benchmark, gsm8k
}

func hashCases() []hashCase {
	sameAll := func(c hashCase) hashCase { c.recipe, c.plan, c.bench = same, same, same; return c }
	deploy := func(name string, over ...string) hashCase {
		return hashCase{name: name, over: over, recipe: same, plan: changed, bench: same}
	}
	method := func(name string, over ...string) hashCase {
		return hashCase{name: name, over: over, recipe: changed, plan: changed, bench: changed}
	}
	return []hashCase{
		// Invariance: how the recipe is written.
		sameAll(hashCase{name: "keys permuted and comments added", path: "r.yaml", text: hashBasePermuted}),
		sameAll(hashCase{name: "comments stripped", path: "r.yaml", text: stripYAMLComments(hashBase)}),
		sameAll(hashCase{name: "written in CUE with computed values (2*2, hidden _m, comprehension, interpolation)", path: "r.cue", text: hashBaseCUE}),
		sameAll(hashCase{name: "written in JSON with \\u escapes", path: "r.json", text: hashBaseJSON}),
		sameAll(hashCase{name: "temperature 1 instead of 1.0", path: "r.yaml", text: strings.Replace(hashBase, "temperature: 1.0", "temperature: 1", 1)}),
		sameAll(hashCase{name: "temperature 1e0 instead of 1.0", path: "r.yaml", text: strings.Replace(hashBase, "temperature: 1.0", "temperature: 1e0", 1)}),
		sameAll(hashCase{name: "-O temperature=1 (int) over 1.0", over: []string{"services.solver.generation.temperature=1"}}),
		sameAll(hashCase{name: "-O repeats=4, the value it already has", over: []string{"benchmarks[0].repeats=4"}}),
		sameAll(hashCase{name: "-O on the CUE form", path: "r.cue", text: hashBaseCUE, over: []string{"benchmarks.0.repeats=4"}}),
		sameAll(hashCase{name: "api key env var set to one value", env: map[string]string{"NEL_HASH_TEST_KEY": "secret-one"}}),
		sameAll(hashCase{name: "api key env var set to another value", env: map[string]string{"NEL_HASH_TEST_KEY": "secret-two-$(x)"}}),

		// Deployment: the recipe and benchmark hashes stay, the plan hash moves.
		deploy("endpoint URL", "services.solver.url=https://other.example.org/v1/chat/completions"),
		deploy("judge endpoint URL", "services.judge.url=http://localhost:9000/v1/chat/completions"),
		deploy("cluster partition", "cluster.partition=interactive"),
		deploy("shard count", "cluster.shards=5"),
		deploy("walltime", "cluster.walltime=04:00:00"),
		deploy("output dir", "output.dir=/scratch/elsewhere"),
		deploy("max_concurrent", "benchmarks.0.max_concurrent=64"),
		deploy("node count of the pool", "cluster.node_pools.default.nodes=2"),
		// The recipe hash covers what requests carry, not where it was
		// written: a solver override equal to the service's value is the
		// same methodology (the plan hash, over the whole text, moves).
		deploy("solver temperature override equal to the service's", "benchmarks.0.solver.generation.temperature=1.0"),
		deploy("solver max_tokens override equal to the service's", "benchmarks.0.solver.generation.max_tokens=1024"),

		// Methodology: every hash moves.
		method("system prompt text", "benchmarks.0.system_prompt=Answer briefly."),
		method("system prompt: one trailing space", "benchmarks.0.system_prompt=Think step by step. <b> & </b> "),
		method("service-level temperature", "services.solver.generation.temperature=0.7"),
		method("solver-level temperature", "benchmarks.0.solver.generation.temperature=0.2"),
		method("service-level max_tokens", "services.solver.generation.max_tokens=2048"),
		method("solver-level max_tokens", "benchmarks.0.solver.generation.max_tokens=256"),
		method("repeats", "benchmarks.0.repeats=5"),
		method("max_problems", "benchmarks.0.max_problems=51"),
		method("max_problems removed (null)", "benchmarks.0.max_problems=null"),
		method("shuffle_seed", "benchmarks.0.shuffle_seed=8"),
		method("scorer metric name", "benchmarks.0.scoring.metrics.0.name=fuzzy_match", "benchmarks.0.scoring.primary=fuzzy_match"),
		method("judge model id", "services.judge.model=org/other-judge"),
		method("judge temperature", "benchmarks.0.scoring.metrics.1.temperature=0.5"),
		method("judge service temperature", "services.judge.generation.temperature=0.3"),
		method("judge metric max_tokens", "benchmarks.0.scoring.metrics.1.max_tokens=100"),
		method("judge rubric", "benchmarks.0.scoring.metrics.1.rubric=Be strict."),
		method("solver-level top_p", "benchmarks.0.solver.generation.top_p=0.5"),
		method("params: a new key", "benchmarks.0.params.split=test"),
		method("sandbox memory", "sandboxes.box.memory=8g"),
		method("benchmark name (dataset identity)", "benchmarks.0.name=mgsm"),
		// Data counts by its content (hashData writes the files): where it
		// lies is deployment, and one changed byte is another dataset.
		deploy("params.data_path: the same bytes at another absolute path", "benchmarks.0.params.data_path=/data/copy/gsm8k.jsonl"),
		deploy("params.data_path: relative to the recipe instead of absolute", "benchmarks.0.params.data_path=gsm8k.jsonl"),
		deploy("params.data_path: the folder holding the file instead of the file", "benchmarks.0.params.data_path=/data/folder"),
		method("params.data_path: one byte changed", "benchmarks.0.params.data_path=/data/changed/gsm8k.jsonl"),
		// A file's name decides its format, and a folder's file names their
		// order: the digest covers them (as nel-run's dataset digest does).
		method("params.data_path: the same bytes under another name", "benchmarks.0.params.data_path=/data/gsm8k-v2.jsonl"),
		method("sandbox image", "sandboxes.box.image=python:3.13"),
		// nel_scoring_version is a const (ScoringVersion): not mutable here.

		// Interceptors (ARCHITECTURE.md, "What the hashes cover"): a link
		// that changes what the model is sent or what nel reads back is
		// methodology; one that only watches or replays is deployment.
		withLinks("interceptor caching", same, "        - {name: caching, config: {cache_dir: /scratch/cache}}\n"),
		withLinks("interceptors logging, log_tokens, response_stats, progress_tracking", same,
			"        - {name: logging}\n        - {name: log_tokens}\n        - {name: response_stats, config: {every: 5}}\n        - {name: progress_tracking}\n"),
		withLinks("interceptor system_message", changed, "        - {name: system_message, config: {system_message: Be brief.}}\n"),
		withLinks("interceptor system_message with caching and logging", changed,
			"        - {name: logging}\n        - {name: system_message, config: {system_message: Be brief.}}\n        - {name: caching, config: {cache_dir: c}}\n"),
		withLinks("interceptor drop_params", changed, "        - {name: drop_params, config: {params: [seed]}}\n"),
		withLinks("interceptor payload_modifier", changed, "        - {name: payload_modifier, config: {params_to_add: {top_k: 20}}}\n"),
		withLinks("interceptor reasoning", changed, "        - {name: reasoning}\n"),
		// proxy.extra_body is sent to the model (a payload_modifier link,
		// chainOf); proxy.verbose only logs the calls (a logging link).
		withLinks("proxy.extra_body", changed, "        - {name: caching, config: {cache_dir: c}}\n      extra_body: {top_k: 20}\n"),
		withLinks("proxy.verbose", same, "        - {name: caching, config: {cache_dir: c}}\n      verbose: true\n"),

		// The evaluated model is methodology for the recipe, but not for
		// the benchmark: two models on one benchmark must compare.
		// protocol is part of the evaluated model's identity (modelIdentity),
		// so like the model id it stays out of the benchmark hash.
		{name: "protocol", over: []string{"services.solver.protocol=completions"}, recipe: changed, plan: changed, bench: same},
		{name: "evaluated model id", over: []string{"services.solver.model=org/candidate-model"}, recipe: changed, plan: changed, bench: same},
	}
}

// withLinks is the case of hashBase whose solver service has the
// interceptor chain links (YAML list items); effect is on the recipe and
// benchmark hashes (the plan hash covers the whole text, so it moves).
func withLinks(name string, effect hashEffect, links string) hashCase {
	const at = "    api_key: ${NEL_HASH_TEST_KEY}\n    generation:"
	text := strings.Replace(hashBase, at, "    api_key: ${NEL_HASH_TEST_KEY}\n    proxy:\n      interceptors:\n"+links+"    generation:", 1)
	return hashCase{name: name, path: "r.yaml", text: text, recipe: effect, plan: changed, bench: effect}
}

func stripYAMLComments(s string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// hashData writes the dataset hashBase reads (/data/gsm8k.jsonl) into a
// new directory, with a copy elsewhere, a copy in a folder, a copy under
// another name and a copy with one byte changed.
func hashData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	const data = `{"question":"1+1?","answer":"#### 2"}` + "\n"
	writeFiles(t, dir, map[string]string{
		"gsm8k.jsonl":         data,
		"copy/gsm8k.jsonl":    data,
		"folder/gsm8k.jsonl":  data,
		"gsm8k-v2.jsonl":      data,
		"changed/gsm8k.jsonl": strings.Replace(data, "2", "3", 1),
		"folder/README.md":    "not data: the loader skips it",
	})
	return dir
}

// loadHashedIn loads a recipe as if it were in dir, its /data/ paths
// pointing at dir (hashData's files).
func loadHashedIn(t *testing.T, l *Loader, dir, path, text string, over []string) Hashes {
	t.Helper()
	r := strings.NewReplacer("/data/", dir+"/")
	var o2 []string
	for _, o := range over {
		o2 = append(o2, r.Replace(o))
	}
	return loadHashed(t, l, filepath.Join(dir, path), r.Replace(text), o2)
}

func loadHashed(t *testing.T, l *Loader, path, text string, over []string) Hashes {
	t.Helper()
	var ovs []Override
	for _, o := range over {
		x, err := ParseOverride(o)
		if err != nil {
			t.Fatalf("ParseOverride(%q): %v", o, err)
		}
		ovs = append(ovs, x)
	}
	s, err := l.Load(path, []byte(text), ovs)
	if err != nil {
		t.Fatalf("load %s %v: %v", path, over, err)
	}
	h, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatalf("hash %s %v: %v", path, over, err)
	}
	return h
}

func TestHashTable(t *testing.T) {
	os.Unsetenv("NEL_HASH_TEST_KEY")
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	dir := hashData(t)
	base := loadHashedIn(t, l, dir, "base.yaml", hashBase, nil)
	if len(base.BenchmarkKeys()) != 1 || base.BenchmarkKeys()[0] != "gsm8k" {
		t.Fatalf("benchmark keys %v, expected [gsm8k]", base.BenchmarkKeys())
	}
	for _, c := range hashCases() {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			path, text := "base.yaml", hashBase
			if c.text != "" {
				path, text = c.path, c.text
			}
			h := loadHashedIn(t, l, dir, path, text, c.over)
			check := func(what string, want hashEffect, a, b string) {
				t.Helper()
				got := same
				if a != b {
					got = changed
				}
				if got != want {
					t.Errorf("%s hash: expected %v, got %v (%s vs base %s)", what, want, got, b, a)
				}
			}
			check("recipe", c.recipe, base.Recipe, h.Recipe)
			check("plan", c.plan, base.Plan, h.Plan)
			check("benchmark", c.bench, base.Benchmarks["gsm8k"], h.Benchmarks[h.BenchmarkKeys()[0]])
		})
	}
}

// TestHashRecipeMovesPlan: whatever moves the recipe hash moves the plan
// hash, since the plan hash covers it.
func TestHashRecipeMovesPlan(t *testing.T) {
	for _, c := range hashCases() {
		if c.recipe == changed && c.plan != changed {
			t.Errorf("%s: claims the recipe hash moves but not the plan hash", c.name)
		}
	}
}

func TestHashFormat(t *testing.T) {
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	h := loadHashedIn(t, l, hashData(t), "base.yaml", hashBase, nil)
	for _, x := range []string{h.Recipe, h.Plan, h.Benchmarks["gsm8k"]} {
		if !strings.HasPrefix(x, "sha256:") || len(x) != len("sha256:")+64 || strings.Trim(x[7:], "0123456789abcdef") != "" {
			t.Errorf("hash %q: expected sha256:<64 lowercase hex>", x)
		}
	}
	if h.Recipe == h.Plan || h.Recipe == h.Benchmarks["gsm8k"] {
		t.Errorf("the three hashes should differ: %+v", h)
	}
}

// TestHashDoesNotReadEnv: the hash of a recipe whose api_key (and an
// extra_env value) reference the environment is the same with the
// variables unset, set, and set differently.
func TestHashDoesNotReadEnv(t *testing.T) {
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	const src = `
services: m: {type: "api", url: "https://x.example.com/v1/chat/completions", model: "a/b", api_key: "${NEL_HASH_ENV_A}"}
services: v: {type: "vllm", model: "c/d", extra_env: {TOKEN: "${NEL_HASH_ENV_B:-dflt}"}}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "m"}}, {name: "gsm8k", solver: {type: "simple", service: "v"}}]
`
	os.Unsetenv("NEL_HASH_ENV_A")
	os.Unsetenv("NEL_HASH_ENV_B")
	want := loadHashed(t, l, "e.cue", src, nil)
	for _, env := range []map[string]string{
		{"NEL_HASH_ENV_A": "one"},
		{"NEL_HASH_ENV_A": "two", "NEL_HASH_ENV_B": "three"},
		{"NEL_HASH_ENV_A": "", "NEL_HASH_ENV_B": ""},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		got := loadHashed(t, l, "e.cue", src, nil)
		if got.Recipe != want.Recipe || got.Plan != want.Plan || got.Benchmarks["gsm8k"] != want.Benchmarks["gsm8k"] || got.Benchmarks["gsm8k#2"] != want.Benchmarks["gsm8k#2"] {
			t.Errorf("env %v changed a hash:\n%+v\n%+v", env, got, want)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct {
		name string
		in   any
		want string
	}{
		{"sorted keys", map[string]any{"b": 1, "a": 2, "B": 3, "aa": 4}, `{"B":3,"a":2,"aa":4,"b":1}`},
		{"nested sorted, no whitespace", map[string]any{"z": []any{map[string]any{"y": 1, "x": 2}}, "a": map[string]any{"d": true, "c": nil}}, `{"a":{"c":null,"d":true},"z":[{"x":2,"y":1}]}`},
		{"struct keys sorted too", struct {
			Zeta  int `json:"zeta"`
			Alpha int `json:"alpha"`
		}{1, 2}, `{"alpha":2,"zeta":1}`},
		{"no HTML escaping", "<a href=\"x\">&amp;</a>", `"<a href=\"x\">&amp;</a>"`},
		{"control characters escaped", "a\nb\tc\u0001", `"a\nb\tc\u0001"`},
		{"unicode kept", "héllo → 世界 🎉", `"héllo → 世界 🎉"`},
		{"unicode key", map[string]any{"é": 1, "z": 2}, `{"z":2,"é":1}`},
		{"float 1.0 is 1", 1.0, `1`},
		{"int 1", 1, `1`},
		{"1e21", 1e21, `1e+21`},
		{"1e20 written out", 1e20, `100000000000000000000`},
		{"1e-7", 1e-7, `1e-7`},
		{"1e-6 written out", 1e-6, `0.000001`},
		{"0.1", 0.1, `0.1`},
		{"-0", negZero(), `0`},
		{"-1.5", -1.5, `-1.5`},
		{"big int kept whole", int64(123456789012345678), `123456789012345678`},
		{"uint64 max kept whole", uint64(18446744073709551615), `18446744073709551615`},
		{"empty", map[string]any{"a": []any{}, "b": map[string]any{}, "c": ""}, `{"a":[],"b":{},"c":""}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Canonical(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("Canonical(%#v) = %s, expected %s", c.in, got, c.want)
			}
		})
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

// TestCanonicalNumberText: the same number in any JSON spelling has one
// canonical form.
func TestCanonicalNumberText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10E-1", "1"}, {"-0", "0"}, {"-0.0", "0"},
		{"0.1", "0.1"}, {"1e21", "1e+21"}, {"1E21", "1e+21"}, {"1e-7", "1e-7"}, {"0.0000001", "1e-7"},
		{"123456789012345678", "123456789012345678"}, {"1.5e300", "1.5e+300"}, {"2.50", "2.5"},
	} {
		got, err := canonicalNumber(c.in)
		if err != nil || got != c.want {
			t.Errorf("canonicalNumber(%s) = %q, %v; expected %s", c.in, got, err, c.want)
		}
	}
	if _, err := canonicalNumber("1e400"); err == nil {
		t.Error("canonicalNumber(1e400): expected an out-of-range error")
	}
}

// TestCanonicalCUEValue: a cue.Value reaches the same form as plain data.
func TestCanonicalCUEValue(t *testing.T) {
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	v := l.ctx.CompileString(`{b: 2.0, a: "<&>", _hidden: 1, c: [1.0, 1e21]}`)
	got, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"<&>","b":2,"c":[1,1e+21]}`; string(got) != want {
		t.Errorf("Canonical(cue) = %s, expected %s", got, want)
	}
}

// TestHashBigIntegers: integers beyond int64 in params (CUE ints are
// unbounded) keep every digit, so recipes that differ only there do not
// share a hash.
func TestHashBigIntegers(t *testing.T) {
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	const src = `
services: m: {type: "api", url: "https://x.example.com/v1/chat/completions", model: "a/b"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "m"}, params: n: %s}]
`
	seen := map[string]string{}
	for _, n := range []string{"18446744073709551615", "18446744073709551614", "100000000000000000000001", "100000000000000000000000", "9223372036854775807"} {
		h := loadHashed(t, l, "big.cue", strings.Replace(src, "%s", n, 1), nil)
		if other, dup := seen[h.Benchmarks["gsm8k"]]; dup {
			t.Errorf("params.n %s and %s give the same benchmark hash", n, other)
		}
		seen[h.Benchmarks["gsm8k"]] = n
	}
}
