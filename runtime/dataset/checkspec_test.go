package dataset

import (
	"strings"
	"testing"
)

// TestCheckSpec: a spec's syntax is judged as Load would judge it, before
// anything is read; a local path is never looked at.
func TestCheckSpec(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"data/x.jsonl", ""},
		{"/does/not/exist.csv", ""},
		{"hf://openai/gsm8k?config=main&split=test&revision=abc", ""},
		{"https://example.org/d/test.jsonl.gz", ""},
		{"hf://openai/gsm8k?splt=test", `unknown parameter "splt"`},
		{"hf://gsm8k", "want hf://org/name?config=&split=&revision="},
		{"hf://openai/gsm8k?split=", "split needs exactly one non-empty value"},
		{"https://example.org/", "the URL names no file"},
		{"https://example.org/data.xlsx", `unknown file type "data.xlsx"`},
		{"https://user:secret@example.org/d.jsonl", "credentials in URLs are not supported"},
		{"s3://bucket/d.jsonl", `unknown scheme "s3://"`},
	} {
		err := CheckSpec(c.spec)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckSpec(%q) = %v, want nil", c.spec, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckSpec(%q) = %v, want %q", c.spec, err, c.want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("CheckSpec(%q) = %v: names the password", c.spec, err)
		}
	}
}
