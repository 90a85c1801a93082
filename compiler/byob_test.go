package compiler

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
)

const byobRecipe = `
services: m: {type: "api", url: "http://h/v1", model: "org/m"}
benchmarks: [{
	name: "capitals"
	byob: {
		dataset:       "DATA"
		prompt:        "PROMPT"
		target:        "capital"
		system_prompt: "Be brief."
		fewshot: {dataset: "train.csv", n: 2}
		scorer: SCORER
	}
	solver: {type: "simple", service: "m"}
}]
`

var byobFiles = map[string]string{
	"caps.jsonl":  `{"country": "Peru", "capital": "Lima"}` + "\n",
	"train.csv":   "country,capital\nItaly,Rome\nChile,Santiago\n",
	"prompt.md":   "Capital of {country}?\n",
	"score.py":    "print('{\"correct\": true}')\n",
	"schema.json": `{"type": "object", "required": ["city"]}`,
}

// byobHashes loads byobRecipe with its placeholders replaced, in a fresh
// folder holding byobFiles changed by edit.
func byobHashes(t *testing.T, repl map[string]string, edit map[string]string) (*Source, Hashes) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for k, v := range byobFiles {
		files[k] = v
	}
	for k, v := range edit {
		files[k] = v
	}
	r := map[string]string{"DATA": "caps.jsonl", "PROMPT": "prompt.md", "SCORER": `{command: ["python3", "score.py"]}`}
	for k, v := range repl {
		r[k] = v
	}
	text := byobRecipe
	for k, v := range r {
		text = strings.ReplaceAll(text, k, v)
	}
	files["r.cue"] = text
	writeFiles(t, dir, files)
	return loadRecipeFile(t, filepath.Join(dir, "r.cue"))
}

// The plan carries what nel-run needs, files read: the prompt's text, the
// few-shot answer's default, the schema; the local datasets are pinned.
func TestBYOBPlan(t *testing.T) {
	s, h := byobHashes(t, map[string]string{"SCORER": `{name: "json_schema", schema_file: "schema.json"}`}, nil)
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	y := p.Benchmarks[0].BYOB
	if y == nil {
		t.Fatal("the plan has no byob spec")
	}
	if y.Prompt != "Capital of {country}?\n" || y.Dataset != "caps.jsonl" || y.Target != "capital" || *y.SystemPrompt != "Be brief." {
		t.Errorf("spec %+v", y)
	}
	if y.Fewshot == nil || y.Fewshot.Answer != "{capital}" || y.Fewshot.N != 2 || y.Fewshot.Dataset != "train.csv" {
		t.Errorf("fewshot %+v, want the answer {capital} by default", y.Fewshot)
	}
	if y.Scorer.Name != "json_schema" || y.Scorer.Schema != byobFiles["schema.json"] {
		t.Errorf("scorer %+v, want the schema file's text", y.Scorer)
	}
	var specs []string
	for _, pin := range p.Benchmarks[0].LocalData {
		specs = append(specs, pin.Spec)
	}
	if strings.Join(specs, " ") != "caps.jsonl train.csv" {
		t.Errorf("local data pins %q, want caps.jsonl and train.csv", specs)
	}
	d, err := dataset.LocalDigest(filepath.Dir(s.Path), "caps.jsonl")
	if err != nil || p.Benchmarks[0].LocalData[0].Digest != d.Digest {
		t.Errorf("caps.jsonl pinned to %s, its digest is %v (%v)", p.Benchmarks[0].LocalData[0].Digest, d, err)
	}
}

// The benchmark hash covers everything of the byob section that can change
// a score, files by their content; where the files are does not count.
func TestBYOBHash(t *testing.T) {
	_, base := byobHashes(t, nil, nil)
	want := base.Benchmarks["capitals"]
	same := []struct {
		name       string
		repl, edit map[string]string
	}{
		// (A dataset's digest covers its files' names, so the same name.)
		{"the data in another folder", map[string]string{"DATA": "data/caps.jsonl"}, map[string]string{"data/caps.jsonl": byobFiles["caps.jsonl"]}},
		{"the prompt inline instead of from its file", map[string]string{"PROMPT": `Capital of {country}?\n`}, nil},
	}
	for _, c := range same {
		if _, h := byobHashes(t, c.repl, c.edit); h.Benchmarks["capitals"] != want {
			t.Errorf("%s changes the benchmark hash", c.name)
		}
	}
	differ := []struct {
		name       string
		repl, edit map[string]string
	}{
		{"a changed record", nil, map[string]string{"caps.jsonl": `{"country": "Peru", "capital": "Cusco"}` + "\n"}},
		{"a changed few-shot example", nil, map[string]string{"train.csv": "country,capital\nItaly,Milan\nChile,Santiago\n"}},
		{"a changed prompt file", nil, map[string]string{"prompt.md": "Capital of {country}? One word.\n"}},
		{"a changed scorer script", nil, map[string]string{"score.py": "print('{\"correct\": false}')\n"}},
		{"another target", map[string]string{`target:        "capital"`: `target: "country"`}, nil},
		{"another system prompt", map[string]string{"Be brief.": "Be terse."}, nil},
		{"more examples", map[string]string{"n: 2": "n: 1"}, nil},
		{"another scorer", map[string]string{"SCORER": `"contains"`}, nil},
	}
	for _, c := range differ {
		if _, h := byobHashes(t, c.repl, c.edit); h.Benchmarks["capitals"] == want {
			t.Errorf("%s does not change the benchmark hash", c.name)
		}
	}
}

// The schema's #BYOBScorerName and runtime/bench's BYOBScorers are one
// list written twice: a scorer added to one must be added to the other.
func TestBYOBScorerNamesAgree(t *testing.T) {
	l := newTestLoader(t)
	v := l.schema.LookupPath(cue.ParsePath("#BYOBScorerName"))
	op, args := v.Expr()
	if op != cue.OrOp {
		t.Fatalf("#BYOBScorerName is %v, want a disjunction of names", v)
	}
	var schema []string
	for _, a := range args {
		s, err := a.String()
		if err != nil {
			t.Fatal(err)
		}
		schema = append(schema, s)
	}
	want := slices.Clone(bench.BYOBScorers())
	slices.Sort(schema)
	slices.Sort(want)
	if !slices.Equal(schema, want) {
		t.Errorf("schema #BYOBScorerName %q, bench.BYOBScorers %q", schema, want)
	}
}
