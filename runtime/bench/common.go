package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
)

// all builds the registry afresh on every call so no caller can change it.
func all() map[string]*Benchmark {
	bs := []*Benchmark{
		gsm8k(), mgsm(), mmlu(), mmluPro(), gpqa(), math500(),
		triviaqa(), drop(), xstest(), simpleqa(), humaneval(), ifevalBench(),
	}
	m := make(map[string]*Benchmark, len(bs))
	for _, b := range bs {
		m[b.Name] = b
	}
	return m
}

// Lookup returns the built-in benchmark called name.
func Lookup(name string) (*Benchmark, bool) {
	b, ok := all()[name]
	return b, ok
}

// Names lists the built-in benchmarks, sorted.
func Names() []string {
	m := all()
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DataParams lists the params of benchmark name that name a dataset spec:
// data_path, which every benchmark takes, and its ExtraData.
func DataParams(name string) []string {
	out := []string{"data_path"}
	if b, ok := Lookup(name); ok {
		out = append(out, b.ExtraData...)
	}
	return out
}

// DataPath returns params["data_path"], the local file, directory or
// dataset spec that replaces a benchmark's default Source.
func DataPath(params map[string]any) (string, bool, error) {
	v, ok := params["data_path"]
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", false, fmt.Errorf("params.data_path: want a non-empty string, got %T %v", v, v)
	}
	return s, true, nil
}

// row is one record and the file it came from.
type row struct {
	rec    dataset.Record
	part   string
	spec   string
	origin string // file and line (dataset.Part.Where)
	// offset is how many records of the dataset come before the window
	// the row is in (dataset.Dataset.Offset): a row's index in errors is
	// the whole dataset's, also when Load is given one window of it.
	offset int
}

func rowsOf(dss ...*dataset.Dataset) []row {
	n := 0
	for _, ds := range dss {
		for _, p := range ds.Parts {
			n += len(p.Records)
		}
	}
	out := make([]row, 0, n)
	for _, ds := range dss {
		for _, p := range ds.Parts {
			for i, r := range p.Records {
				out = append(out, row{rec: r, part: p.Name, spec: ds.Spec, origin: p.Where(i), offset: ds.Offset})
			}
		}
	}
	return out
}

// located marks it as made from r: where it is in its dataset.
func (r row) located(it Item) Item {
	it.Origin = r.origin
	return it
}

// where names a row in errors.
func (r row) where(i int) string {
	i += r.offset
	if r.part != "" {
		return fmt.Sprintf("%s (%s) record %d", r.spec, r.part, i)
	}
	return fmt.Sprintf("%s record %d", r.spec, i)
}

// text renders a scalar the way Python's str() does for the dataset values
// the benchmarks read (strings, ints, JSON numbers); floats use the
// shortest form, which for integral floats is "18", not Python's "18.0".
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return "True"
		}
		return "False"
	}
	return fmt.Sprint(v)
}

// field returns the first of names present in rec.
func field(rec dataset.Record, names ...string) (any, string, bool) {
	for _, n := range names {
		if v, ok := rec[n]; ok && v != nil {
			return v, n, true
		}
	}
	return nil, "", false
}

// need returns the text of the first of names present in rec, or an error
// naming the row and the fields looked for.
func need(r row, i int, names ...string) (string, error) {
	v, _, ok := field(r.rec, names...)
	if !ok {
		return "", fmt.Errorf("%s: missing field %s", r.where(i), strings.Join(quoteAll(names), " or "))
	}
	return text(v), nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// list returns v as a list of texts ([]any or []string).
func list(v any) ([]string, bool) {
	switch v := v.(type) {
	case []string:
		return v, true
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = text(e)
		}
		return out, true
	}
	return nil, false
}

// anyList is ss as []any, for Content (canonical JSON of either is the
// same; []any keeps Content uniformly JSON-shaped).
func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// intOf reads an integer field value: int64, float64, json.Number or text.
func intOf(v any) (int, error) {
	switch v := v.(type) {
	case int64:
		return int(v), nil
	case int:
		return v, nil
	case float64:
		if v != float64(int(v)) {
			return 0, fmt.Errorf("not an integer: %v", v)
		}
		return int(v), nil
	}
	s := strings.TrimSpace(text(v))
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %q", s)
	}
	return n, nil
}

// userItem builds an Item whose chat form is one user message.
func userItem(index int, category, prompt, expected string, meta, content map[string]any) Item {
	return Item{
		Index:    index,
		Category: category,
		Messages: []Message{{Role: "user", Content: prompt}},
		Prompt:   prompt,
		Expected: expected,
		Meta:     meta,
		Content:  content,
	}
}

// finish numbers the items, assigns IDs and wraps them in a Set.
func finish(items []Item, dss ...*dataset.Dataset) *Set {
	for i := range items {
		items[i].Index = i
	}
	dups := AssignIDs(items)
	return &Set{Items: items, Datasets: dss, Duplicates: dups}
}

// load loads the data_path param if given, else each default spec.
func load(ctx context.Context, l Loader, params map[string]any, opts dataset.LoadOptions, defaults ...string) ([]*dataset.Dataset, error) {
	specs := defaults
	if p, ok, err := DataPath(params); err != nil {
		return nil, err
	} else if ok {
		specs = []string{p}
	}
	var out []*dataset.Dataset
	for _, s := range specs {
		ds, err := l.Load(ctx, s, opts)
		if err != nil {
			return nil, err // the loader's errors name the dataset
		}
		out = append(out, ds)
	}
	return out, nil
}

// binary turns a pass/fail verdict into a Score.
func binary(method string, correct bool, extracted string, details map[string]any) Score {
	s := Score{Binary: true, Correct: correct, Extracted: extracted, Method: method, Details: details}
	if correct {
		s.Reward = 1
	}
	return s
}

// rngOr returns rng, or a fixed-seed generator when rng is nil.
func rngOr(rng *rand.Rand) *rand.Rand {
	if rng == nil {
		return rand.New(rand.NewPCG(1, 2))
	}
	return rng
}

// reasoning is a first sentence for simulated responses.
func reasoning(rng *rand.Rand) string {
	openers := []string{
		"Let me work through this step by step.",
		"Let's think about this carefully.",
		"I'll reason through the problem first.",
		"Breaking the problem down:",
	}
	return openers[rng.IntN(len(openers))]
}

// otherLetter picks a letter of letters other than want.
func otherLetter(letters, want string, rng *rand.Rand) string {
	for {
		c := letters[rng.IntN(len(letters))]
		if string(c) != want {
			return string(c)
		}
	}
}

// wrongNumber returns a number near s (an integer or decimal) that differs
// from it; a non-number gets a fixed number.
func wrongNumber(s string, rng *rand.Rand) string {
	d := int64(rng.IntN(9) + 1)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(n+d, 10)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.FormatFloat(f+float64(d), 'f', -1, 64)
	}
	return strconv.FormatInt(d, 10)
}
