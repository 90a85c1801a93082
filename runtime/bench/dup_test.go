package bench

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestDuplicatesLocated: items whose content repeats an earlier one's are
// reported with the lines they are on, whatever the format; other fields
// of the record (an id) do not make a repeat different content.
func TestDuplicatesLocated(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"q.jsonl": `{"question":"1+1?","answer":"#### 2"}

{"question":"2+2?","answer":"#### 4"}
{"question":"1+1?","answer":"#### 2","id":"other"}
{"question":"2+2?","answer":"#### 4"}
{"question":"1+1?","answer":"#### 2"}
`,
		"q.csv": "question,answer\n1+1?,#### 2\n\"2+2?\",#### 4\n\"1+1?\",#### 2\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		file string
		want []Duplicate
	}{
		{"q.jsonl", []Duplicate{{"q.jsonl:4", "q.jsonl:1"}, {"q.jsonl:5", "q.jsonl:3"}, {"q.jsonl:6", "q.jsonl:1"}}},
		{"q.csv", []Duplicate{{"q.csv:4", "q.csv:2"}}},
	} {
		set, err := mustLookup(t, "gsm8k").Load(context.Background(), newLoader(dir), map[string]any{"data_path": c.file})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(set.Duplicates, c.want) {
			t.Errorf("%s: duplicates %v, expected %v", c.file, set.Duplicates, c.want)
		}
		ids := make([]string, len(set.Items))
		for i, it := range set.Items {
			ids[i] = it.ID
		}
		slices.Sort(ids)
		if len(slices.Compact(ids)) != len(set.Items) {
			t.Errorf("%s: item IDs are not unique", c.file)
		}
	}
	got := DescribeDuplicates([]Duplicate{{"q.jsonl:4", "q.jsonl:1"}, {"q.jsonl:5", "q.jsonl:3"}})
	want := "2 items repeat the content of an earlier one (each is evaluated, so it counts more than once): q.jsonl:4 repeats q.jsonl:1; q.jsonl:5 repeats q.jsonl:3"
	if got != want {
		t.Errorf("DescribeDuplicates = %q\nexpected %q", got, want)
	}
	if DescribeDuplicates(nil) != "" {
		t.Error("DescribeDuplicates(nil) is not empty")
	}
}
