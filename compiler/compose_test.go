package compiler

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue/ast"
)

// mapEnv is an environment for Loader.LookupEnv.
func mapEnv(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

// dataJSON evaluates YAML syntax (after x is built) to JSON.
func dataJSON(t *testing.T, x ast.Expr) string {
	t.Helper()
	l := newTestLoader(t)
	v := l.ctx.BuildExpr(x)
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func yamlStruct(t *testing.T, src string) *ast.StructLit {
	t.Helper()
	x, err := parseData("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return x.(*ast.StructLit)
}

func TestDeepMerge(t *testing.T) {
	for _, c := range []struct{ name, base, over, want string }{
		{"mappings merge field by field", "a: {x: 1, y: 2}", "a: {y: 3, z: 4}", `{"a":{"x":1,"y":3,"z":4}}`},
		{"lists are replaced", "a: [1, 2, 3]", "a: [4]", `{"a":[4]}`},
		{"a scalar replaces a mapping", "a: {x: 1}", "a: 5", `{"a":5}`},
		{"a mapping replaces a scalar", "a: 5", "a: {x: 1}", `{"a":{"x":1}}`},
		{"null deletes an inherited field", "a: {x: 1, y: 2}\nb: 1", "a: {x: null}\nb: null", `{"a":{"y":2}}`},
		{"a null over nothing stays", "a: 1", "b: null", `{"a":1,"b":null}`},
		{"base order first, new fields after", "b: 1\na: 2", "c: 3\na: 4", `{"b":1,"a":4,"c":3}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := dataJSON(t, deepMerge(yamlStruct(t, c.base), yamlStruct(t, c.over)))
			if got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestExpandString(t *testing.T) {
	env := mapEnv(map[string]string{"A": "alpha", "EMPTY": "", "N": "12"})
	for _, c := range []struct {
		in, want string
		whole    bool
		err      string
	}{
		{in: "${A}", want: "alpha", whole: true},
		{in: "x-${A}-y", want: "x-alpha-y"},
		{in: "${EMPTY:-d}", want: "", whole: true}, // set, even if empty, as in NeMo Evaluator
		{in: "${UNSET:-fallback value}", want: "fallback value", whole: true},
		{in: "${UNSET:-}", want: "", whole: true},
		{in: "$${A}", want: "${A}"},
		{in: "$${A} and ${A}", want: "${A} and alpha"},
		{in: "${.self.ref}", want: "${.self.ref}"}, // not an environment reference
		{in: "$A and $(x)", want: "$A and $(x)"},
		{in: "${UNSET}", err: "environment variable UNSET is not set and ${UNSET} has no default (set it, or write ${UNSET:-default})"},
	} {
		got, whole, err := expandString(c.in, env)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || whole != c.whole {
			t.Errorf("%q: got %q whole=%v err=%v, want %q whole=%v", c.in, got, whole, err, c.want, c.whole)
		}
	}
}

func TestKeepsReferences(t *testing.T) {
	for _, c := range []struct {
		path []any
		want bool
	}{
		{[]any{"services", "m", "api_key"}, true},
		{[]any{"services", "m", "extra_env", "HF_TOKEN"}, true},
		{[]any{"cluster", "container_env", "X"}, true},
		{[]any{"sandboxes", "s", "container_env", "X"}, true},
		{[]any{"benchmarks", 0, "solver", "env_vars", "X"}, true},
		{[]any{"services", "m", "proxy", "extra_headers", "Authorization"}, true},
		{[]any{"services", "m", "url"}, false},
		{[]any{"services", "m", "extra_env"}, false}, // the map itself holds no text
		{[]any{"benchmarks", 0, "params", "api_key"}, false},
		{[]any{"cluster", "container_mounts", 0}, false},
	} {
		if got := keepsReferences(c.path); got != c.want {
			t.Errorf("%v: got %v, want %v", c.path, got, c.want)
		}
	}
}

// loadIn writes files to a temporary directory and loads main from there
// with the environment env.
func loadIn(t *testing.T, files map[string]string, main string, env map[string]string) (*Source, error) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	l := newTestLoader(t)
	l.LookupEnv = mapEnv(env)
	return l.LoadFile(filepath.Join(dir, main), nil)
}

const composeService = `services:
  m: {type: api, url: "http://127.0.0.1:8000/v1", model: m}
`

// TestEnvTyped: a string that is one ${VAR} is read as a number where the
// schema wants one, as NeMo Evaluator's schema coerces it, and stays text
// where the schema wants text.
func TestEnvTyped(t *testing.T) {
	s, err := loadIn(t, map[string]string{"r.yaml": composeService + `benchmarks:
  - name: gsm8k
    max_problems: ${N}
    repeats: ${R:-3}
    system_prompt: ${N}
    shuffle_seed: ${SEED:-null}
    solver: {type: simple, service: m, generation: {temperature: "${T}"}}
`}, "r.yaml", map[string]string{"N": "4", "T": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	b := s.Recipe.Benchmarks[0]
	if b.MaxProblems == nil || *b.MaxProblems != 4 || b.Repeats != 3 || b.SystemPrompt == nil || *b.SystemPrompt != "4" || b.ShuffleSeed != nil {
		t.Errorf("max_problems %v, repeats %d, system_prompt %v, shuffle_seed %v; want 4, 3, \"4\", nil", b.MaxProblems, b.Repeats, b.SystemPrompt, b.ShuffleSeed)
	}
	if g := b.Solver.Generation; g == nil || g.Temperature == nil || *g.Temperature != 0.5 {
		t.Errorf("temperature %+v, want 0.5", g)
	}
}

func TestSelfRefs(t *testing.T) {
	s, err := loadIn(t, map[string]string{"r.yaml": `_common:
  limit: 6
  model: org/m
  flag: true
  name: ${._common.model}-x
services:
  m: {type: api, url: "http://127.0.0.1:8000/v1", model: "${._common.name}"}
benchmarks:
  - name: gsm8k
    max_problems: ${._common.limit}
    system_prompt: "limit ${._common.limit}, flag ${._common.flag}"
    solver: {type: simple, service: m}
`}, "r.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Recipe.Benchmarks[0]
	if got := s.Recipe.Services["m"].Model; got != "org/m-x" {
		t.Errorf("model %q, want org/m-x (a reference inside the referenced text resolves too)", got)
	}
	if b.MaxProblems == nil || *b.MaxProblems != 6 {
		t.Errorf("max_problems %v, want 6", b.MaxProblems)
	}
	// Python's str() of True, as NeMo Evaluator writes it.
	if b.SystemPrompt == nil || *b.SystemPrompt != "limit 6, flag True" {
		t.Errorf("system_prompt %v", b.SystemPrompt)
	}
	if _, err := json.Marshal(s.Recipe); err != nil || strings.Contains(canonicalText(t, s), "_common") {
		t.Errorf("the _common variables were not dropped: %s", canonicalText(t, s))
	}
}

func canonicalText(t *testing.T, s *Source) string {
	t.Helper()
	b, err := Canonical(s.Value)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestComposeErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"self-reference cycle", map[string]string{"r.yaml": "_a: ${._b}\n_b: ${._a}\n" + composeService + "benchmarks: [{name: gsm8k, solver: {type: simple, service: m}}]\n"},
			"r.yaml:1:5: _a: ${._b} refers to itself: _b → _a → _b"},
		{"self-reference to a mapping", map[string]string{"r.yaml": "_a: {x: 1}\n" + composeService + "benchmarks: [{name: \"${._a}\", solver: {type: simple, service: m}}]\n"},
			"r.yaml:4:21: benchmarks[0].name: ${._a} is a mapping or list; only a string, number, boolean or null can be put into a string"},
		{"defaults not a list", map[string]string{"r.yaml": "defaults: clusters/x\n"},
			"r.yaml:1:11: defaults: expected a list of fragment names, {_base_: file} entries and _self_"},
		{"a bad entry", map[string]string{"r.yaml": "defaults:\n  - 5\n"},
			"r.yaml:2:5: defaults[0]: expected a fragment name (\"group/name\" or \"name\"), {_base_: file} or _self_"},
		{"a v1 launcher (Hydra) entry", map[string]string{"r.yaml": "defaults:\n  - execution: local\n"},
			"r.yaml:2:5: defaults[0]: not supported yet: a {group: option} entry, the v1 launcher's (Hydra) format; name a fragment as \"group/name\""},
		{"a base that is not there", map[string]string{"r.yaml": "defaults:\n  - _base_: nope.yaml\n"},
			"r.yaml:2:13: defaults[0]._base_: base config \"nope.yaml\" not found next to "},
		{"a fragment that is a list", map[string]string{"r.yaml": "defaults: [services/l]\n", "conf/services/l.yaml": "- 1\n"},
			"l.yaml:1:1: expected a mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadIn(t, c.files, "r.yaml", nil)
			if err == nil {
				t.Fatal("loaded")
			}
			if got := filepath.Base(err.Error()); !strings.Contains(err.Error(), c.want) && !strings.HasPrefix(got, c.want) {
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestComposeSelfLast: without _self_ the file itself is merged last, so
// its values win over its defaults; with _self_ first, the defaults win.
func TestComposeSelfLast(t *testing.T) {
	files := map[string]string{
		"conf/over.yaml": "output: {dir: from-fragment}\n",
		"last.yaml":      "defaults: [over]\noutput: {dir: from-self}\n" + composeService + "benchmarks: [{name: gsm8k, solver: {type: simple, service: m}}]\n",
		"first.yaml":     "defaults: [_self_, over]\noutput: {dir: from-self}\n" + composeService + "benchmarks: [{name: gsm8k, solver: {type: simple, service: m}}]\n",
	}
	for main, want := range map[string]string{"last.yaml": "from-self", "first.yaml": "from-fragment"} {
		s, err := loadIn(t, files, main, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Recipe.Output.Dir; got != want {
			t.Errorf("%s: output.dir %q, want %q", main, got, want)
		}
		if len(s.Files) != 2 || filepath.Base(s.Files[1]) != "over.yaml" {
			t.Errorf("%s: files %v, want the recipe and conf/over.yaml", main, s.Files)
		}
	}
}

// TestComposeBuiltinDefaults: clusters/local is found among nel's own
// defaults when no conf/ directory has it, as NeMo Evaluator ships it.
func TestComposeBuiltinDefaults(t *testing.T) {
	s, err := loadIn(t, map[string]string{"r.yaml": "defaults: [clusters/local]\n" + composeService + "benchmarks: [{name: gsm8k, solver: {type: simple, service: m}}]\n"}, "r.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Recipe.Cluster.Type != "local" || s.Files[1] != "nel/compiler/conf/clusters/local.yaml" {
		t.Errorf("cluster %q from %v", s.Recipe.Cluster.Type, s.Files)
	}
}

// TestBuiltinPlaybooksValidate: every playbook nel ships validates in a
// recipe that has the services it names.
func TestBuiltinPlaybooksValidate(t *testing.T) {
	names := Playbooks()
	if len(names) != 6 {
		t.Fatalf("playbooks %v, want NeMo Evaluator's six", names)
	}
	for _, name := range names {
		src := `services:
  model: {type: api, url: "https://m.example.com/v1/chat/completions", model: m}
  judge: {type: api, url: "https://j.example.com/v1/chat/completions", model: j}
benchmarks:
  - playbook: ` + name + "\n"
		s, err := loadIn(t, map[string]string{"r.yaml": src}, "r.yaml", nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if b := s.Recipe.Benchmarks[0]; b.Name == "" || b.Solver.Service != "model" {
			t.Errorf("%s: name %q, solver service %q", name, b.Name, b.Solver.Service)
		}
	}
}

// TestCUEEnv: a CUE recipe's ${VAR} expands as a YAML recipe's does, and
// its api_key stays a reference.
func TestCUEEnv(t *testing.T) {
	l := newTestLoader(t)
	l.LookupEnv = mapEnv(map[string]string{"HOST": "h.example.com", "KEY": "secret-value"})
	s, err := l.Load("r.cue", []byte(`services: m: {type: "api", url: "https://${HOST}/v1", model: "m", api_key: "${KEY}"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "m"}}]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	sv := s.Recipe.Services["m"]
	if sv.URL != "https://h.example.com/v1" || sv.APIKey != "${KEY}" {
		t.Errorf("url %q, api_key %q", sv.URL, sv.APIKey)
	}
	if strings.Contains(canonicalText(t, s), "secret-value") {
		t.Error("the key's value reached the canonical recipe")
	}
}

// TestEnvInOverride: an -O value expands like the file's strings (NeMo
// Evaluator expands after applying overrides); an unset variable in it is
// the override's error.
func TestEnvInOverride(t *testing.T) {
	l := newTestLoader(t)
	l.LookupEnv = mapEnv(map[string]string{"P": "be brief"})
	src := []byte(composeService + "benchmarks: [{name: gsm8k, solver: {type: simple, service: m}}]\n")
	ov, err := ParseOverride("benchmarks[0].system_prompt=${P}")
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Load("r.yaml", src, []Override{ov})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Recipe.Benchmarks[0].SystemPrompt; p == nil || *p != "be brief" {
		t.Errorf("system_prompt %v, want be brief", p)
	}
	ov, _ = ParseOverride("benchmarks[0].system_prompt=${UNSET_P}")
	_, err = l.Load("r.yaml", src, []Override{ov})
	want := "-O benchmarks[0].system_prompt=${UNSET_P}: benchmarks[0].system_prompt: environment variable UNSET_P is not set and ${UNSET_P} has no default (set it, or write ${UNSET_P:-default})"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestEnvTypedError: a ${VAR} whose value fits no reading says what was
// expected and the text it expanded to.
func TestEnvTypedError(t *testing.T) {
	_, err := loadIn(t, map[string]string{"r.yaml": composeService + `benchmarks:
  - name: gsm8k
    repeats: ${N}
    solver: {type: simple, service: m}
`}, "r.yaml", map[string]string{"N": "-1"})
	if err == nil || !strings.HasSuffix(err.Error(), `r.yaml:5:14: benchmarks[0].repeats: expected >=1, found "-1"`) {
		t.Errorf("got %v", err)
	}
}

// TestSecretRefs: a variable named like a secret is never expanded into
// the recipe: a url keeps it for the node, any other field refuses it,
// and a field that keeps references keeps it as ever.
func TestSecretRefs(t *testing.T) {
	env := map[string]string{"MY_API_KEY": "sk-123", "HF_TOKEN": "hf-456", "HOST": "h.example"}
	s, err := loadIn(t, map[string]string{"r.yaml": `services:
  m: {type: api, url: "https://${HOST}/v1?key=${MY_API_KEY}", model: m, api_key: "${MY_API_KEY}"}
benchmarks:
  - name: gsm8k
    solver: {type: simple, service: m}
`}, "r.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Recipe.Services["m"].URL; got != "https://${HOST}/v1?key=${MY_API_KEY}" {
		t.Errorf("url %q: want it as written, resolved on the node", got)
	}
	_, err = loadIn(t, map[string]string{"r.yaml": composeService + `benchmarks:
  - name: gsm8k
    system_prompt: "token ${HF_TOKEN}"
    solver: {type: simple, service: m}
`}, "r.yaml", env)
	if err == nil || !strings.Contains(err.Error(), "r.yaml:5:20: benchmarks[0].system_prompt: ${HF_TOKEN} names a secret") {
		t.Errorf("a secret in a system prompt: error %v, want one at r.yaml:5:20 naming ${HF_TOKEN}", err)
	}
	if _, ok := secretRef("$${NVIDIA_API_KEY} and ${HOST}"); ok {
		t.Error("an escaped $${NVIDIA_API_KEY} counted as a reference")
	}
}
