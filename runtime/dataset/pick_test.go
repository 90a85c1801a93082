package dataset

import (
	"strings"
	"testing"
)

// pickCases are records pick reads (want true) or leaves to decodeObject
// (false): what it cannot read exactly, and what is not valid JSON.
var pickCases = []struct {
	line string
	want bool
}{
	{`{"q": "What is 2?", "a": "4\n#### 4"}` + "\n", true},
	{` {"a":"x","q":"y","n":1.5e-3,"t":true,"f":false,"z":null,"l":[1,[],{}],"o":{"q":"inner"}}` + "\r\n", true},
	{`{"q": "\u00e9\u4e2d \"\\\/\b\f\n\r\t", "a": "é 😀 <&>", "x": "\ud83d\ude00"}`, false}, // a surrogate pair elsewhere
	{`{"q": "\u00e9\u4e2d \"\\\/\b\f\n\r\t", "a": "é 😀 <&>"}`, true},
	{`{"q": "-0", "a": "x", "n": [-0, 0.5, 10, 1E+2, 3e4]}`, true},
	{`{"q": "\ud83d\ude00", "a": "x"}`, false}, // surrogates: left to encoding/json
	{`{"q": "x"}`, false},         // "a" missing
	{`{"q": "x", "a": 1}`, false}, // not a string
	{`{"q": "x", "a": null}`, false},
	{`{"q": "x", "a": "y", "q": "z"}`, false},      // repeated
	{`{"q": "x", "\u0061": "y"}`, false},           // escaped key
	{"{\"q\": \"bad \xff\", \"a\": \"y\"}", false}, // invalid UTF-8
	{"{\"q\": \"x\", \"a\": \"y\", \"o\": \"bad \xff\"}", true},
	{`{"q": "x", "a": "y"} {}`, false},
	{`{"q": "x", "a": "y",}`, false},
	{`{"q": "x", "a": "y", "n": 01}`, false},
	{`{"q": "x", "a": "y", "n": 1.}`, false},
	{`{"q": "x", "a": "y", "n": .5}`, false},
	{`{"q": "x", "a": "y", "n": +1}`, false},
	{`{"q": "x", "a": "y", "n": 1e}`, false},
	{`{"q": "x", "a": "y", "n": -}`, false},
	{`{"q": "x", "a": "y", "t": tru}`, false},
	{`{"q": "x", "a": "y", "l": [1,]}`, false},
	{`{"q": "x", "a": "y", "s": "tab	inside"}`, false}, // a raw tab in a string
	{`{"q": "x", "a": "y", "s": "\x"}`, false},
	{`{"q": "x", "a": "y", "s": "\u12g4"}`, false},
	{`{"q": "x", "a": "y"`, false},
	{`["q", "a"]`, false},
	{"\ufeff" + `{"q": "x", "a": "y"}`, false},
	{`{"q": "x", "a": "y", "d": ` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, false},
	{``, false},
}

// TestPickMatchesDecode: what pick reads of a record is what decoding it
// whole gives, and pick never reads a record decodeObject refuses.
func TestPickMatchesDecode(t *testing.T) {
	for _, c := range pickCases {
		if got := checkPick(t, c.line); got != c.want {
			t.Errorf("pick(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}

func checkPick(t *testing.T, line string) bool {
	t.Helper()
	names := []string{"q", "a"}
	out := make([]string, 2)
	ok := pick([]byte(line), names, out)
	rec, err := decodeObject([]byte(line))
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("pick read %q, which decodeObject refuses: %v", line, err)
	}
	for i, n := range names {
		if rec[n] != out[i] {
			t.Fatalf("pick read %s = %q of %q, decodeObject %#v", n, out[i], line, rec[n])
		}
	}
	return true
}

func FuzzPick(f *testing.F) {
	for _, c := range pickCases {
		f.Add(c.line)
	}
	f.Fuzz(func(t *testing.T, line string) { checkPick(t, line) })
}
