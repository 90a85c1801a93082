package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/model"
)

// An answer table answers its prompts, over chat (the last user message)
// and completions (the whole prompt), before any item; other prompts are
// answered as before. It changes the fingerprint only when it is there.
func TestAnswerTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "answers.jsonl")
	os.WriteFile(path, []byte(`{"prompt": "Capital of Peru?", "response": "Lima"}

{"prompt": "Capital of Japan?", "response": "Tokyo.\nA big city."}
`), 0o644)
	answers, err := ReadAnswers(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != 2 || answers["Capital of Japan?"] != "Tokyo.\nA big city." {
		t.Fatalf("answers %q", answers)
	}
	f := start(t, Config{Answers: answers}, 3)
	c := f.client(t)
	r, err := c.Complete(context.Background(), model.Request{Messages: []model.Message{
		{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Capital of Japan?"}}})
	if err != nil || r.Content != "Tokyo.\nA big city." {
		t.Errorf("chat: %+v %v", r, err)
	}
	cc := f.client(t, func(c *model.Config) { c.Protocol = model.Completions })
	if r, err := cc.Complete(context.Background(), model.Request{Prompt: "Capital of Peru?"}); err != nil || r.Content != "Lima" {
		t.Errorf("completions: %+v %v", r, err)
	}
	if r, err := c.Complete(context.Background(), chat(&f.items[0], 1)); err != nil || !f.b.Score(&f.items[0], r.Content).Correct {
		t.Errorf("an item outside the table: %+v %v", r, err)
	}
	if st := f.sim.Stats(); st.Table != 2 || st.Correct != 1 || st.Unknown != 0 {
		t.Errorf("stats %+v, want 2 from the table and 1 correct", st)
	}
	if fingerprint(Config{Answers: answers}) == fingerprint(Config{}) {
		t.Error("a table does not change the fingerprint")
	}
	if fingerprint(Config{Answers: map[string]string{}}) != fingerprint(Config{}) {
		t.Error("an empty table changes the fingerprint")
	}
}

func TestReadAnswersErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ src, want string }{
		{`{"prompt": "a", "response": "b"}` + "\n" + `{"prompt": "a", "response": "c"}`, `:2: the prompt "a" is already in the table`},
		{`{"prompt": "a"}`, `:1: want {"prompt": …, "response": …}`},
		{`{"prompt": "a", "response": "b", "seed": 1}`, `:1: json: unknown field "seed"`},
		{`not json`, `:1: invalid character`},
	} {
		path := filepath.Join(dir, "a.jsonl")
		os.WriteFile(path, []byte(c.src), 0o644)
		if _, err := ReadAnswers(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
	if _, err := ReadAnswers(filepath.Join(dir, "none.jsonl")); err == nil {
		t.Error("a missing file reads")
	}
}
