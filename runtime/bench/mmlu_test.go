package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const gpqaSpec = "hf://Idavidrein/gpqa?config=gpqa_diamond&split=train"

// writeJSONL writes rows to a temp file and returns its path.
func writeJSONL(t *testing.T, name string, rows []map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// gpqaRows is the 6-row fixture (testdata/gpqa_diamond.jsonl; the real
// GPQA Diamond is gated and not in the repository) plus synthetic rows in
// the same layout, enough to look at the distribution of positions.
func gpqaRows(t *testing.T, n int) []map[string]any {
	rows := readJSONL(t, "testdata/gpqa_diamond.jsonl")
	for i := range n {
		rows = append(rows, map[string]any{"Question": fmt.Sprintf("Synthetic question %d?", i),
			"Correct Answer": fmt.Sprintf("right %d", i), "Incorrect Answer 1": fmt.Sprintf("wrong %d a", i),
			"Incorrect Answer 2": fmt.Sprintf("wrong %d b", i), "Incorrect Answer 3": fmt.Sprintf("wrong %d c", i),
			"High-level domain": "Physics"})
	}
	return rows
}

// TestGPQAShuffleStable: an item's option order is a function of the item
// (and params.choice_seed) alone, so it is the same whatever rows come
// before it — reversed data, a subset, another shard.
func TestGPQAShuffleStable(t *testing.T) {
	rows := gpqaRows(t, 394)
	full := loadSet(t, newLoader(""), "gpqa", map[string]any{"data_path": writeJSONL(t, "gpqa.jsonl", rows)})
	if len(full.Items) != 400 {
		t.Fatalf("%d gpqa items, want 400", len(full.Items))
	}
	// The fixture's rows get the same order loaded on their own, from the
	// Hub layout.
	td, _ := filepath.Abs("testdata")
	hub := loadSet(t, fakeHub{newLoader(td), map[string]string{gpqaSpec: "gpqa_diamond.jsonl"}}, "gpqa", nil)
	for i, it := range hub.Items {
		if it.ID != full.Items[i].ID || it.Prompt != full.Items[i].Prompt {
			t.Errorf("fixture item %d differs when loaded with other rows", i)
		}
	}
	byID := map[string]Item{}
	for _, it := range full.Items {
		byID[it.ID] = it
	}
	var rev, sub []map[string]any
	for i := len(rows) - 1; i >= 0; i-- {
		rev = append(rev, rows[i])
		if i%3 == 1 {
			sub = append(sub, rows[i])
		}
	}
	for name, rs := range map[string][]map[string]any{"reversed": rev, "subset": sub} {
		s := loadSet(t, newLoader(""), "gpqa", map[string]any{"data_path": writeJSONL(t, "gpqa.jsonl", rs)})
		if len(s.Items) != len(rs) {
			t.Fatalf("%s: %d items, want %d", name, len(s.Items), len(rs))
		}
		for _, it := range s.Items {
			want, ok := byID[it.ID]
			if !ok {
				t.Fatalf("%s: item ID %s not in the full load", name, it.ID)
			}
			if it.Prompt != want.Prompt || it.Expected != want.Expected {
				t.Errorf("%s: item %s shuffled differently:\n%q (%s)\n%q (%s)", name, it.ID, it.Prompt, it.Expected, want.Prompt, want.Expected)
			}
		}
	}

	// The correct answer's position is close to uniform: chi-square over
	// the four letters, 3 degrees of freedom, below the 1% critical value
	// 11.34.
	count := map[string]int{}
	for _, it := range full.Items {
		count[it.Expected]++
	}
	exp := float64(len(full.Items)) / 4
	chi := 0.0
	for _, l := range []string{"A", "B", "C", "D"} {
		d := float64(count[l]) - exp
		chi += d * d / exp
	}
	t.Logf("gpqa answer positions over %d items %v, chi-square %.2f", len(full.Items), count, chi)
	if chi > 11.34 {
		t.Errorf("answer positions %v: chi-square %.2f > 11.34", count, chi)
	}

	// choice_seed re-shuffles (most items move) without changing IDs.
	other := loadSet(t, newLoader(""), "gpqa", map[string]any{"data_path": writeJSONL(t, "gpqa.jsonl", rows), "choice_seed": 7})
	moved := 0
	for i, it := range other.Items {
		if it.ID != full.Items[i].ID {
			t.Fatalf("choice_seed changed item %d's ID", i)
		}
		if it.Prompt != full.Items[i].Prompt {
			moved++
		}
	}
	if moved < len(other.Items)/2 {
		t.Errorf("choice_seed 7 reordered only %d of %d items", moved, len(other.Items))
	}
}

// TestMultichoiceScoring: the default verdict is the robust extractor's,
// NeMo's first-match verdict rides along as scorer:multichoice_regex.
func TestMultichoiceScoring(t *testing.T) {
	td, _ := filepath.Abs("testdata")
	b := mustLookup(t, "gpqa")
	s := loadSet(t, fakeHub{newLoader(td), map[string]string{gpqaSpec: "gpqa_diamond.jsonl"}}, "gpqa", nil)
	it := &s.Items[0]
	wrong := otherLetter("ABCD", it.Expected, rngOr(nil))
	// A reasoning model that writes a discarded "Answer: X" first.
	resp := "Let me see. Answer: " + wrong + "? No — that ignores the spin degeneracy.\n\nRe-deriving 2S+1 carefully, I get the other value.\n\nAnswer: " + it.Expected
	sc := b.Score(it, resp)
	if !sc.Correct || sc.Extracted != it.Expected || sc.Method != "mcq_robust" || sc.Details["how"] != "statement" {
		t.Errorf("robust verdict: %+v", sc)
	}
	if v, ok := sc.Scores["scorer:multichoice_regex"]; !ok || v != 0 {
		t.Errorf("NeMo's first-match verdict should be 0 here: %v", sc.Scores)
	}
	if sc := b.Score(it, "Answer: "+it.Expected); !sc.Correct || sc.Scores["scorer:multichoice_regex"] != 1 {
		t.Errorf("plain answer: %+v", sc)
	}
	if sc := b.Score(it, "Answer: E"); sc.Correct || sc.Extracted != "" {
		t.Errorf("a letter outside A-D was extracted: %+v", sc)
	}
}

var mmluProTestRows = []map[string]any{
	{"question_id": 1, "question": "What do cells use for energy?", "options": []any{"ATP", "DNA", "N/A", "RNA"},
		"answer": "A", "answer_index": 0, "cot_content": "", "category": "biology"},
	{"question_id": 2, "question": "Which is a tort?", "options": []any{"Battery", "Contract", "Lease", "Deed", "Will"},
		"answer": "A", "answer_index": 0, "cot_content": "", "category": "law"},
}

func mmluProShots() []map[string]any {
	var rows []map[string]any
	for k := range 6 {
		rows = append(rows, map[string]any{"question_id": 100 + k, "question": "Bio Q" + string(rune('0'+k)),
			"options": []any{"x", "y", "N/A"}, "answer": "B", "answer_index": 1,
			"cot_content": "A: Let's think step by step. Reason " + string(rune('0'+k)) + ". The answer is (B).",
			"category":    "biology"})
	}
	return append(rows, map[string]any{"question_id": 200, "question": "Law Q", "options": []any{"p", "q"},
		"answer": "A", "answer_index": 0, "cot_content": "A: Let's think step by step. Duty. The answer is (A).", "category": "law"})
}

// TestMMLUProOfficial: TIGER-Lab's 5-shot CoT prompt, built from the
// category's first five validation rows, N/A options dropped; the official
// extraction; the seeded guess when nothing is extracted.
func TestMMLUProOfficial(t *testing.T) {
	b := mustLookup(t, "mmlu_pro")
	data := writeJSONL(t, "test.jsonl", mmluProTestRows)
	shots := writeJSONL(t, "validation.jsonl", mmluProShots())
	params := map[string]any{"data_path": data, "prompt_style": "official", "fewshot_path": shots}
	s := loadSet(t, newLoader(""), "mmlu_pro", params)
	if len(s.Items) != 2 || len(s.Datasets) != 2 {
		t.Fatalf("%d items, %d datasets; want 2 and 2 (data and few-shot pool)", len(s.Items), len(s.Datasets))
	}
	var want strings.Builder
	want.WriteString("The following are multiple choice questions (with answers) about biology. Think step by step and then finish your answer with \"the answer is (X)\" where X is the correct letter choice.\n\n")
	for k := range 5 {
		d := string(rune('0' + k))
		want.WriteString("Question:\nBio Q" + d + "\nOptions:\nA. x\nB. y\nAnswer: Let's think step by step. Reason " + d + ". The answer is (B).\n\n")
	}
	want.WriteString("Question:\nWhat do cells use for energy?\nOptions:\nA. ATP\nB. DNA\nC. RNA\nAnswer: Let's think step by step.")
	if got := s.Items[0].Prompt; got != want.String() {
		t.Errorf("official prompt:\n%q\nwant\n%q", got, want.String())
	}
	if !strings.HasSuffix(s.Items[1].Prompt, "about law. Think step by step and then finish your answer with \"the answer is (X)\" where X is the correct letter choice.\n\n"+
		"Question:\nLaw Q\nOptions:\nA. p\nB. q\nAnswer: Let's think step by step. Duty. The answer is (A).\n\n"+
		"Question:\nWhich is a tort?\nOptions:\nA. Battery\nB. Contract\nC. Lease\nD. Deed\nE. Will\nAnswer: Let's think step by step.") {
		t.Errorf("law prompt: %q", s.Items[1].Prompt)
	}
	// Same items, same IDs, whatever the prompt style.
	nemo := loadSet(t, newLoader(""), "mmlu_pro", map[string]any{"data_path": data})
	for i := range s.Items {
		if s.Items[i].ID != nemo.Items[i].ID {
			t.Errorf("item %d: ID differs between prompt styles", i)
		}
	}
	if nemo.Items[0].Prompt == s.Items[0].Prompt || !strings.HasPrefix(nemo.Items[0].Prompt, "Answer the following multiple choice question.") {
		t.Error("the default prompt should stay NeMo's")
	}

	it := &s.Items[0]
	// The first "answer is" wins, as in the official script.
	sc := b.Score(it, "Let's see. The answer is (A). Later I doubt it: the answer is (C).")
	if !sc.Correct || sc.Extracted != "A" || sc.Method != "mmlu_pro_official" || sc.Details["how"] != "answer_is" {
		t.Errorf("official score: %+v", sc)
	}
	if sc.Scores["scorer:mcq_robust"] != 0 {
		t.Errorf("the robust extractor takes the last answer (C), wrong here: %v", sc.Scores)
	}
	// No letter at all: the seeded guess, among the item's three options,
	// the same on every call.
	none := "energy comes from food, mostly."
	g := b.Score(it, none)
	guess, _ := g.Details["guess"].(string)
	if g.Extracted != "" || g.Details["how"] != "random" || len(guess) != 1 || !strings.Contains("ABC", guess) || g.Correct != (guess == it.Expected) {
		t.Errorf("fallback: %+v", g)
	}
	if g2 := b.Score(it, none); g2.Details["guess"] != guess {
		t.Error("the fallback guess is not reproducible")
	}
	guesses := map[string]bool{}
	for i := range 40 {
		guesses[seededLetter(string(rune('a'+i)), "ABCD")] = true
	}
	if len(guesses) != 4 {
		t.Errorf("seeded guesses over 40 keys cover only %v", guesses)
	}
	checkRespond(t, b, s)

	// A shorter pool and num_fewshot.
	one := loadSet(t, newLoader(""), "mmlu_pro", map[string]any{"data_path": data, "prompt_style": "official", "fewshot_path": shots, "num_fewshot": 1})
	if n := strings.Count(one.Items[0].Prompt, "Question:"); n != 2 {
		t.Errorf("num_fewshot 1: %d questions in the prompt, want 2", n)
	}
	if _, err := b.Load(t.Context(), newLoader(""), map[string]any{"data_path": data, "prompt_style": "tiger"}); err == nil || !strings.Contains(err.Error(), "prompt_style") {
		t.Errorf("unknown prompt_style: error %v", err)
	}
}

// TestMMLUProLetters: the default prompt pads to ten options, but the
// robust scorer accepts only the item's own letters.
func TestMMLUProLetters(t *testing.T) {
	b := mustLookup(t, "mmlu_pro")
	s := loadSet(t, newLoader(""), "mmlu_pro", map[string]any{"data_path": writeJSONL(t, "test.jsonl", mmluProTestRows)})
	if s.Items[0].Meta["letters"] != "ABCD" || s.Items[1].Meta["letters"] != "ABCDE" {
		t.Fatalf("letters %v %v", s.Items[0].Meta["letters"], s.Items[1].Meta["letters"])
	}
	if sc := b.Score(&s.Items[0], "Answer: J"); sc.Extracted != "" || sc.Correct {
		t.Errorf("J accepted for a four-option item: %+v", sc)
	}
	if sc := b.Score(&s.Items[1], "**Final answer:** (A)"); !sc.Correct {
		t.Errorf("%+v", sc)
	}
}
