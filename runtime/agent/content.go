package agent

import (
	"encoding/json"
	"strings"
)

// ContentText is a chat message's content as text: the string, or the
// text parts of a list joined by newlines (images are left out). It reads
// the conversations other agents recorded (Harbor's ATIF, OpenClaw's
// requests) into turns.
func ContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
