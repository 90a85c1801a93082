package compiler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/plan"
)

// The params keys under which a BYOB benchmark's local datasets are
// recorded (LocalFile.param): they are not params, but they are pinned in
// the plan's local_data the same way.
const (
	byobDataKey    = "byob.dataset"
	byobFewshotKey = "byob.fewshot.dataset"
)

// byobRules checks every benchmark's byob section and resolves it into
// the spec nel-run reads (BYOB.spec).
func (c *ruleChecker) byobRules() {
	for i, b := range c.r.Benchmarks {
		if b.BYOB != nil {
			c.byob(i, b)
		}
	}
}

// byob checks benchmark i's byob section: what it may not be combined
// with, the prompt (read from a file when it names one), the scorer, and
// the local datasets, which are digested (the hashes cover their content)
// and whose first record must have every field the templates name.
func (c *ruleChecker) byob(i int, b *Benchmark) {
	y := b.BYOB
	at := func(msg string, path ...any) { c.at(msg, append([]any{"benchmarks", i}, path...)...) }
	if _, ok := bench.Lookup(b.Name); ok {
		at(fmt.Sprintf("%q is a built-in benchmark; a byob benchmark needs a name of its own", b.Name), "name")
	}
	if _, ok := b.Params["data_path"]; ok {
		at("a byob benchmark reads byob.dataset; params.data_path would be ignored", "params", "data_path")
	}
	if b.Fewshot != nil {
		at("a byob benchmark takes its examples from byob.fewshot: {dataset, n}", "fewshot")
	}
	if y.SystemPrompt != nil && effectiveSystemPrompt(b) != nil {
		at("system_prompt is set both in byob and on the benchmark or its solver; set it in one place", "byob", "system_prompt")
	}
	spec := &plan.BYOB{Dataset: y.Dataset, Target: y.Target, SystemPrompt: y.SystemPrompt, Category: y.Category}
	var prompt *bench.Template
	var ok bool
	spec.Prompt, ok = c.byobPrompt(i, y.Prompt)
	if ok {
		var err error
		if prompt, err = bench.ParseTemplate(spec.Prompt); err != nil {
			at(err.Error(), "byob", "prompt")
			ok = false
		}
	}
	var answer *bench.Template
	if fs := y.Fewshot; fs != nil {
		c := *fs
		spec.Fewshot = &c
		if spec.Fewshot.Answer == "" {
			spec.Fewshot.Answer = "{" + strings.NewReplacer("{", "{{", "}", "}}").Replace(y.Target) + "}"
		}
		var err error
		if answer, err = bench.ParseTemplate(spec.Fewshot.Answer); err != nil {
			at(err.Error(), "byob", "fewshot", "answer")
			ok = false
		}
	}
	scorer, sok := c.byobScorer(i, b)
	spec.Scorer = scorer
	verifier, vok := c.byobVerifier(i, b, spec)
	if !sok || !ok || !vok {
		return
	}
	c.byobData(i, spec, prompt, answer, verifier)
	y.spec = spec
}

// byobPrompt is the prompt's text: the file's content, as it is (a final
// newline included), when the value names an existing .txt, .md or .jinja
// file (relative to the recipe), as NeMo Evaluator reads its BYOB prompts
// (a .jinja file is str.format there too), else the value itself.
func (c *ruleChecker) byobPrompt(i int, v string) (string, bool) {
	ext := strings.ToLower(filepath.Ext(v))
	if (ext != ".txt" && ext != ".md" && ext != ".jinja") || strings.ContainsAny(v, "{}\n") {
		return v, true
	}
	p := v
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.s.Dir, p)
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return v, true // a prompt that merely ends in ".txt"
	}
	if err != nil {
		c.at(fmt.Sprintf("prompt file %q cannot be read (%v)", v, err), "benchmarks", i, "byob", "prompt")
		return "", false
	}
	// Recorded for nel publish, which carries it with the recipe; the
	// hashes cover the text, not the path.
	c.localFile(i, "", v, "prompt file", "benchmarks", i, "byob", "prompt")
	return string(b), true
}

// byobScorer resolves byob.scorer: a name, {name, …settings} or
// {command, timeout}; a schema_file is read.
func (c *ruleChecker) byobScorer(i int, b *Benchmark) (plan.BYOBScorer, bool) {
	path := []any{"benchmarks", i, "byob", "scorer"}
	var sc plan.BYOBScorer
	switch v := b.BYOB.Scorer.(type) {
	case nil:
		sc.Name = "exact_match" // NeMo's default: no scorer is exact match
	case string:
		sc.Name = v
	case map[string]any:
		var raw struct {
			Name       string         `json:"name"`
			Pattern    string         `json:"pattern"`
			Letters    string         `json:"letters"`
			Test       string         `json:"test"`
			Schema     map[string]any `json:"schema"`
			SchemaFile string         `json:"schema_file"`
			Command    []string       `json:"command"`
			Timeout    float64        `json:"timeout"`
		}
		// The schema validated the map's shape; this only re-types it.
		if j, err := json.Marshal(v); err == nil {
			_ = json.Unmarshal(j, &raw)
		}
		sc = plan.BYOBScorer{Name: raw.Name, Pattern: raw.Pattern, Letters: raw.Letters, Test: raw.Test, Command: raw.Command, Timeout: raw.Timeout}
		if sc.Name == "" && len(sc.Command) == 0 {
			c.at("set name (a built-in scorer: "+strings.Join(bench.BYOBScorers(), ", ")+") or command", path...)
			return sc, false
		}
		switch {
		case raw.Schema != nil && raw.SchemaFile != "":
			c.at("set schema or schema_file, not both", append(path, "schema_file")...)
			return sc, false
		case raw.Schema != nil:
			j, _ := json.Marshal(raw.Schema)
			sc.Schema = string(j)
		case raw.SchemaFile != "":
			text, ok := c.byobFile(i, raw.SchemaFile, "schema_file", append(path, "schema_file"))
			if !ok {
				return sc, false
			}
			sc.Schema = text
		}
	}
	if err := bench.CheckBYOBScorer(sc); err != nil {
		c.at(err.Error(), path...)
		return sc, false
	}
	c.commandFiles(i, b.BYOB, sc.Command)
	return sc, c.byobScorerNeeds(i, b, sc)
}

// commandFiles digests each argument of a scorer command that names a
// regular file relative to the recipe (the scorer's script, its data):
// the hashes cover their content, and nel publish carries them.
func (c *ruleChecker) commandFiles(i int, y *BYOB, argv []string) {
	for k, arg := range argv {
		p := arg
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.s.Dir, p)
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if !c.localFile(i, "", arg, "scorer file", "benchmarks", i, "byob", "scorer", "command", k) {
			continue
		}
		if y.commandFiles == nil {
			y.commandFiles = map[string]string{}
		}
		y.commandFiles[arg] = c.s.local[len(c.s.local)-1].Digest
	}
}

// byobScorerNeeds checks what a scorer needs beside itself: a judge
// metric (judge), a sandbox (code_execution).
func (c *ruleChecker) byobScorerNeeds(i int, b *Benchmark, sc plan.BYOBScorer) bool {
	switch sc.Name {
	case "judge":
		for _, m := range b.Scoring.Metrics {
			if m.Type == "judge" {
				return true
			}
		}
		c.at("scorer judge is the benchmark's first judge metric: add one to scoring.metrics (type: \"judge\", service: a model service other than the solver's, rubric)", "benchmarks", i, "byob", "scorer")
		return false
	case "code_execution":
		if sb := resolveSandbox(c.r, b); sb == nil || sb.Type == "none" {
			c.at("scorer code_execution runs the model's code and needs a sandbox, e.g. sandbox: {type: \"local\"}", "benchmarks", i, "sandbox")
			return false
		}
	}
	return true
}

// byobFile reads a file the byob section names (relative to the recipe)
// and records it for nel publish.
func (c *ruleChecker) byobFile(i int, name, what string, path []any) (string, bool) {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.s.Dir, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		c.at(fmt.Sprintf("%s %q cannot be read (%v); it is resolved relative to the recipe", what, name, err), path...)
		return "", false
	}
	c.localFile(i, "", name, what, path...)
	return string(b), true
}

// byobData digests the local datasets and checks the templates' fields
// against each one's first record. Remote datasets are checked by nel-run
// when it loads them, with the same message.
func (c *ruleChecker) byobData(i int, spec *plan.BYOB, prompt, answer *bench.Template, verifier []string) {
	fields := map[string][]string{"prompt": prompt.Fields(), "target": {spec.Target}}
	if len(spec.Verifier) > 0 {
		// A task's reward is its verifier's: no reference answer.
		delete(fields, "target")
		fields["verifier"] = verifier
	}
	if spec.Scorer.Name == "code_execution" {
		t, _ := bench.ParseTemplate(spec.Scorer.Test) // checked by CheckBYOBScorer
		fields["scorer"] = t.Fields()
	}
	c.byobDataset(i, byobDataKey, spec.Dataset, fields, "dataset")
	if spec.Fewshot != nil {
		fs := map[string][]string{"prompt": prompt.Fields(), "fewshot.answer": answer.Fields()}
		c.byobDataset(i, byobFewshotKey, spec.Fewshot.Dataset, fs, "fewshot", "dataset")
	}
}

// byobDataset digests one local dataset (key names it in LocalFiles) and
// reports, at the byob field that names them, the fields its first record
// lacks.
func (c *ruleChecker) byobDataset(i int, key, spec string, fields map[string][]string, where ...any) {
	path := append([]any{"benchmarks", i, "byob"}, where...)
	if !dataset.IsLocal(spec) {
		if err := dataset.CheckSpec(spec); err != nil {
			c.at(err.Error(), path...)
		}
		return
	}
	if !c.localDataset(i, key, spec, path...) {
		return
	}
	l := dataset.NewLoader(dataset.Options{BaseDir: c.s.Dir, Offline: true})
	ds, err := l.Load(context.Background(), spec, dataset.LoadOptions{})
	if err != nil {
		c.at(fmt.Sprintf("the data does not load: %v", err), path...)
		return
	}
	recs := ds.Records()
	if len(recs) == 0 {
		c.at(fmt.Sprintf("dataset %s has no records", spec), path...)
		return
	}
	for _, field := range sortedKeys(fields) {
		if err := bench.MissingFields(fields[field], recs[0]); err != nil {
			fpath := append([]any{"benchmarks", i, "byob"}, anyPath(field)...)
			c.at(fmt.Sprintf("%v, in %s", err, ds.Parts[0].Where(0)), fpath...)
		}
	}
}

// anyPath splits a dotted field path into its selectors.
func anyPath(dotted string) []any {
	var out []any
	for _, p := range strings.Split(dotted, ".") {
		out = append(out, p)
	}
	return out
}

// byobMethod is what the hashes see of benchmark i's byob section: the
// spec nel-run reads, with every local dataset replaced by its content
// digest (a path is deployment).
func byobMethod(s *Source, i int) any {
	y := s.Recipe.Benchmarks[i].BYOB
	if y == nil || y.spec == nil {
		return nil
	}
	m := *y.spec
	if f, ok := s.localOf(i, byobDataKey); ok {
		m.Dataset = f.Digest
	}
	if m.Fewshot != nil {
		fs := *m.Fewshot
		if f, ok := s.localOf(i, byobFewshotKey); ok {
			fs.Dataset = f.Digest
		}
		m.Fewshot = &fs
	}
	if len(y.commandFiles) == 0 {
		return m
	}
	return map[string]any{"spec": m, "command_files": y.commandFiles}
}

// Definition returns the benchmark benchmarks[i] runs: its byob section's,
// else the built-in of its name; ok is false for neither.
func Definition(s *Source, i int) (*bench.Benchmark, bool, error) {
	b := s.Recipe.Benchmarks[i]
	if b.BYOB != nil && b.BYOB.spec != nil {
		def, err := bench.BYOB(b.Name, b.BYOB.spec, s.Dir, nil)
		return def, err == nil, err
	}
	def, ok := bench.Lookup(b.Name)
	return def, ok, nil
}
