package ifeval

import (
	"strings"
	"testing"
)

// TestCheckers has, for each instruction, responses that follow it and
// responses that do not, with verdicts worked out from instructions.py.
func TestCheckers(t *testing.T) {
	type kw = map[string]any
	cases := []struct {
		id     string
		kwargs kw
		resp   string
		want   bool
	}{
		{"keywords:existence", kw{"keywords": []any{"cat", "Dog"}}, "A CAT and a dog.", true},
		{"keywords:existence", kw{"keywords": []any{"cat", "dog"}}, "A cat alone.", false},
		{"keywords:frequency", kw{"keyword": "fun", "frequency": 3.0, "relation": "at least"}, "fun Fun FUNny", true},
		{"keywords:frequency", kw{"keyword": "fun", "frequency": 3.0, "relation": "at least"}, "fun fun", false},
		{"keywords:frequency", kw{"keyword": "fun", "frequency": 2.0, "relation": "less than"}, "fun fun", false},
		{"keywords:forbidden_words", kw{"forbidden_words": []any{"car"}}, "Carpets and scars.", true},
		{"keywords:forbidden_words", kw{"forbidden_words": []any{"car"}}, "My CAR, my rules.", false},
		{"keywords:forbidden_words", kw{"forbidden_words": []any{"café"}}, "cafés only", true},
		{"keywords:letter_frequency", kw{"letter": "Q", "let_frequency": 2.0, "let_relation": "at least"}, "quick quiz", true},
		{"keywords:letter_frequency", kw{"letter": "q", "let_frequency": 2.0, "let_relation": "less than"}, "Quick quiz", false},
		{"keywords:letter_frequency", kw{"letter": "#", "let_frequency": 2.0, "let_relation": "at least"}, "#a #b", true},
		{"language:response_language", kw{"language": "de"}, "Das ist ein schöner Tag und wir sind froh.", true},
		{"language:response_language", kw{"language": "de"}, "This is a nice day and we are glad.", false},
		{"language:response_language", kw{"language": "hi"}, "यह एक बहुत सुंदर दिन है और हम सब खुश हैं।", true},
		{"language:response_language", kw{"language": "ko"}, "1234 5678", true}, // undetectable counts as followed
		{"length_constraints:number_sentences", kw{"num_sentences": 3.0, "relation": "less than"}, "One. Two.", true},
		{"length_constraints:number_sentences", kw{"num_sentences": 3.0, "relation": "at least"}, "Dr. Smith came. He left.", false},
		{"length_constraints:number_sentences", kw{"num_sentences": 3.0, "relation": "at least"}, "Go! Why? Now.", true},
		{"length_constraints:number_paragraphs", kw{"num_paragraphs": 2.0}, "one\n***\ntwo", true},
		{"length_constraints:number_paragraphs", kw{"num_paragraphs": 2.0}, "***\none\n***\ntwo\n***", true},
		{"length_constraints:number_paragraphs", kw{"num_paragraphs": 2.0}, "one\n***\n***\ntwo", false},
		{"length_constraints:number_words", kw{"num_words": 3.0, "relation": "at least"}, "don't stop-now", true}, // don, t, stop, now
		{"length_constraints:number_words", kw{"num_words": 3.0, "relation": "less than"}, "a b c", false},
		{"length_constraints:nth_paragraph_first_word", kw{"num_paragraphs": 2.0, "nth_paragraph": 2.0, "first_word": "Elm"}, "Intro.\n\n\"Elm, trees.", true},
		{"length_constraints:nth_paragraph_first_word", kw{"num_paragraphs": 2.0, "nth_paragraph": 2.0, "first_word": "elm"}, "Intro.\n\nOak trees.", false},
		{"length_constraints:nth_paragraph_first_word", kw{"num_paragraphs": 2.0, "nth_paragraph": 2.0, "first_word": "elm"}, "Intro.\n\nelm\n\nthird", false},
		{"detectable_content:number_placeholders", kw{"num_placeholders": 2.0}, "[name] at [address]", true},
		{"detectable_content:number_placeholders", kw{"num_placeholders": 2.0}, "[name] at address", false},
		{"detectable_content:postscript", kw{"postscript_marker": "P.S."}, "Hi.\np. s. see you", true},
		{"detectable_content:postscript", kw{"postscript_marker": "P.P.S"}, "Hi.\nP.S. see you", false},
		{"detectable_format:number_bullet_lists", kw{"num_bullets": 2.0}, "* a\n- b\n**bold**", true},
		{"detectable_format:number_bullet_lists", kw{"num_bullets": 2.0}, "* a\n* b\n* c", false},
		{"detectable_format:constrained_response", nil, "Well. My answer is maybe.", true},
		{"detectable_format:constrained_response", nil, "My answer is yes", false},
		{"detectable_format:number_highlighted_sections", kw{"num_highlights": 2.0}, "*a* and **b**", true},
		{"detectable_format:number_highlighted_sections", kw{"num_highlights": 2.0}, "*a* and * *", false},
		{"detectable_format:multiple_sections", kw{"section_spliter": "Section", "num_sections": 2.0}, "Section 1\nx\nSection 2\ny", true},
		{"detectable_format:multiple_sections", kw{"section_spliter": "Section", "num_sections": 2.0}, "Section 1\nx\nSECTION 2\ny", false},
		{"detectable_format:json_format", nil, "```json\n{\"a\": [1, 2]}\n```", true},
		{"detectable_format:json_format", nil, "{\"a\": NaN}", true},
		{"detectable_format:json_format", nil, "Here: {\"a\": 1}", false},
		{"detectable_format:title", nil, "<<My Poem>>\ntext", true},
		{"detectable_format:title", nil, "<< >> and <<a\nb>>", false},
		{"combination:two_responses", nil, "one\n******\ntwo", true},
		{"combination:two_responses", nil, "one\n******\n one ", false},
		{"combination:repeat_prompt", kw{"prompt_to_repeat": "Say hi."}, "  say HI. Hi!", true},
		{"combination:repeat_prompt", kw{"prompt_to_repeat": "Say hi."}, "Hi! Say hi.", false},
		{"startend:end_checker", kw{"end_phrase": "Any questions?"}, "Done. any questions?\"  ", true},
		{"startend:end_checker", kw{"end_phrase": "Any questions?"}, "Any questions? Bye.", false},
		{"startend:quotation", nil, " \"quoted\" ", true},
		{"startend:quotation", nil, "\"", false},
		{"change_case:capital_word_frequency", kw{"capital_frequency": 3.0, "capital_relation": "at least"}, "I DON'T know", true}, // I, DO, N'T
		{"change_case:capital_word_frequency", kw{"capital_frequency": 2.0, "capital_relation": "less than"}, "NASA and ESA", false},
		{"change_case:english_capital", nil, "THIS IS THE ANSWER AND IT IS LOUD.", true},
		{"change_case:english_capital", nil, "THIS IS THE ANSWER and it is quiet.", false},
		{"change_case:english_lowercase", nil, "this is the answer and it is quiet.", true},
		{"change_case:english_lowercase", nil, "das ist die antwort und sie ist leise.", false},
		{"punctuation:no_comma", nil, "no commas here", true},
		{"punctuation:no_comma", nil, "one, two", false},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		got, err := Check(c.id, c.kwargs, "", c.resp)
		if err != nil {
			t.Errorf("%s %v: %v", c.id, c.kwargs, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s %v on %q = %v, want %v", c.id, c.kwargs, c.resp, got, c.want)
		}
		if c.want {
			seen[c.id+" pass"] = true
		} else {
			seen[c.id+" fail"] = true
		}
	}
	for _, id := range IDs() {
		if !seen[id+" pass"] || !seen[id+" fail"] {
			t.Errorf("%s: want a following and a failing case", id)
		}
	}
}

func TestCheckErrors(t *testing.T) {
	for _, c := range []struct {
		id     string
		kwargs map[string]any
	}{
		{"no:such", nil},
		{"length_constraints:number_words", map[string]any{"num_words": 3.0}},
		{"length_constraints:number_words", map[string]any{"num_words": 3.5, "relation": "at least"}},
		{"length_constraints:number_words", map[string]any{"num_words": 3.0, "relation": "at most"}},
	} {
		if _, err := Check(c.id, c.kwargs, "", "x"); err == nil || !strings.Contains(err.Error(), "ifeval") {
			t.Errorf("Check(%s, %v): err = %v, want an ifeval error", c.id, c.kwargs, err)
		}
	}
	// Null kwargs are dropped (the Hugging Face copy has them).
	if ok, err := Check("punctuation:no_comma", map[string]any{"num_words": nil}, "", "x"); err != nil || !ok {
		t.Errorf("null kwargs: %v %v", ok, err)
	}
	// A blank response follows nothing.
	if ok, _ := Check("keywords:forbidden_words", map[string]any{"forbidden_words": []any{"x"}}, "", " \n"); ok {
		t.Error("blank response followed an instruction")
	}
}

func TestLooseVariants(t *testing.T) {
	v := looseVariants("a*\nb\nc*")
	want := []string{"a*\nb\nc*", "a\nb\nc", "b\nc*", "a*\nb", "b", "b\nc", "a\nb", "b"}
	if strings.Join(v, "|") != strings.Join(want, "|") {
		t.Errorf("looseVariants = %q, want %q", v, want)
	}
}

func TestCountSentences(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"Hello world. This is nel.", 2},
		{"Mr. Smith went to Washington. He left.", 2},
		{"It costs 3.5 dollars. Cheap!", 2},
		{"We met at 5 p.m. The end.", 2}, // p.m is an abbreviation, "The" a sentence starter
		{"See e.g. the docs.", 2},        // "e.g" is not among the model's abbreviations
		{"He said \"Stop.\" Then he left.", 2},
		{"Wait... what? Yes.", 2},            // an ellipsis before a lowercase word does not break
		{"1. First item\n2. Second item", 3}, // a number before a capitalised word breaks
		{"", 0},
	} {
		if got := CountSentences(c.s); got != c.want {
			t.Errorf("CountSentences(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}
