package bench

import (
	"bytes"
	"encoding/json"
	"testing"
)

var canonicalStrings = []string{
	"", "plain", "q\" b\\ s/", "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<a href='x'>&amp;</a>",
	"héllo ✓ 𝄞", "line\u2028sep\u2029end", "caf\xe9", "\xed\xa0\x80", "\xf0\x9f", "tail\xff",
}

// TestAppendCanonicalAgrees: where appendCanonical writes a value, it
// writes encoding/json's bytes; it leaves what it does not know to it.
func TestAppendCanonicalAgrees(t *testing.T) {
	values := []any{
		nil, true, false, json.Number("12"), json.Number("-0.5e+10"),
		[]any{}, []any(nil), map[string]any{}, map[string]any(nil),
		map[string]any{"question": "Item 7: what is 7 times 3?", "answer": "It is three times.\n#### 21"},
		map[string]any{"b": []any{json.Number("1"), "x", nil, map[string]any{"z": true, "a": false}}, "a": "1", "": "empty key", "é": "k"},
		map[string]any{"choices": []any{"A", "B"}, "_dup": json.Number("2")},
	}
	for _, s := range canonicalStrings {
		values = append(values, s, map[string]any{s: s}, []any{s})
	}
	for _, v := range values {
		checkCanonical(t, v, true)
	}
	// encoding/json's own: other number types, invalid or empty numbers.
	for _, v := range []any{3, 2.5, int64(7), json.Number(""), json.Number("1."), json.Number("0x1"), []string{"a"},
		map[string]any{"n": 1.5}, []any{"a", json.Number("+1")}} {
		checkCanonical(t, v, false)
	}
}

func checkCanonical(t *testing.T, v any, wantOK bool) {
	t.Helper()
	want, wantErr := encodeCanonical(v)
	got, ok := appendCanonical(nil, v)
	if ok != wantOK {
		t.Errorf("%#v: appendCanonical ok=%v, want %v", v, ok, wantOK)
	}
	if ok && (wantErr != nil || !bytes.Equal(got, want)) {
		t.Errorf("%#v: appendCanonical wrote %q, encoding/json %q (%v)", v, got, want, wantErr)
	}
	if wantErr == nil && !bytes.Equal(canonicalJSON(v), want) {
		t.Errorf("%#v: canonicalJSON %q, want %q", v, canonicalJSON(v), want)
	}
}

// FuzzAppendCanonical: any string, as a value and as a key, is written as
// encoding/json writes it.
func FuzzAppendCanonical(f *testing.F) {
	for _, s := range canonicalStrings {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		checkCanonical(t, map[string]any{k: v, "n": []any{v, json.Number("1")}}, true)
	})
}

// An item's content is hashed in a few allocations (the buffer growing),
// not encoding/json's reflection (8 before).
func TestContentSumAllocs(t *testing.T) {
	content := map[string]any{"question": "Item 7: what is 7 times 3?", "answer": "It is three times.\n#### 21"}
	if n := testing.AllocsPerRun(100, func() { contentSum(content) }); n > 3 {
		t.Errorf("contentSum: %v allocations, want at most 3", n)
	}
}
