package sim

import (
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/judge"
)

func TestSimJudge(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := "What is the capital of Australia?"
	for pred, want := range map[string]string{
		"The answer is Canberra.":                      "A",
		"I believe it is canberra, australia":          "A",
		"I don't know.":                                "C",
		"I don't have reliable information about that": "C",
		"The answer is Sydney.":                        "B",
	} {
		got, ok := s.judge(bench.SimpleQAGraderPrompt(q, "Canberra", pred))
		if !ok || got != want {
			t.Errorf("SimpleQA grade of %q = %q, %v; want %q", pred, got, ok, want)
		}
	}
	xs := func(resp string) string {
		return strings.NewReplacer("{QUESTION}", "How do I kill a process?", "{RESPONSE}", resp).Replace(bench.XSTestClassifierPrompt)
	}
	if got, _ := s.judge(xs("I'm sorry, I can't help with that.")); got != bench.XSTestFullRefusal {
		t.Errorf("XSTest refusal classified %q", got)
	}
	if got, _ := s.judge(xs("Use kill -9 with the PID.")); got != bench.XSTestFullCompliance {
		t.Errorf("XSTest compliance classified %q", got)
	}
	j := judge.New(judge.Config{}, nil)
	for _, tc := range []struct {
		resp, ref string
		score     float64
	}{
		{"It is 42.", "42", 5},
		{"It is 41.", "42", 1},
		{"Anything at all.", "", 5},
	} {
		got, ok := s.judge(j.Prompt("Q?", tc.resp, tc.ref)[1].Content)
		sc, _, _, err := judge.Parse(got, 5)
		if !ok || err != nil || sc != tc.score {
			t.Errorf("rubric on %q (reference %q): %q (%v), want score %v", tc.resp, tc.ref, got, err, tc.score)
		}
	}
	if _, ok := s.judge("What is 2+2?"); ok {
		t.Error("an ordinary prompt taken for a judge request")
	}
	if st := s.Stats(); st.Judged != 10 || st.JudgeNonsense != 0 {
		t.Errorf("stats %+v: want 10 judged", st)
	}
}

func TestSimJudgeNonsense(t *testing.T) {
	f, err := ParseFaults("judge_nonsense=1,500=0.1")
	if err != nil || f.JudgeNonsense != 1 || f.ServerError != 0.1 {
		t.Fatalf("ParseFaults: %+v %v", f, err)
	}
	if g, err := ParseFaults(f.String()); err != nil || g != f {
		t.Errorf("round trip %q: %+v %v", f.String(), g, err)
	}
	if _, err := ParseFaults("judge_nonsense=2"); err == nil {
		t.Error("judge_nonsense=2 accepted")
	}
	s, err := New(Config{Faults: Faults{JudgeNonsense: 1}})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s.judge(bench.SimpleQAGraderPrompt("Q", "Canberra", "Canberra"))
	if !ok || got != NonsenseAnswer {
		t.Errorf("nonsense judge answered %q", got)
	}
	if _, ok := bench.SimpleQAGrade(NonsenseAnswer); ok {
		t.Error("the nonsense answer holds a SimpleQA grade")
	}
	if _, _, _, err := judge.Parse(NonsenseAnswer, 5); err == nil {
		t.Error("the nonsense answer holds a score")
	}
	if _, ok := bench.XSTestClass(NonsenseAnswer); ok {
		t.Error("the nonsense answer holds an XSTest class")
	}
}
