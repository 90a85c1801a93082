package bench

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/nel-eval/nel/runtime/mathans"
)

func TestMath500Score(t *testing.T) {
	b := mustLookup(t, "math500")
	cases := []struct {
		response, expected string
		correct, nemo      bool
		extracted, how     string
	}{
		// Equivalent forms NeMo's string comparison misses.
		{"Work.\nAnswer: \\frac12", "\\frac{1}{2}", true, false, "\\frac12", "answer_line"},
		{"So $x = \\boxed{0.5}$.", "\\frac{1}{2}", true, false, "0.5", "boxed"},
		{"Answer: $30$ degrees", "30^\\circ", true, false, "30", "answer_line"},
		// Both agree.
		{"Answer: 42", "42", true, true, "42", "answer_line"},
		{"Answer: 41", "42", false, false, "41", "answer_line"},
		// \boxed{} wins over the Answer: line NeMo reads.
		{"\\boxed{7}\nAnswer: 8", "8", false, true, "7", "boxed"},
		// No box and no answer line: the last line.
		{"The sum is\n\n(1, 2)\n", "(1,2)", true, true, "(1, 2)", "last_line"},
		{"The interval is\n[1, 2]", "(1,2)", false, false, "[1, 2]", "last_line"},
	}
	for _, c := range cases {
		it := &Item{Expected: c.expected}
		sc := b.Score(it, c.response)
		if sc.Correct != c.correct || sc.Reward != map[bool]float64{true: 1}[c.correct] || !sc.Binary {
			t.Errorf("Score(%q, %q) = %+v, want correct %v", c.response, c.expected, sc, c.correct)
		}
		if sc.Method != "math_equiv" || sc.Extracted != c.extracted || sc.Details["extraction"] != c.how {
			t.Errorf("Score(%q): method %q extracted %q via %v, want %q via %q", c.response, sc.Method, sc.Extracted, sc.Details["extraction"], c.extracted, c.how)
		}
		if got := sc.Scores["scorer:answer_line"]; got != map[bool]float64{true: 1}[c.nemo] {
			t.Errorf("Score(%q): scorer:answer_line %v, want NeMo verdict %v", c.response, got, c.nemo)
		}
		for _, k := range []string{"normalized", "expected_normalized", "reason"} {
			if _, ok := sc.Details[k]; !ok {
				t.Errorf("Score(%q): Details lack %q: %v", c.response, k, sc.Details)
			}
		}
	}
}

// TestMath500Solutions scores each reference solution (its \boxed{} answer)
// and the simulated responses on the real data.
func TestMath500Solutions(t *testing.T) {
	dir := sharedDatasets(t)
	path := filepath.Join(dir, "math500/test.jsonl")
	b := mustLookup(t, "math500")
	s := loadSet(t, newLoader(dir), "math500", map[string]any{"data_path": path})
	rows := readJSONL(t, path)
	if len(rows) != len(s.Items) {
		t.Fatalf("%d rows, %d items", len(rows), len(s.Items))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	solved, nemo, right, wrong := 0, 0, 0, 0
	for i := range s.Items {
		it := &s.Items[i]
		sol, _ := rows[i]["solution"].(string)
		sc := b.Score(it, sol)
		if sc.Correct {
			solved++
		} else {
			t.Errorf("item %d: solution's answer %q scored wrong against %q (%v)", i, sc.Extracted, it.Expected, sc.Details["reason"])
		}
		if sc := b.Score(it, "Answer: "+it.Expected); sc.Scores["scorer:answer_line"] == 1 {
			nemo++
		}
		if sc := b.Score(it, b.Respond(it, true, rng)); sc.Correct {
			right++
		}
		resp := b.Respond(it, false, rng)
		sc = b.Score(it, resp)
		if !sc.Correct && !mathans.Equivalent(sc.Extracted, it.Expected) {
			wrong++
		} else {
			t.Errorf("item %d: Respond(wrong) = %q, equivalent to %q", i, resp, it.Expected)
		}
	}
	if solved != 500 || nemo != 500 || right != 500 || wrong != 500 {
		t.Errorf("solutions correct %d/500, NeMo verdict on the gold line %d/500, Respond right %d/500, wrong %d/500", solved, nemo, right, wrong)
	}
}
