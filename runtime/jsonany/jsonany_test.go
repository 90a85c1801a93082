package jsonany

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// viaEncodingJSON is how nel decoded before Decode, and still does what
// Decode leaves: the reference Decode must agree with.
func viaEncodingJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the first value")
	}
	return v, nil
}

// cases are JSON of every kind Decode meets: the ones it decodes and the
// ones it must leave to encoding/json.
var cases = []string{
	`{"question": "What is 2 times 3?", "answer": "It is 6.\n#### 6"}`,
	`  {"a":1,"b":-2.5e+3,"c":0,"d":1E9,"e":-0.0,"f":12345678901234567890123}  `,
	"\t{\"a\" : [1, [2, {}], []] ,\r\n \"b\":{\"c\":{\"d\":null}}}\n",
	`{"t":true,"f":false,"n":null,"s":"","arr":[true,false,null]}`,
	`{"esc":"q\" b\\ s\/ \b\f\n\r\t end"}`,
	`{"dup":1,"dup":"two"}`,
	`{"unicode":"héllo wörld ✓ 𝄞","k✓":"v"}`,
	`[{"a":1},{"a":2}]`,
	`{}`, `[]`, `{"e":{}, "a":[]}`,
	`{"u":"\u00e9\ud834\udd1e \u003cthink\u003e \u0000 \uABCD"}`, `{"lone":"\ud800x", "reversed":"\udd1e\ud834", "then":"\ud800\u0041"}`,
	`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"nel-sim","choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 42.\n#### 42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}}`,
	// Left to encoding/json: it rewrites or refuses these.
	`{"short":"\u12"}`, `{"hex":"\u12G4"}`,
	"{\"latin1\":\"caf\xe9\"}", "{\"surrogate in utf-8\":\"\xed\xa0\x80\"}",
	"{\"ctl\":\"a\x01b\"}", `{"esc":"\x"}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":+1}`, `{"a":1x}`,
	`{"a":tru}`, `{"a":truex}`, `{"a":nul}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1`, `[1,2`, `[1 2]`,
	`{"a":1} {"b":2}`, `{"a":1} x`, `{"a":"unterminated}`, "\xef\xbb\xbf{\"bom\":1}",
	`"a string"`, `42`, `null`, ``, `   `,
	strings.Repeat("[", 150) + strings.Repeat("]", 150),
	strings.Repeat(`{"a":`, 120) + "1" + strings.Repeat("}", 120),
}

// TestDecodeAgrees: whatever Decode decodes, encoding/json decodes to the
// same value (numbers as json.Number, the last of duplicate keys, empty
// objects and arrays non-nil, the same runes for \u escapes and lone
// surrogates).
func TestDecodeAgrees(t *testing.T) {
	decoded := 0
	for _, in := range cases {
		check(t, []byte(in))
		if _, ok := Decode([]byte(in)); ok {
			decoded++
		}
	}
	// The valid lines above must take the fast path, or it saves nothing.
	if decoded != 14 {
		t.Errorf("Decode decoded %d of the cases, want the 14 before the first it leaves", decoded)
	}
}

func check(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := viaEncodingJSON(in)
	got, ok := Decode(in)
	if !ok {
		if got != nil {
			t.Fatalf("%q: Decode refused it but gave %#v", in, got)
		}
		return
	}
	if wantErr != nil {
		t.Fatalf("%q: Decode gave %#v, encoding/json refuses it: %v", in, got, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: Decode gave %#v, encoding/json %#v", in, got, want)
	}
}

func TestDecodeEmptyContainers(t *testing.T) {
	v, ok := Decode([]byte(`{"o":{},"a":[]}`))
	if !ok {
		t.Fatal("not decoded")
	}
	m := v.(map[string]any)
	if o, _ := m["o"].(map[string]any); o == nil {
		t.Errorf("o = %#v, want an empty non-nil map", m["o"])
	}
	if a, _ := m["a"].([]any); a == nil {
		t.Errorf("a = %#v, want an empty non-nil slice", m["a"])
	}
}

// A line decodes in a handful of allocations: its map, keys and values,
// not a json.Decoder's buffers (about 2 KiB a line before).
func TestDecodeAllocs(t *testing.T) {
	line := []byte(`{"question": "Item 7: what is 7 times 3?", "answer": "It is three times.\n#### 21"}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := Decode(line); !ok {
			t.Fatal("not decoded")
		}
	})
	// The map (2: its header and its group), its two keys (2), two
	// values (2, the escaped answer's in one) and their interface boxes (2).
	if allocs > 8 {
		t.Errorf("Decode: %v allocations a line, want at most 8", allocs)
	}
}

// FuzzDecode: Decode never disagrees with encoding/json.
func FuzzDecode(f *testing.F) {
	for _, in := range cases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { check(t, in) })
}

// Escape reads one escape and its length; a surrogate half is returned
// as it is, for the caller to pair or refuse.
func TestEscape(t *testing.T) {
	for _, c := range []struct {
		in   string
		r    rune
		n    int
		isOK bool
	}{
		{`\n rest`, '\n', 2, true},
		{`\/`, '/', 2, true},
		{`\u00e9x`, 'é', 6, true},
		{`\uD83D\uDE00`, 0xD83D, 6, true},
		{`\x`, 0, 2, false},
		{`\u12`, 0, 6, false},
		{`\`, 0, 0, false},
		{`n`, 0, 0, false},
	} {
		r, n, ok := Escape([]byte(c.in))
		if ok != c.isOK || (ok && (r != c.r || n != c.n)) {
			t.Errorf("Escape(%q) = %q, %d, %v; want %q, %d, %v", c.in, r, n, ok, c.r, c.n, c.isOK)
		}
	}
}
