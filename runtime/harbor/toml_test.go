package harbor

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestParseTOML checks the reader against documents whose values were
// worked out by hand from the TOML 1.0 specification.
func TestParseTOML(t *testing.T) {
	cases := []struct {
		name, doc string
		want      map[string]any
	}{
		{"scalars", "a = 1\nb = -2.5\nc = true\nd = \"x\"\ne = 'C:\\path'\nf = 1_000\ng = 0x1F\nh = 6e2 # note\n",
			map[string]any{"a": int64(1), "b": -2.5, "c": true, "d": "x", "e": `C:\path`, "f": int64(1000), "g": int64(31), "h": 600.0}},
		{"escapes", `s = "tab\there \"q\" \u00e9 \\"`, map[string]any{"s": "tab\there \"q\" é \\"}},
		{"tables", "top = 1\n[a]\nx = 1\n[a.b]\ny = 2\n[c]\n\"quoted key\" = 3\nd.e = 4\n",
			map[string]any{"top": int64(1), "a": map[string]any{"x": int64(1), "b": map[string]any{"y": int64(2)}},
				"c": map[string]any{"quoted key": int64(3), "d": map[string]any{"e": int64(4)}}}},
		{"arrays", "a = [1, 2,\n  3, # three\n]\nb = []\nc = [[1], ['x']]\n",
			map[string]any{"a": []any{int64(1), int64(2), int64(3)}, "b": []any{}, "c": []any{[]any{int64(1)}, []any{"x"}}}},
		{"inline tables", "authors = [{ name = \"a\", email = \"a@x\" }, {name = \"b\"}]\ne = {}\n",
			map[string]any{"authors": []any{map[string]any{"name": "a", "email": "a@x"}, map[string]any{"name": "b"}}, "e": map[string]any{}}},
		{"array of tables", "[[steps]]\nname = \"one\"\n[steps.agent]\nt = 1\n[[steps]]\nname = \"two\"\n",
			map[string]any{"steps": []any{map[string]any{"name": "one", "agent": map[string]any{"t": int64(1)}}, map[string]any{"name": "two"}}}},
		{"multi-line strings", "a = \"\"\"\nline one\nline \\\n    two\"\"\"\nb = '''\nraw \\n\n'''\nc = \"\"\"say \"hi\"\"\"\"\n",
			map[string]any{"a": "line one\nline two", "b": "raw \\n\n", "c": `say "hi"`}},
	}
	for _, c := range cases {
		got, err := parseTOML(c.doc)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\ngot  %#v\nwant %#v", c.name, got, c.want)
		}
	}
	got, err := parseTOML("a = inf\nb = -inf\nc = nan\n")
	if err != nil || !math.IsInf(got["a"].(float64), 1) || !math.IsInf(got["b"].(float64), -1) || !math.IsNaN(got["c"].(float64)) {
		t.Errorf("inf and nan: %v %v", got, err)
	}
}

// TestParseTOMLErrors checks that what the reader refuses is named with
// its line.
func TestParseTOMLErrors(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"a = 1\na = 2\n", "line 2: key a is defined twice"},
		{"[a]\nx = 1\n[a]\n", "line 3: table [a] is defined twice"},
		{"a = 1\n[a]\n", "line 2: a is already a value, not a table"},
		{"a = \"open\n", "line 1: the string is not closed on its line"},
		{"a = [1, 2\n", "line 2: the array is not closed"},
		{"a = \"\"\"never", "line 1: the multi-line string is not closed"},
		{"when = 1979-05-27T07:32:00Z\n", "line 1: dates and times are not read"},
		{"t = 07:32:00\n", "dates and times are not read"},
		{"a = 1 b = 2\n", "line 1: expected the end of the line"},
		{"a = yes\n", `line 1: expected a value, found "yes"`},
		{"\n\n= 1\n", "line 3: expected a key"},
		{"a = \"\\q\"\n", `unknown escape \q`},
		{"a = {x = 1\n", "expected , or } in an inline table"},
		{"[a\n", "expected ] after the table name"},
	}
	for _, c := range cases {
		_, err := parseTOML(c.doc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.doc, err, c.want)
		}
	}
}
