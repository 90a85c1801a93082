package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// ReadAnswers reads an answer table (Config.Answers) from a JSONL file: one
// object per line, {"prompt": "...", "response": "..."}. Blank lines are
// skipped; a prompt given twice is an error, since only one response can
// be the table's.
func ReadAnswers(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e struct {
			Prompt   *string `json:"prompt"`
			Response *string `json:"response"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("answers %s:%d: %w", path, n, err)
		}
		if e.Prompt == nil || e.Response == nil {
			return nil, fmt.Errorf("answers %s:%d: want {\"prompt\": …, \"response\": …}", path, n)
		}
		if _, dup := out[*e.Prompt]; dup {
			return nil, fmt.Errorf("answers %s:%d: the prompt %q is already in the table", path, n, *e.Prompt)
		}
		out[*e.Prompt] = *e.Response
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("answers %s: %w", path, err)
	}
	return out, nil
}
