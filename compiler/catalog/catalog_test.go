package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nel-eval/nel/compiler"
)

// Every scorer nel list names is one a recipe may use: the schema accepts
// it in scoring.metrics, and each has its line of explanation.
func TestScorersAreUsable(t *testing.T) {
	l, err := compiler.NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	scorers := Scorers()
	if len(scorers) < 7 {
		t.Fatalf("%d scorers listed, want the 7 of NeMo's names", len(scorers))
	}
	for _, s := range scorers {
		if s.About == "" {
			t.Errorf("scorer %s has no explanation", s.Name)
		}
		src := fmt.Sprintf(`services: m: {type: "api", url: "http://h/v1", model: "x"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "m"}, scoring: metrics: [{type: "scorer", name: %q}]}]
`, s.Name)
		if _, err := l.Load("r.cue", []byte(src), nil); err != nil {
			t.Errorf("scorer %s listed, but a recipe naming it does not load: %v", s.Name, err)
		}
	}
}

// The sources marked supported are the ones nel compiles; the others are
// refused with "not supported yet" at the benchmark's name.
func TestSourcesAgreeWithTheCompiler(t *testing.T) {
	l, err := compiler.NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range compiler.Sources() {
		if k.Field != "benchmarks[].name" || k.Form == "NAME" {
			continue
		}
		src := fmt.Sprintf(`services: m: {type: "api", url: "http://h/v1", model: "x"}
benchmarks: [{name: %q, solver: {type: "simple", service: "m"}}]
`, k.Form)
		s, err := l.Load("r.cue", []byte(src), nil)
		if err != nil {
			t.Fatalf("%s: %v", k.Form, err)
		}
		notes := compiler.Unsupported(s).Error()
		refused := strings.Contains(notes, "benchmarks[0].name: not supported yet: benchmark source")
		if refused == k.Supported {
			t.Errorf("%s: listed supported=%v, but the compiler's notes are %q", k.Form, k.Supported, notes)
		}
	}
}

// --format json: the documented field names, items null where unknown
// (drop's size is not known without its data) and a number where known.
func TestBenchmarksJSON(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "benchmarks", "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Benchmarks []map[string]any `json:"benchmarks"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, e := range got.Benchmarks {
		for _, k := range []string{"name", "category", "source", "items", "scorer", "needs_sandbox", "needs_judge"} {
			if _, ok := e[k]; !ok {
				t.Errorf("%v: no field %q", e["name"], k)
			}
		}
		byName[e["name"].(string)] = e
	}
	if v := byName["drop"]["items"]; v != nil {
		t.Errorf("drop items = %v, want null (unknown)", v)
	}
	if v := byName["gsm8k"]["items"]; v != 1319.0 {
		t.Errorf("gsm8k items = %v, want 1319", v)
	}
	if v := byName["humaneval"]["needs_sandbox"]; v != true {
		t.Errorf("humaneval needs_sandbox = %v", v)
	}
	if v := byName["simpleqa"]["needs_judge"]; v != true {
		t.Errorf("simpleqa needs_judge = %v", v)
	}
}
