package jsonany

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkAppend holds Append to json.Marshal on v: the same bytes where
// Marshal succeeds, ok false where it fails.
func checkAppend(t *testing.T, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, ok := Append([]byte("prefix"), v)
	if werr != nil {
		if ok {
			t.Fatalf("Append(%#v) = %s, ok; json.Marshal: %v", v, got, werr)
		}
		return
	}
	if !ok || !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("Append(%#v) = %s, %v; json.Marshal: %s", v, got, ok, want)
	}
}

func TestAppendCases(t *testing.T) {
	for _, v := range []any{
		nil, "", "plain", "<a href=\"x\">&amp;</a>", "tab\tnl\nret\r\b\f\x00\x1f\x7f", "é中😀",
		"\xff\xfe", "a\u2028b\u2029c", "\\", true, false, 0.0, math.Copysign(0, -1), 1.0, 0.5, 1e-6, 9.99e-7, 1e-9, -1e-9,
		1e20, 1e21, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1),
		3, int64(-7), []string{"a", "<"}, []string(nil), []any{1.5, "x", nil, []any{}},
		map[string]any{"method": "answer_line", "extracted": "$18.", "pattern": `(?i)\s*`, "z": map[string]any{"n": 1.0}},
		map[string]float64{"b": 1, "a": 0.25}, map[string]any(nil), map[string]float64(nil),
		map[string]any{"bad": math.Inf(-1)},
	} {
		checkAppend(t, v)
	}
	// What it does not know it leaves to encoding/json.
	for _, v := range []any{struct{ A int }{1}, []any{struct{}{}}, json.Number("1"), map[string]int{"a": 1}} {
		if b, ok := Append(nil, v); ok {
			t.Fatalf("Append(%#v) = %s, ok", v, b)
		}
	}
}

// TestAppendRandom holds Append to json.Marshal on random strings (of
// the bytes that are escaped or not) and random floats of every scale.
func TestAppendRandom(t *testing.T) {
	pieces := []string{"a", " ", "\"", "\\", "<", ">", "&", "\n", "\x01", "\x7f", "é", "\u2028", "\xff", "\xe2\x80", "😀", "\ufffd"}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		var b strings.Builder
		for range rng.IntN(10) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		f := math.Float64frombits(rng.Uint64())
		checkAppend(t, map[string]any{b.String(): f, "k": b.String(), "f": rng.Float64() * math.Pow(10, float64(rng.IntN(60)-30))})
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("<é\xff\u2028>")
	f.Fuzz(func(t *testing.T, s string) { checkAppend(t, s) })
}

// TestUnquoteMatchesUnmarshal holds Unquote to json.Unmarshal into a
// string on random tokens of escapes (surrogate pairs and lone halves
// included), raw runes and malformed pieces: the same string where it
// says ok, and never ok where encoding/json refuses the token.
func TestUnquoteMatchesUnmarshal(t *testing.T) {
	pieces := []string{"a", `\n`, `\"`, `\\`, `\/`, `\u00e9`, `\ud83d`, `\ude00`, `\ud83d\ude00`, `\u2028`,
		`\x`, `\u12`, "é", "\xff", "\x01", `"`, " ", "<&>"}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 100000 {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		tok := []byte(b.String())
		var want string
		werr := json.Unmarshal(tok, &want)
		got, ok := Unquote(tok)
		if ok && (werr != nil || got != want) {
			t.Fatalf("Unquote(%s) = %q; json.Unmarshal: %q, %v", tok, got, want, werr)
		}
		if !ok && werr == nil && !strings.Contains(b.String(), "\xff") {
			t.Fatalf("Unquote(%s) not ok; json.Unmarshal took it: %q", tok, want)
		}
	}
}

// AppendStringNoHTML writes what a json.Encoder with SetEscapeHTML(false)
// writes for a string, on random strings of every escape.
func TestAppendStringNoHTML(t *testing.T) {
	pieces := []string{"a", "\"", "\\", "<", ">", "&", "\n", "\x01", "\x7f", "é", "\u2028", "\xff", "\xe2\x80", "😀"}
	rng := rand.New(rand.NewPCG(13, 14))
	for range 50000 {
		var b strings.Builder
		for range rng.IntN(10) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(b.String())
		if got := AppendStringNoHTML(nil, b.String()); string(got)+"\n" != want.String() {
			t.Fatalf("AppendStringNoHTML(%q) = %s, the encoder %s", b.String(), got, want.String())
		}
	}
}
