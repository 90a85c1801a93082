package jsonany

import (
	"bytes"
	"encoding/json"
	"testing"
)

// What Decode returns, AppendValue writes back as an encoding/json Encoder
// with SetEscapeHTML(false) does: keys sorted, numbers as written, no
// HTML escapes. (runtime/bench's canonical JSON tests hold it to
// encoding/json on every kind of string.)
func TestAppendValueRoundTrip(t *testing.T) {
	in := []byte(`{"model":"m","messages":[{"role":"system","content":"<think>a & b</think>"},{"role":"user","content":"2\u2028\n"}],"temperature":0.70,"max_tokens":1e3,"stop":null,"stream":false}`)
	v, ok := Decode(in)
	if !ok {
		t.Fatal("Decode refused the body")
	}
	got, ok := AppendValue(nil, v)
	if !ok {
		t.Fatal("AppendValue refused what Decode returned")
	}
	var want bytes.Buffer
	e := json.NewEncoder(&want)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
		t.Errorf("AppendValue wrote\n%s\nencoding/json\n%s", got, w)
	}
	if !bytes.Contains(got, []byte(`"<think>a & b</think>"`)) || !bytes.Contains(got, []byte(`"temperature":0.70`)) {
		t.Errorf("HTML escaped or a number rewritten: %s", got)
	}
	if _, ok := AppendValue(nil, map[string]any{"t": 0.5}); ok {
		t.Error("a float64 (a config's number) is encoding/json's to write, AppendValue wrote it")
	}
}
