package bench

import (
	"context"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/dataset"
)

// oneRecord is a Loader that serves one record as a whole dataset.
type oneRecord struct{ rec dataset.Record }

func (o oneRecord) Load(_ context.Context, spec string, _ dataset.LoadOptions) (*dataset.Dataset, error) {
	return &dataset.Dataset{Spec: spec, Parts: []dataset.Part{{Name: "x.jsonl", Records: []dataset.Record{o.rec}, Lines: []int{1}}}}, nil
}

// keyTexts are field values that exercise canonical JSON's escapes: HTML
// characters (not escaped), quotes, control characters, U+2028, invalid
// UTF-8 (written as U+FFFD), non-ASCII text.
var keyTexts = []string{
	"What is 2 plus 2?", "a <b> & c", `say "hi" \ bye`, "line\nnext\ttab\r\b\f", "nul\x00 \x01 \x1f \x7f",
	"sep\u2028par\u2029", "bad \xff\xfe utf8", "é ∑ 数学 😀", "", "def f():\n    return 1",
}

// TestRowKeyMatchesLoad: for every benchmark with a Key, the content sum
// the Key computes from a record's fields is the ContentID of the item
// Load makes of the record, and Content is its Content; records the Key
// refuses (Accept) are ones Load refuses too.
func TestRowKeyMatchesLoad(t *testing.T) {
	valid := map[string][]string{
		"entry_point": {"f", "solve_it"},
		"label":       {"safe", "unsafe"},
	}
	keyed := 0
	for _, name := range Names() {
		b, _ := Lookup(name)
		if b.Key == nil {
			continue
		}
		keyed++
		if !b.RowWise {
			t.Errorf("%s: a Key without RowWise", name)
		}
		for n, text := range keyTexts {
			rec := dataset.Record{"extra": "ignored", "id": "x"}
			for i, f := range b.Key.Fields {
				rec[f] = keyTexts[(n+i)%len(keyTexts)]
				if v, ok := valid[f]; ok {
					rec[f] = v[n%len(v)]
				}
			}
			vals, ok := b.Key.Values(rec, nil)
			set, err := b.Load(context.Background(), oneRecord{rec}, map[string]any{"data_path": "x.jsonl"})
			if !ok {
				t.Fatalf("%s: the Key refuses %v", name, rec)
			}
			if err != nil {
				t.Fatalf("%s: Load: %v (text %q)", name, err, text)
			}
			sum, _ := b.Key.Sum(vals, nil)
			if got := hex.EncodeToString(sum[:]); got != set.Items[0].ID {
				t.Errorf("%s: the Key's content id %s, Load's %s (text %q)", name, got, set.Items[0].ID, text)
			}
			if c := b.Key.Content(vals); !reflect.DeepEqual(c, set.Items[0].Content) {
				t.Errorf("%s: the Key's content %v, Load's %v", name, c, set.Items[0].Content)
			}
		}
		// A field that is not a string, or missing: the Key does not read
		// the record (Load does, and may take it).
		for _, f := range b.Key.Fields {
			rec := dataset.Record{}
			for _, g := range b.Key.Fields {
				rec[g] = "x"
			}
			rec[f] = 12
			if _, ok := b.Key.Values(rec, nil); ok {
				t.Errorf("%s: the Key reads a record whose %s is a number", name, f)
			}
			delete(rec, f)
			if _, ok := b.Key.Values(rec, nil); ok {
				t.Errorf("%s: the Key reads a record without %s", name, f)
			}
		}
		if b.Key.Accept != nil {
			rec := dataset.Record{}
			for _, g := range b.Key.Fields {
				rec[g] = "not a name or label!"
			}
			if _, ok := b.Key.Values(rec, nil); ok {
				t.Errorf("%s: Accept takes %v", name, rec)
			}
			if _, err := b.Load(context.Background(), oneRecord{rec}, map[string]any{"data_path": "x.jsonl"}); err == nil {
				t.Errorf("%s: Accept refuses %v, which Load takes", name, rec)
			}
		}
	}
	if keyed < 4 {
		t.Errorf("%d benchmarks have a Key, want gsm8k, simpleqa, humaneval, xstest at least", keyed)
	}
}

// TestAppendJSONString: a string is written as canonicalJSON writes it,
// for every byte below 0x80 and the texts above.
func TestAppendJSONString(t *testing.T) {
	texts := append([]string(nil), keyTexts...)
	for b := range 0x80 {
		texts = append(texts, "a"+string(rune(b))+"z")
	}
	texts = append(texts, strings.Repeat("\u2029", 3), "\xe2\x80", string(utf8.RuneError))
	for _, s := range texts {
		checkJSONString(t, s)
	}
}

func checkJSONString(t *testing.T, s string) {
	t.Helper()
	if got, want := string(appendJSONString(nil, s)), string(canonicalJSON(s)); got != want {
		t.Errorf("%q: wrote %s, canonical JSON is %s", s, got, want)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range keyTexts {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}

// askedFor records the specs Load asks for, and refuses them.
type askedFor struct{ specs *[]string }

func (a askedFor) Load(_ context.Context, spec string, _ dataset.LoadOptions) (*dataset.Dataset, error) {
	*a.specs = append(*a.specs, spec)
	return nil, errors.New("recorded")
}

// TestRowWiseSource: a RowWise benchmark without data_path reads its
// Source and nothing else, which is what a streaming shard reads for it.
func TestRowWiseSource(t *testing.T) {
	for _, name := range Names() {
		b, _ := Lookup(name)
		if !b.RowWise {
			continue
		}
		var specs []string
		b.Load(context.Background(), askedFor{&specs}, map[string]any{})
		if len(specs) != 1 || specs[0] != b.Source {
			t.Errorf("%s: Load without data_path asked for %v, its Source is %s", name, specs, b.Source)
		}
	}
}
