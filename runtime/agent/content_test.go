package agent

import (
	"encoding/json"
	"testing"
)

func TestContentText(t *testing.T) {
	for raw, want := range map[string]string{
		`"plain"`: "plain",
		`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]`: "a\nb",
		`null`: "",
		`7`:    "",
	} {
		if got := ContentText(json.RawMessage(raw)); got != want {
			t.Errorf("ContentText(%s) = %q, want %q", raw, got, want)
		}
	}
}
