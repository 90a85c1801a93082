package compiler

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const policyYAML = `# NeMo Evaluator's format
version: 1
defaults:
  tier: supporting
  max_drop: 0.015
  max_relative_drop: null
  metric: mean_reward
  direction: higher_is_better
benchmarks:
  gsm8k:
    tier: critical
    max_drop: 0.01
  mmlu:
    max_relative_drop: 0.1
    relative_guard_below: 0.5
  exact:
    metric: scorer:exact_match
  triviaqa:
    tier: advisory
    metric: pass@4
`

const policyCUE = `version: 1
defaults: {
	tier:     "supporting"
	max_drop: 0.015
	metric:   "mean_reward"
	direction: "higher_is_better"
}
benchmarks: {
	gsm8k: {tier: "critical", max_drop: 0.01}
	mmlu: {max_relative_drop: 0.1, relative_guard_below: 0.5}
	exact: metric: "scorer:exact_match"
	triviaqa: {tier: "advisory", metric: "pass@4"}
}
`

func writePolicy(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicyYAMLAndCUEAgree(t *testing.T) {
	y, err := LoadPolicyFile(writePolicy(t, "p.yaml", policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadPolicyFile(writePolicy(t, "p.cue", policyCUE))
	if err != nil {
		t.Fatal(err)
	}
	y.Path, c.Path = "", ""
	if !reflect.DeepEqual(y, c) {
		t.Fatalf("YAML %+v\nCUE  %+v", y, c)
	}
	r := y.Resolve("gsm8k")
	if r.Tier != "critical" || r.MaxDrop != 0.01 || r.Metric != "mean_reward" || !r.Listed {
		t.Fatalf("gsm8k = %+v", r)
	}
	r = y.Resolve("mmlu")
	if r.Tier != "supporting" || r.MaxDrop != 0.015 || *r.MaxRelativeDrop != 0.1 || *r.RelativeGuardBelow != 0.5 {
		t.Fatalf("mmlu = %+v", r)
	}
	if got := y.Required(); !reflect.DeepEqual(got, []string{"exact", "gsm8k", "mmlu"}) {
		t.Fatalf("required = %v", got)
	}
	if r := y.Resolve("unlisted"); r.Listed || r.Tier != "supporting" {
		t.Fatalf("unlisted = %+v", r)
	}
}

func TestPolicyErrors(t *testing.T) {
	cases := []struct {
		name, file, src string
		want            []string
	}{
		{"unknown key", "p.yaml", "version: 1\nbenchmarks:\n  gsm8k:\n    metric: mean_reward\n    max_dorp: 0.1\n",
			[]string{`p.yaml:5:5: benchmarks.gsm8k.max_dorp: unknown field "max_dorp" (did you mean "max_drop"?)`}},
		{"unknown top-level key", "p.yaml", "version: 1\ngates: {}\n",
			[]string{`p.yaml:2:1: gates: unknown field "gates"`}},
		{"bad tier", "p.yaml", "version: 1\nbenchmarks:\n  gsm8k:\n    tier: crit\n    metric: mean_reward\n",
			[]string{`p.yaml:4:11: benchmarks.gsm8k.tier: expected one of "advisory", null, "critical", "supporting", found "crit"`}},
		{"negative max_drop", "p.yaml", "version: 1\ndefaults:\n  max_drop: -0.01\n",
			[]string{`p.yaml:3:13: defaults.max_drop: expected one of null, >=0, found -0.01`}},
		{"guard out of range", "p.yaml", "version: 1\ndefaults:\n  relative_guard_below: 1.5\n",
			[]string{`p.yaml:3:25: defaults.relative_guard_below: expected one of null, <=1, found 1.5`}},
		{"bad direction", "p.cue", "version: 1\ndefaults: direction: \"up\"\n",
			[]string{`p.cue:2:22: defaults.direction: expected one of "higher_is_better", "lower_is_better", null, found "up"`}},
		{"version 2", "p.yaml", "version: 2\n",
			[]string{`p.yaml:1:10: version: expected 1, found 2`}},
		{"no version", "p.yaml", "benchmarks: {}\n",
			[]string{`version: missing required field`}},
		{"wrong type", "p.json", "{\"version\": 1, \"defaults\": {\"max_drop\": \"big\"}}",
			[]string{`p.json:1:41: defaults.max_drop: expected one of null, number, found "big"`}},
		{"gated metric not pairable", "p.yaml", "version: 1\nbenchmarks:\n  gsm8k:\n    metric: pass@4\n",
			[]string{`p.yaml:4:5: benchmarks.gsm8k.metric: metric "pass@4" cannot gate: expected mean_reward, pass@1 or scorer:<name>`}},
		{"gated without metric", "p.yaml", "version: 1\nbenchmarks:\n  gsm8k:\n    tier: critical\n",
			[]string{`p.yaml:3:3: benchmarks.gsm8k: a gated benchmark needs a metric`}},
		{"several at once", "p.yaml", "version: 2\ndefaults:\n  tier: crit\n  colour: red\n",
			[]string{`p.yaml:1:10: version: expected 1`, `p.yaml:3:9: defaults.tier: expected one of`, `p.yaml:4:3: defaults.colour: unknown field "colour"`}},
	}
	for _, tc := range cases {
		path := writePolicy(t, tc.file, tc.src)
		_, err := LoadPolicyFile(path)
		var es Errors
		if !errors.As(err, &es) {
			t.Errorf("%s: err = %v, want Errors", tc.name, err)
			continue
		}
		got := strings.ReplaceAll(es.Error(), filepath.Dir(path)+string(filepath.Separator), "")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s:\n got %s\nwant %s", tc.name, got, w)
			}
		}
	}
}
