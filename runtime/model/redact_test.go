package model

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const long = "sk-0123456789abcdef"
	for _, tc := range []struct {
		text, key, want string
	}{
		// A short key: whole tokens only; ordinary words keep their letters.
		{"the file does not exist", "x", "the file does not exist"},
		{"Authorization: Bearer x", "x", "Authorization: Bearer [redacted]"},
		{"Bearer x, then exist", "x", "Bearer [redacted], then exist"},
		{"x", "x", "[redacted]"},
		{"GET https://h/v1?api_key=x&model=m", "x", "GET https://h/v1?api_key=[redacted]&model=m"},
		{"GET https://x:x@h/v1", "x", "GET https://[redacted]:[redacted]@h/v1"},
		{`{"api_key":"abc","name":"abcd","note":"xabc"}`, "abc", `{"api_key":"[redacted]","name":"abcd","note":"xabc"}`},
		{"key abc_def or abc-d or abc.", "abc", "key abc_def or abc-d or [redacted]."},
		{"naïvex éx x", "x", "naïvex éx [redacted]"},
		// Overlapping matches: the first is inside a token, the second
		// is whole.
		{"aa a", "a a", "aa a"},
		{"- a a", "a a", "- [redacted]"},
		// A long key: everywhere, even glued to other characters.
		{"Bearer " + long, long, "Bearer [redacted]"},
		{"Bearer%20" + long + "%0A", long, "Bearer%20[redacted]%0A"},
		{`{"error":{"message":"bad header Bearer ` + long + `"}}`, long, `{"error":{"message":"bad header Bearer [redacted]"}}`},
		{"https://h/v1?key=" + long + "&" + long, long, "https://h/v1?key=[redacted]&[redacted]"},
		// No key: nothing to do.
		{"anything", "", "anything"},
	} {
		if got := Redact(tc.text, tc.key); got != tc.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", tc.text, tc.key, got, tc.want)
		}
	}
}

// A short key is redacted from an echoed header without eating the letters
// of ordinary words, and New warns once that it cannot be redacted
// reliably; a long key gets no warning.
func TestShortAPIKey(t *testing.T) {
	for _, key := range []string{"x", "sk-0123456789"} {
		var logs bytes.Buffer
		c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			reply(401, fmt.Sprintf(`{"error":{"message":"the key does not exist: %s"}}`, r.Header.Get("Authorization")))(w, r)
		}, func(c *Config) {
			c.APIKey = key
			c.MaxRetries = 1
			c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		_, err := c.Complete(context.Background(), chatReq())
		if err == nil {
			t.Fatal("no error")
		}
		if !strings.Contains(err.Error(), "does not exist: Bearer [redacted]") {
			t.Errorf("key %q: error %q should keep \"exist\" and redact the key", key, err)
		}
		warned := strings.Count(logs.String(), "cannot be redacted reliably")
		if short := len(key) < MinRedactableKey; short && warned != 1 || !short && warned != 0 {
			t.Errorf("key of %d characters: %d warnings, want one for a short key only:\n%s", len(key), warned, logs.String())
		}
		if strings.Contains(logs.String(), "="+key+" ") || strings.Contains(logs.String(), "Bearer "+key) {
			t.Errorf("the log holds the key:\n%s", logs.String())
		}
	}
}
