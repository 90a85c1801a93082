package bench

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/score"
)

// gsm8kRE is GSM8KPattern as the regexp engine runs it: answerIs must
// find what it finds.
var gsm8kRE = score.MustCompilePy(GSM8KPattern)

func checkAnswerIs(t *testing.T, s string) {
	t.Helper()
	g, ok := answerIs(s)
	m := gsm8kRE.FindStringSubmatch(s)
	if ok != (m != nil) || (m != nil && g != m[1]) {
		t.Fatalf("answerIs(%q) = %q, %v; the regexp: %q", s, g, ok, m)
	}
}

func TestAnswerIsCases(t *testing.T) {
	for _, s := range []string{
		"", "The answer is 42.", "the answer is", "the answer is   ", "the answer is \n\n",
		"the answer is \t\n\n", "the answer is\n\u00a0\n", "THE ANSWER IS\n\n7\nmore",
		"Answer: 5", "answer :  \n 6", "answer 5\nAnswer:", "answer:\n", "answer:\u2028x",
		"The anſwer is 3", "the answer iſ\u00a09", "the  answer is 1", "xthe answer is 2",
		"Answer:: 4", "answer\u3000:\u30008", "the answer is \xff\xfe", "\xe2the answer is 1",
		"so the answer is 3 and the answer is 4", "answer: \r\n", "answer: \r",
	} {
		checkAnswerIs(t, s)
	}
	// Each must find what was meant, not only what the regexp finds.
	if g, ok := answerIs("Thus the Answer is  $18.\nDone"); !ok || g != "$18." {
		t.Fatalf("answerIs = %q, %v", g, ok)
	}
	if _, ok := answerIs("the answer is\n\n"); ok {
		t.Fatal("answerIs matched only newlines")
	}
}

// TestAnswerIsRealData holds answerIs to the regexp on gsm8k's real
// solutions, on the responses the simulator writes for them, and on each
// solution with an answer line spliced in at random places.
func TestAnswerIsRealData(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lines := []string{"The answer is", "the answer is ", "ANSWER:", "Answer :\n", "answer", "answer is"}
	for _, name := range []string{"test.jsonl", "train.jsonl"} {
		f, err := os.Open(filepath.Join(sharedDatasets(t), "gsm8k", name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			var rec struct{ Question, Answer string }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			it := &Item{Expected: rec.Answer[strings.LastIndex(rec.Answer, "#")+1:]}
			checkAnswerIs(t, rec.Answer)
			checkAnswerIs(t, rec.Question)
			checkAnswerIs(t, gsm8k().Respond(it, rng.IntN(2) == 0, rng))
			at := rng.IntN(len(rec.Answer) + 1)
			checkAnswerIs(t, rec.Answer[:at]+lines[rng.IntN(len(lines))]+rec.Answer[at:])
			n++
		}
		f.Close()
		if err := sc.Err(); err != nil || n < 1000 {
			t.Fatalf("%s: %d records, %v", name, n, err)
		}
	}
}

// TestAnswerIsRandom holds answerIs to the regexp on random strings of
// the pieces that matter: the pattern's words in any case, the runes that
// fold to ASCII letters, spaces of every kind, newlines, colons and
// invalid UTF-8.
func TestAnswerIsRandom(t *testing.T) {
	pieces := []string{"the", "THE", " ", "answer", "AnSwEr", "is", "iſ", "anſwer", ":", "\n", "\t",
		"\r", "\u00a0", "\u2028", "\u3000", "\x1c", "\u0085", "x", "42", "é", "\xff", "\xe2\x80", "K", "\u212a", "t", "a"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		checkAnswerIs(t, b.String())
	}
}

func FuzzAnswerIs(f *testing.F) {
	for _, s := range []string{"The answer is 42.", "answer :\n\u00a0", "the answer is \xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkAnswerIs(t, s) })
}
