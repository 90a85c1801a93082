package bench

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
)

// Templates: str.format's {name}, {{ and }}; what Template does not do is
// refused with where it is.
func TestParseTemplate(t *testing.T) {
	rec := map[string]any{"country": "Peru", "n": int64(3), "xs": []any{"a", 1.5}, "ok": true}
	good := []struct{ tpl, want string }{
		{"Capital of {country}?", "Capital of Peru?"},
		{"{{country}} is {country}", "{country} is Peru"},
		{"a {{{country}}} b", "a {Peru} b"},
		{"{n} items, {ok}, {xs}", `3 items, True, ["a",1.5]`},
		{"no fields }} {{", "no fields } {"},
		{"", ""},
	}
	for _, c := range good {
		tpl, err := ParseTemplate(c.tpl)
		if err != nil {
			t.Errorf("ParseTemplate(%q): %v", c.tpl, err)
			continue
		}
		if got, err := tpl.Render(rec); err != nil || got != c.want {
			t.Errorf("Render(%q) = %q, %v; want %q", c.tpl, got, err, c.want)
		}
	}
	bad := []struct{ tpl, want string }{
		{"Capital of {country?", "'{' at character 12 is not closed"},
		{"a } b", "single '}' at character 3"},
		{"é } b", "single '}' at character 3"},
		{"x {} y", "{} at character 3: positional fields"},
		{"{0}", "{0} at character 1: positional fields"},
		{"{a.b}", "not supported yet: attributes"},
		{"{a[0]}", "not supported yet"},
		{"{a!r}", "not supported yet"},
		{"{a:>8}", "not supported yet"},
	}
	for _, c := range bad {
		_, err := ParseTemplate(c.tpl)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTemplate(%q) = %v, want an error containing %q", c.tpl, err, c.want)
		}
	}
	tpl, _ := ParseTemplate("{b} {a} {b}")
	if got := tpl.Fields(); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Errorf("Fields = %q, want [b a]", got)
	}
}

func TestTemplateMissingField(t *testing.T) {
	tpl, _ := ParseTemplate("{cntry} and {capital} and {pop}")
	_, err := tpl.Render(map[string]any{"country": "Peru", "capital": "Lima"})
	var fe *FieldsError
	if !errors.As(err, &fe) {
		t.Fatalf("Render: %v, want a *FieldsError", err)
	}
	const want = "fields {cntry}, {pop} are not a column of the dataset (its columns: capital, country)"
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
}

const capsJSONL = `{"country": "France", "capital": "Paris"}
{"country": "Japan", "capital": "Tokyo"}
{"country": "Peru", "capital": "Lima"}
`

const capsCSV = "country,capital\nFrance,Paris\nJapan,Tokyo\nPeru,Lima\n"

// writeCapsParquet writes the three records of capsJSONL as Parquet.
func writeCapsParquet(t *testing.T, path string) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "country", Type: arrow.BinaryTypes.String},
		{Name: "capital", Type: arrow.BinaryTypes.String},
	}, nil)
	rows := `[{"country": "France", "capital": "Paris"}, {"country": "Japan", "capital": "Tokyo"}, {"country": "Peru", "capital": "Lima"}]`
	tbl, err := array.TableFromJSON(memory.DefaultAllocator, sc, []string{rows})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pqarrow.WriteTable(tbl, f, 10, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
}

func capsSpec(data string) *plan.BYOB {
	return &plan.BYOB{
		Dataset: data, Prompt: "What is the capital city of {country}? Answer with the city name only.",
		Target: "capital", Scorer: plan.BYOBScorer{Name: "exact_match"},
	}
}

func loadBYOB(t *testing.T, dir string, spec *plan.BYOB) *Set {
	t.Helper()
	b, err := BYOB("capitals", spec, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := b.Load(context.Background(), newLoader(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The same records as JSONL, CSV and Parquet make the same items: the
// same prompts, gold answers and content IDs.
func TestBYOBFormats(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "caps.jsonl"), []byte(capsJSONL), 0o644)
	os.WriteFile(filepath.Join(dir, "caps.csv"), []byte(capsCSV), 0o644)
	writeCapsParquet(t, filepath.Join(dir, "caps.parquet"))
	want := loadBYOB(t, dir, capsSpec("caps.jsonl"))
	if len(want.Items) != 3 {
		t.Fatalf("%d items, want 3", len(want.Items))
	}
	it := want.Items[2]
	if it.Expected != "Lima" || it.Prompt != "What is the capital city of Peru? Answer with the city name only." ||
		len(it.Messages) != 1 || it.Messages[0].Role != "user" || it.Messages[0].Content != it.Prompt || it.Origin != "caps.jsonl:3" {
		t.Errorf("item 2 = %+v", it)
	}
	if id := ContentID(map[string]any{"country": "Peru", "capital": "Lima"}); it.ID != id {
		t.Errorf("ID %s, want the content ID of the record %s", it.ID, id)
	}
	for _, f := range []string{"caps.csv", "caps.parquet"} {
		got := loadBYOB(t, dir, capsSpec(f))
		checkIDs(t, want, got)
		for i := range got.Items {
			if got.Items[i].Prompt != want.Items[i].Prompt || got.Items[i].Expected != want.Items[i].Expected {
				t.Errorf("%s item %d: %q → %q, want %q → %q", f, i, got.Items[i].Prompt, got.Items[i].Expected, want.Items[i].Prompt, want.Items[i].Expected)
			}
		}
	}
}

// A record holding a float JSON cannot (a Parquet NaN) still has a content
// ID; the value is kept as Python prints it.
func TestBYOBNonFiniteContent(t *testing.T) {
	bl := &byobLoader{name: "x", spec: capsSpec("caps.jsonl")}
	bl.prompt, _ = ParseTemplate(bl.spec.Prompt)
	bl.scorer, _ = newBYOBScorer(bl.spec.Scorer)
	rec := map[string]any{"country": "Peru", "capital": "Lima", "pop": math.NaN(), "xs": []any{math.Inf(-1)}}
	it, err := bl.item(row{rec: rec}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"country": "Peru", "capital": "Lima", "pop": "nan", "xs": []any{"-inf"}}
	if !reflect.DeepEqual(it.Content, want) {
		t.Errorf("content %v, want %v", it.Content, want)
	}
	if ContentID(it.Content) != ContentID(want) {
		t.Error("the content ID differs")
	}
}

// A record without a field the prompt or the target names is an error
// naming the record, the field and the columns.
func TestBYOBMissingField(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "caps.jsonl"), []byte(capsJSONL), 0o644)
	for _, c := range []struct {
		edit func(*plan.BYOB)
		want string
	}{
		{func(s *plan.BYOB) { s.Prompt = "Capital of {cntry}?" }, "capitals: caps.jsonl:1: byob.prompt: field {cntry} is not a column of the dataset (its columns: capital, country)"},
		{func(s *plan.BYOB) { s.Target = "answer" }, "capitals: caps.jsonl:1: byob.target: field {answer} is not a column of the dataset (its columns: capital, country)"},
	} {
		spec := capsSpec("caps.jsonl")
		c.edit(spec)
		b, err := BYOB("capitals", spec, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Load(context.Background(), newLoader(dir), nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("Load: %v\nwant %s", err, c.want)
		}
	}
}

// An hf:// dataset cannot be read when the recipe is validated: nel-run
// checks the fields when it loads it, with the message validation gives.
func TestBYOBHubMissingField(t *testing.T) {
	dir := t.TempDir()
	writeCapsParquet(t, filepath.Join(dir, "test.parquet"))
	hub := fakeHub{l: newLoader(dir), files: map[string]string{"hf://org/caps?split=test": "test.parquet"}}
	spec := capsSpec("hf://org/caps?split=test")
	spec.Prompt = "Capital of {cntry}?"
	b, _ := BYOB("capitals", spec, dir, nil)
	_, err := b.Load(context.Background(), hub, nil)
	const want = "capitals: test.parquet record 1: byob.prompt: field {cntry} is not a column of the dataset (its columns: capital, country)"
	if err == nil || err.Error() != want {
		t.Errorf("Load: %v\nwant %s", err, want)
	}
}

// Few-shot: the first n records of another file, as user and assistant
// turns between the system prompt and the question.
func TestBYOBFewshot(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "caps.jsonl"), []byte(capsJSONL), 0o644)
	os.WriteFile(filepath.Join(dir, "train.csv"), []byte("country,capital\nItaly,Rome\nChile,Santiago\nEgypt,Cairo\n"), 0o644)
	spec := capsSpec("caps.jsonl")
	spec.Prompt = "Capital of {country}?"
	sys := "Be brief."
	spec.SystemPrompt = &sys
	spec.Fewshot = &plan.BYOBFewshot{Dataset: "train.csv", N: 2, Answer: "{capital}."}
	it := loadBYOB(t, dir, spec).Items[0]
	want := []Message{
		{"system", "Be brief."},
		{"user", "Capital of Italy?"}, {"assistant", "Rome."},
		{"user", "Capital of Chile?"}, {"assistant", "Santiago."},
		{"user", "Capital of France?"},
	}
	if !reflect.DeepEqual(it.Messages, want) {
		t.Errorf("messages %q\nwant %q", it.Messages, want)
	}
	const plain = "Be brief.\n\nCapital of Italy?\nRome.\n\nCapital of Chile?\nSantiago.\n\nCapital of France?"
	if it.Prompt != plain {
		t.Errorf("completions prompt %q, want %q", it.Prompt, plain)
	}
	spec.Fewshot.N = 4
	b, _ := BYOB("capitals", spec, dir, nil)
	if _, err := b.Load(context.Background(), newLoader(dir), nil); err == nil || !strings.Contains(err.Error(), "train.csv has 3 records, fewer than n: 4") {
		t.Errorf("n beyond the file: %v", err)
	}
}

// byobScore scores response against expected with the scorer spec.
func byobScore(t *testing.T, spec plan.BYOBScorer, expected, response string) Score {
	t.Helper()
	b, err := BYOB("x", &plan.BYOB{Dataset: "d.jsonl", Prompt: "{q}", Target: "a", Scorer: spec}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	it := &Item{Expected: expected, Meta: map[string]any{"row": map[string]any{"q": "question", "a": expected}}}
	if b.ScoreEnv != nil {
		return b.ScoreEnv(context.Background(), &Env{}, it, response)
	}
	return b.Score(it, response)
}

// Each built-in scorer through the BYOB path, right and wrong.
func TestBYOBScorers(t *testing.T) {
	schema := `{"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}, "pop": {"type": "integer"}}}`
	cases := []struct {
		name     string
		spec     plan.BYOBScorer
		expected string
		response string
		correct  bool
		ex       string
	}{
		{"exact_match normalises", plan.BYOBScorer{Name: "exact_match"}, "Paris", " the PARIS. ", true, "the PARIS."},
		{"exact_match whole answer", plan.BYOBScorer{Name: "exact_match"}, "Paris", "It is Paris", false, "It is Paris"},
		{"contains", plan.BYOBScorer{Name: "contains"}, "Paris", "The capital is Paris!", true, "The capital is Paris!"},
		{"contains not", plan.BYOBScorer{Name: "contains"}, "Paris", "Lyon", false, "Lyon"},
		{"regex group 1", plan.BYOBScorer{Name: "regex", Pattern: `(?i)city:\s*(\w+)`}, "Paris", "I think... City: paris", true, "paris"},
		{"regex first match", plan.BYOBScorer{Name: "regex", Pattern: `city: (\w+)`}, "Paris", "city: Lyon, no, city: Paris", false, "Lyon"},
		{"regex whole match", plan.BYOBScorer{Name: "regex", Pattern: `\d+`}, "42", "about 42 or 43", true, "42"},
		{"regex no match", plan.BYOBScorer{Name: "regex", Pattern: `city: (\w+)`}, "Paris", "Paris", false, ""},
		{"numeric_match last number", plan.BYOBScorer{Name: "numeric_match"}, "45", "3 boxes of 15 make 45.", true, "45"},
		// NeMo 0.3's rstrip("0"): 1,250 and 1250 both read "125".
		{"numeric_match commas and zeros", plan.BYOBScorer{Name: "numeric_match"}, "1250", "It costs 1,250 dollars", true, "125"},
		{"numeric_match wrong", plan.BYOBScorer{Name: "numeric_match"}, "12", "12 or 13", false, "13"},
		{"math_equiv fractions", plan.BYOBScorer{Name: "math_equiv"}, `\frac{1}{2}`, `So $\boxed{\frac12}$.`, true, `\frac12`},
		{"math_equiv wrong", plan.BYOBScorer{Name: "math_equiv"}, "3", `\boxed{4}`, false, "4"},
		{"multiple_choice", plan.BYOBScorer{Name: "multiple_choice", Letters: "ABCD"}, "C", "Thinking...\nAnswer: C", true, "C"},
		{"multiple_choice letters bound", plan.BYOBScorer{Name: "multiple_choice", Letters: "ABCD"}, "E", "Answer: E", false, ""},
		{"json_schema valid in a fence", plan.BYOBScorer{Name: "json_schema", Schema: schema}, "", "Here:\n```json\n{\"city\": \"Paris\", \"pop\": 2100000}\n```", true, `{"city": "Paris", "pop": 2100000}`},
		{"json_schema bare object", plan.BYOBScorer{Name: "json_schema", Schema: schema}, "", `The answer is {"city": "Lima"} as requested`, true, `{"city": "Lima"}`},
		{"json_schema wrong type", plan.BYOBScorer{Name: "json_schema", Schema: schema}, "", `{"city": "Paris", "pop": "many"}`, false, `{"city": "Paris", "pop": "many"}`},
		{"json_schema missing field", plan.BYOBScorer{Name: "json_schema", Schema: schema}, "", `{"pop": 3}`, false, `{"pop": 3}`},
		{"json_schema no json", plan.BYOBScorer{Name: "json_schema", Schema: schema}, "", `Paris`, false, ""},
	}
	for _, c := range cases {
		s := byobScore(t, c.spec, c.expected, c.response)
		if s.Correct != c.correct || s.Extracted != c.ex || !s.Binary || s.Reward != b2f(c.correct) {
			t.Errorf("%s: correct %v, extracted %q, binary %v, reward %v; want %v, %q", c.name, s.Correct, s.Extracted, s.Binary, s.Reward, c.correct, c.ex)
		}
		if s.Failure != failure.None {
			t.Errorf("%s: failure %s", c.name, s.Failure)
		}
	}
	// judge: no verdict of its own; the first judge metric gives it.
	if s := byobScore(t, plan.BYOBScorer{Name: "judge"}, "Paris", "Paris"); !s.NeedsJudge || s.Reward != 0 {
		t.Errorf("judge: %+v, want NeedsJudge and no reward", s)
	}
}

// Settings a scorer cannot use are refused when the benchmark is built.
func TestBYOBScorerErrors(t *testing.T) {
	for _, c := range []struct {
		spec plan.BYOBScorer
		want string
	}{
		{plan.BYOBScorer{Name: "regex"}, "regex needs a pattern"},
		{plan.BYOBScorer{Name: "regex", Pattern: `(?<=a)b`}, "pattern:"},
		{plan.BYOBScorer{Name: "code_execution"}, "code_execution needs test"},
		{plan.BYOBScorer{Name: "code_execution", Test: "check({f.x})"}, "test: {f.x}"},
		{plan.BYOBScorer{Name: "json_schema"}, "json_schema needs a schema"},
		{plan.BYOBScorer{Name: "json_schema", Schema: `{"type": "thing"}`}, "schema:"},
		{plan.BYOBScorer{Name: "json_schema", Schema: `{"$ref": "https://example.com/s.json"}`}, "a schema may only refer to itself"},
		{plan.BYOBScorer{Name: "bleu"}, `no scorer "bleu"`},
		{plan.BYOBScorer{Name: "exact_match", Command: []string{"x"}}, "a scorer is one or the other"},
		{plan.BYOBScorer{Name: "exact_match", Pattern: "x"}, "exact_match does not read pattern (it is a setting of regex)"},
		{plan.BYOBScorer{Name: "regex", Pattern: "x", Timeout: 3}, "regex does not read timeout (it is a setting of code_execution)"},
		{plan.BYOBScorer{Name: "contains", Letters: "AB"}, "contains does not read letters (it is a setting of multiple_choice)"},
	} {
		err := CheckBYOBScorer(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.spec, err, c.want)
		}
	}
}

// ifeval reads each record's instructions; the prompt is the template's.
func TestBYOBIfeval(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "if.jsonl"), []byte(`{"task": "a greeting", "instruction_id_list": ["punctuation:no_comma", "change_case:english_lowercase"], "kwargs": [{}, {}]}`+"\n"), 0o644)
	spec := &plan.BYOB{Dataset: "if.jsonl", Prompt: "Write {task}, in lower case and without commas.", Target: "task", Scorer: plan.BYOBScorer{Name: "ifeval"}}
	set := loadBYOB(t, dir, spec)
	b, _ := BYOB("capitals", spec, dir, nil)
	it := &set.Items[0]
	if s := b.Score(it, "hello there friend"); !s.Correct || s.Scores["ifeval:instruction_strict/num"] != 2 {
		t.Errorf("a response following both: %+v", s)
	}
	if s := b.Score(it, "Hello, friend"); s.Correct || s.Scores["ifeval:instruction_strict/num"] != 0 {
		t.Errorf("a response following neither: %+v", s)
	}
}

// code_execution: the model's code and the record's test run in the
// sandbox; exit status 0 passes, a sandbox that cannot run is a
// sandbox_error.
func TestBYOBCodeExecution(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "code.jsonl"), []byte(`{"task": "add two numbers", "fn": "add", "test": "assert add(2, 3) == 5"}`+"\n"), 0o644)
	spec := &plan.BYOB{Dataset: "code.jsonl", Prompt: "Write a Python function {fn} to {task}.", Target: "fn",
		Scorer: plan.BYOBScorer{Name: "code_execution", Test: "{test}\nprint('checked {fn}')"}}
	set := loadBYOB(t, dir, spec)
	b, _ := BYOB("code", spec, dir, nil)
	if !b.NeedsSandbox {
		t.Fatal("code_execution does not need a sandbox")
	}
	it := &set.Items[0]
	if got := it.Meta["test"]; got != "assert add(2, 3) == 5\nprint('checked add')" {
		t.Errorf("test program %q", got)
	}
	env := &Env{Sandbox: testSandbox(t, 1)}
	good := "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```"
	if s := b.ScoreEnv(context.Background(), env, it, good); !s.Correct || s.Failure != failure.None {
		t.Errorf("a right function: %+v", s)
	}
	bad := "```python\ndef add(a, b):\n    return a - b\n```"
	if s := b.ScoreEnv(context.Background(), env, it, bad); s.Correct || s.Details["failure_kind"] != KindAssertion {
		t.Errorf("a wrong function: %+v", s)
	}
	if s := b.ScoreEnv(context.Background(), &Env{Sandbox: failingSandbox{}}, it, good); s.Failure != failure.SandboxError {
		t.Errorf("a broken sandbox: %+v, want a sandbox_error", s)
	}
}
