package bench

import (
	"math/rand/v2"
	"testing"
)

// TestIFEvalLoadAndRespond loads the real input_data.jsonl and checks the
// simulated responses: Respond(correct) scores correct on at least 95% of
// the prompts (the rest have instructions that contradict each other, such
// as repeating a prompt that contains a comma under no_comma), and
// Respond(wrong) never does.
func TestIFEvalLoadAndRespond(t *testing.T) {
	dir := sharedDatasets(t)
	b := mustLookup(t, "ifeval")
	s := loadSet(t, newLoader(dir), "ifeval", map[string]any{"data_path": "ifeval/input_data.jsonl"})
	if len(s.Items) != 541 {
		t.Fatalf("ifeval: %d items, want 541", len(s.Items))
	}
	it := s.Items[0]
	if it.Expected != "punctuation:no_comma,detectable_format:number_highlighted_sections,length_constraints:number_words" ||
		len(it.Messages) != 1 || it.Messages[0].Role != "user" || it.Content["key"] != "1000" {
		t.Errorf("first item = %+v", it)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	right, wrong := 0, 0
	for i := range s.Items {
		it := &s.Items[i]
		if sc := b.Score(it, b.Respond(it, true, rng)); sc.Correct && sc.Reward == 1 && sc.Binary {
			right++
		}
		if sc := b.Score(it, b.Respond(it, false, rng)); !sc.Correct && sc.Reward == 0 && sc.Extracted != "" {
			wrong++
		} else {
			t.Errorf("item %d: Respond(wrong) scored %+v", i, sc)
		}
	}
	t.Logf("Respond(correct) right on %d/%d, Respond(wrong) wrong on %d/%d", right, len(s.Items), wrong, len(s.Items))
	if float64(right) < 0.95*float64(len(s.Items)) {
		t.Errorf("Respond(correct) right on %d/%d < 95%%", right, len(s.Items))
	}
}

// TestIFEvalScores checks the per-row Scores on a hand-made item whose
// verdicts follow from the checkers' definitions.
func TestIFEvalScores(t *testing.T) {
	it := &Item{
		Prompt: "Write about cats.",
		Meta: map[string]any{
			"instruction_id_list": []string{"punctuation:no_comma", "detectable_format:title", "startend:quotation"},
			"kwargs":              []map[string]any{{}, {}, {}},
		},
	}
	sc := ifevalScore(it, "<<Cats>>\nCats purr, sleep and play.")
	// Strict: no comma broken, title kept, quotation broken. Loose: the
	// variant without the last line ("<<Cats>>") has no comma, so no_comma
	// holds too; no variant is quoted.
	want := map[string]float64{
		"ifeval:prompt_strict": 0, "ifeval:prompt_loose": 0,
		"ifeval:instruction_strict/num": 1, "ifeval:instruction_strict/den": 3,
		"ifeval:instruction_loose/num": 2, "ifeval:instruction_loose/den": 3,
	}
	for k, v := range want {
		if sc.Scores[k] != v {
			t.Errorf("%s = %v, want %v", k, sc.Scores[k], v)
		}
	}
	if sc.Reward != 0 || sc.Correct || !sc.Binary || sc.Extracted != "1/3 strict" || sc.Method != "ifeval" {
		t.Errorf("score = %+v", sc)
	}

	// "**Cats**" breaks nothing strictly here; the loose variant without
	// the first line drops the title, but loose needs only one variant.
	it.Meta["instruction_id_list"] = []string{"detectable_format:title", "detectable_format:number_highlighted_sections"}
	it.Meta["kwargs"] = []map[string]any{{}, {"num_highlights": 2}}
	sc = ifevalScore(it, "<<Cats>>\n*one* and *two*")
	if sc.Reward != 1 || sc.Scores["ifeval:instruction_strict/num"] != 2 || sc.Scores["ifeval:prompt_loose"] != 1 || sc.Extracted != "2/2 strict" {
		t.Errorf("score = %+v", sc)
	}
	// Loose rescues a response whose first line breaks the rule: the
	// quotation holds once the preamble line is removed.
	it.Meta["instruction_id_list"] = []string{"startend:quotation", "punctuation:no_comma"}
	it.Meta["kwargs"] = []map[string]any{{}, {}}
	sc = ifevalScore(it, "Sure, here it is:\n\"Cats purr\"")
	if sc.Scores["ifeval:prompt_strict"] != 0 || sc.Scores["ifeval:prompt_loose"] != 1 ||
		sc.Scores["ifeval:instruction_strict/num"] != 0 || sc.Scores["ifeval:instruction_loose/num"] != 2 {
		t.Errorf("loose scores = %v", sc.Scores)
	}
}
