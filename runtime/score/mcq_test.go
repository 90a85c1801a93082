package score

import (
	"github.com/nel-eval/nel/internal/sharedtest"
	"github.com/nel-eval/nel/internal/testenv"

	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/pyrand"
)

// sharedDataset returns ../shared/datasets/<rel>, skipping the test when it
// is absent.
func sharedDataset(t *testing.T, rel string) string { return sharedtest.Datasets(t, rel) }

// mmluProOutput is one item of the official MMLU-Pro model outputs.
type mmluProOutput struct {
	QuestionID    int      `json:"question_id"`
	Options       []string `json:"options"`
	Answer        string   `json:"answer"`
	AnswerIndex   int      `json:"answer_index"`
	Category      string   `json:"category"`
	Pred          *string  `json:"pred"`
	GeneratedText string   `json:"generated_text"`
}

// readMMLUProOutputs unzips the reference outputs in memory.
func readMMLUProOutputs(t *testing.T) []mmluProOutput {
	t.Helper()
	p := sharedDataset(t, "mmlu_pro/reference/model_outputs_Meta-Llama-3_1-8B-Instruct_5shots.zip")
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	defer zr.Close()
	if len(zr.File) != 1 {
		t.Fatalf("%s: %d files, want 1", p, len(zr.File))
	}
	f, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []mmluProOutput
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", zr.File[0].Name, err)
	}
	return out
}

// TestMMLUProReference runs the official extraction over Llama-3.1-8B-
// Instruct's published MMLU-Pro outputs. The file's pred is a string for
// every item: where the three regexes find nothing, the published run
// stored its fallback guess, which compute_accuracy.py makes with
// random.seed(12345); random.choice("A".."J") — re-seeded before every
// guess, so it is the same letter every time. That letter, derived here with
// CPython's generator, is how the fallback items are counted to reproduce
// the official 44.19%.
func TestMMLUProReference(t *testing.T) {
	items := readMMLUProOutputs(t)
	if len(items) != 12032 {
		t.Fatalf("%d items, want 12032", len(items))
	}
	official := string(DefaultLetters[pyrand.New(12345).RandBelow(10)])
	var correct, agree, scored, fallback, fallbackAsOfficial int
	steps := map[string]int{}
	for _, it := range items {
		if it.Pred == nil {
			t.Fatalf("question %d: pred is null", it.QuestionID)
		}
		pred, how := ExtractMMLUPro(it.GeneratedText)
		steps[how]++
		if pred == "" {
			fallback++
			if *it.Pred == official {
				fallbackAsOfficial++
			}
			pred = official
		} else {
			scored++
			if pred == *it.Pred {
				agree++
			} else if scored-agree <= 5 {
				t.Errorf("question %d: extracted %q (%s), official pred %q", it.QuestionID, pred, how, *it.Pred)
			}
		}
		if pred == it.Answer {
			correct++
		}
	}
	acc := 100 * float64(correct) / float64(len(items))
	agreement := 100 * float64(agree) / float64(scored)
	t.Logf("official extraction: accuracy %.4f%% (%d/%d); agreement with pred %.3f%% (%d/%d extracted); "+
		"steps %v; %d fallbacks, all guessed %q by the published run: %d",
		acc, correct, len(items), agreement, agree, scored, steps, fallback, official, fallbackAsOfficial)
	if math.Abs(acc-44.19) > 0.01 {
		t.Errorf("accuracy %.4f%%, want the official 44.19%%", acc)
	}
	if agreement < 99.5 {
		t.Errorf("agreement with the official pred %.3f%%, want >= 99.5%%", agreement)
	}
	if fallbackAsOfficial != fallback {
		t.Errorf("%d of %d fallback items carry the guess %q in the published file", fallbackAsOfficial, fallback, official)
	}

	// The robust extractor on the same texts, letters limited to each
	// item's options. Where it differs from the official pred, log a few.
	var rCorrect, rAgree, rNone int
	rHow := map[string]int{}
	shown := 0
	for _, it := range items {
		got, how := ExtractChoice(it.GeneratedText, DefaultLetters[:len(it.Options)])
		rHow[how]++
		if got == "" {
			rNone++
		}
		if got == it.Answer {
			rCorrect++
		}
		if got == *it.Pred {
			rAgree++
		} else if shown < 8 && testing.Verbose() {
			shown++
			tail := it.GeneratedText
			if len(tail) > 300 {
				tail = "…" + tail[len(tail)-300:]
			}
			t.Logf("question %d: robust %q (%s), official %q, answer %s: %q", it.QuestionID, got, how, *it.Pred, it.Answer, tail)
		}
	}
	t.Logf("robust extraction: accuracy %.4f%% (%d/%d); agreement with pred %.3f%%; no answer %d; by tier %v",
		100*float64(rCorrect)/float64(len(items)), rCorrect, len(items),
		100*float64(rAgree)/float64(len(items)), rNone, rHow)
}

// Reasoning-style responses and the letter each commits to. The expected
// letters are read off the text by a person: the answer the response
// finally commits to, not the first letter it mentions.
var choiceCases = []struct {
	name, letters, resp, want string
}{
	{"self-correction", "ABCD", "Let me think. At first glance the answer is B, since the rate doubles.\n\nWait — that ignores the second step. Re-doing the calculation gives 12 mol, which matches option D.\n\nAnswer: D", "D"},
	{"discusses options then commits", "ABCD", "Option A is wrong because the enzyme is not saturated. (C) looks tempting, but it confuses Km with Vmax. Option B only holds at low substrate.\n\nAnswer: D", "D"},
	{"I and A in prose", "ABCD", "I think the key is the boundary condition. A nice way to see it is to plug in x = 0. I get 4, which rules out A and C.\n\nThe answer is B.", "B"},
	{"markdown final answer heading", "ABCD", "### Reasoning\n- **A** ignores friction.\n- **B** double counts the normal force.\n- **C** is dimensionally wrong.\n\n**Final Answer:** D", "D"},
	{"boxed text", "ABCDEFGHIJ", "We compute $\\Delta G = \\Delta H - T\\Delta S = -40 + 298 \\cdot 0.1 = -10.2$ kJ/mol, so the reaction is spontaneous.\n\nFinal answer: $\\boxed{\\text{G}}$", "G"},
	{"boxed plain", "ABCD", "Integrating by parts twice gives $\\frac{e^x(\\sin x - \\cos x)}{2}$. That corresponds to choice C.\n\n$$\\boxed{C}$$", "C"},
	{"correct option bold", "ABCD", "Checking each one against the definition of a normal subgroup, only the third works. The correct option is **C**.", "C"},
	{"answer is (X) official style", "ABCDEFGHIJ", "Let's think step by step. The Laffer curve relates tax rates to revenue. At rates above the peak, cutting rates raises revenue. The answer is (H).", "H"},
	{"two answer lines, last wins", "ABCD", "Answer: A\n\nHmm, actually that contradicts the given pH. Recomputing with pKa = 4.76 gives a ratio of 10, so the buffer is mostly acetate.\n\nAnswer: C", "C"},
	{"question form is not an answer", "ABCD", "Could the answer be (A)? No: A assumes constant pressure. Is it (B)? Also no. That leaves C or D; D violates conservation of energy.\n\nSo the answer is C.", "C"},
	{"just the letter", "ABCD", "B", "B"},
	{"just the letter decorated", "ABCD", "  **(D)**  \n", "D"},
	{"last line letter after reasoning", "ABCD", "The mitochondrion produces ATP through oxidative phosphorylation, so the organelle in question must be it.\n\nC", "C"},
	{"answer with option word", "ABCDEFGHIJ", "Weighing the evidence, the answer is option J, the only one consistent with the 1832 date.", "J"},
	{"answer is therefore", "ABCD", "Since the series is geometric with ratio 1/2, its sum is 2. The answer is therefore D.", "D"},
	{"answer because", "ABCD", "The answer is A because the derivative of a constant is zero.", "A"},
	{"answer I (MMLU-Pro letter I)", "ABCDEFGHIJ", "The only option listing all four conditions is the ninth one.\n\nAnswer: I", "I"},
	{"answer is I with period", "ABCDEFGHIJ", "After eliminating A–H, the answer is (I).", "I"},
	{"correct answer choice is", "ABCD", "None of the distractors accounts for the lag time. The correct answer choice is (B) 15 minutes.", "B"},
	{"reverse statement", "ABCD", "Let's test each option with n = 3.\n(A) gives 6, too small.\n(B) gives 9, which matches.\n(C) gives 12.\nTherefore, option B is correct.", "B"},
	{"answer tag", "ABCD", "<think>maybe A</think>\nThe density argument settles it.\n<answer>C</answer>", "C"},
	{"latex inline answer", "ABCD", "Thus $x = 4$ and the area is $16\\pi$.\n\n**Answer: $\\text{B}$**", "B"},
	{"answer on next line after heading", "ABCD", "## Final Answer\n\n(A)", "A"},
	{"answer colon bold letter", "ABCDEFGHIJ", "Putting it all together, the net present value is negative.\n\nAnswer: **E**", "E"},
	{"best answer", "ABCD", "Both B and D are partially right, but D also accounts for inflation. The best answer is D.", "D"},
	{"closest is", "ABCDEFGHIJ", "I get 1.24 days, which is not among the choices, but the closest is (A).", "A"},
	{"answer with lowercase explanation after letter", "ABCD", "Answer: C (the other three violate the Pauli principle)", "C"},
	{"bold only, no statement", "ABCD", "Comparing the half-lives, the slowest decay belongs to **B**.", "B"},
	{"paren only", "ABCD", "Only one choice keeps the pressure constant throughout, namely (D).", "D"},
	{"P(A) is not an answer, (C) is", "ABCD", "We need P(A) and P(B) first: P(A) = 0.3, P(B) = 0.5. Independence gives 0.15, which is (C).", "C"},
	{"label at line start", "ABCD", "After checking each:\nC. Both statements are true", "C"},
	{"Answer: I think ... then committed", "ABCD", "Answer: I think it has to be the isothermal case.\n\nFinal answer: B", "B"},
	{"answer line with period", "ABCD", "Thus the ratio is 3:1.\nAnswer: A.", "A"},
	{"retraction with was", "ABCD", "The answer is D.\n\nNote: in my first pass I thought the answer was A, but that used the wrong sign.", "D"},
	{"uppercase ANSWER", "ABCD", "ANSWER: B", "B"},
	{"answer is $B$", "ABCD", "Hence the answer is $B$.", "B"},
	{"math variables do not beat a paren answer", "ABCD", "Let $A$ be the matrix and $B$ its inverse. Then $AB = I$, so det is 1, i.e. (C).", "C"},
}

// Responses that commit to no letter among the allowed ones.
var choiceNone = []struct{ name, letters, resp string }{
	{"empty", "ABCD", ""},
	{"letters only inside words", "ABCD", "Because the Bohr model Assumes Circular orbits, Doppler effects are ignored."},
	{"article A and pronoun I", "ABCD", "A nice idea. I think the effect is real, but I cannot decide."},
	{"answer: I think (prose)", "ABCD", "Answer: I think it depends on the temperature."},
	{"answer is a (lower case article)", "ABCD", "The answer is a bit more subtle than it looks."},
	{"letter outside the options", "ABCD", "Answer: F"},
	{"instruction echo", "ABCD", "I must end with 'Answer: $LETTER' where LETTER is one of ABCD."},
	{"answer is not", "ABCD", "The answer is not listed among the options."},
	{"asked, not answered", "ABCD", "Is the answer (B)? Maybe. Or is it C?"},
	{"vitamin C is not option C", "ABCD", "Vitamin C is the best-known antioxidant, and it is water-soluble."},
	{"function call", "ABCD", "We evaluate f(A) and g(B) and compare them."},
	{"contraction", "ABCD", "I'm sure I'd pick the second one if I'd more time."},
	{"hyphenated", "ABCD", "The A-series and B-series batteries differ in capacity."},
	{"eg", "ABCD", "Many metals, e.g. iron, rust; the answer depends on humidity."},
}

func TestExtractChoice(t *testing.T) {
	if len(choiceCases) < 30 {
		t.Fatalf("only %d reasoning cases", len(choiceCases))
	}
	for _, c := range choiceCases {
		got, how := ExtractChoice(c.resp, c.letters)
		if got != c.want {
			t.Errorf("%s: ExtractChoice = %q (%s), want %q\n%s", c.name, got, how, c.want, c.resp)
		}
	}
	for _, c := range choiceNone {
		if got, how := ExtractChoice(c.resp, c.letters); got != "" {
			t.Errorf("%s: ExtractChoice = %q (%s), want none\n%s", c.name, got, how, c.resp)
		}
	}
}

// TestExtractChoiceTiers pins which rule fires and that a stronger tier
// wins over a later weaker one.
func TestExtractChoiceTiers(t *testing.T) {
	for _, c := range []struct{ resp, want, how string }{
		{"Answer: B", "B", HowStatement},
		{"so $\\boxed{C}$ it is", "C", HowBoxed},
		{"D", "D", HowLine},
		{"not **A** but **B** fits", "B", HowEmphasis},
		{"(A) vs (B): pick (C) here", "C", HowParen},
		{"A) no\nB) yes, fine", "B", HowLabel},
		{"the set $A$ here", "A", HowMath},
		// A committed statement beats a later emphasis or paren.
		{"The answer is B.\n\n**Why not C?** (C) ignores drag.", "B", HowStatement},
		// Within the committed tier the last one wins, boxed or stated.
		{"The answer is B. Checking again... $\\boxed{D}$", "D", HowBoxed},
		{"$\\boxed{D}$ — no wait, the answer is A.", "A", HowStatement},
	} {
		got, how := ExtractChoice(c.resp, "ABCD")
		if got != c.want || how != c.how {
			t.Errorf("ExtractChoice(%q) = %q, %q; want %q, %q", c.resp, got, how, c.want, c.how)
		}
	}
	// The registry scorer reads the item's letters from meta.
	f, ok := Lookup("mcq_robust")
	if !ok {
		t.Fatal("mcq_robust not registered")
	}
	if r := f("Answer: E", "E", nil); !r.Correct || r.Extracted != "E" {
		t.Errorf("mcq_robust A–J: %+v", r)
	}
	if r := f("Answer: E", "E", map[string]any{"letters": "ABCD"}); r.Correct || r.Extracted != "" {
		t.Errorf("mcq_robust with letters ABCD accepted E: %+v", r)
	}
	if r := f("Answer: b", "B", nil); r.Correct {
		t.Errorf("mcq_robust accepted a lower-case letter: %+v", r)
	}
}

// TestExtractMMLUProAgainstPython compares ExtractMMLUPro with the official
// three regexes run by CPython on random fragments that stress each step
// and Python's Unicode \s and \b.
func TestExtractMMLUProAgainstPython(t *testing.T) {
	py := testenv.LookPath(t, testenv.Python3)
	frags := []string{"answer is ", "answer is (", "The answer is", "Answer:", "answer:", "ANSWER: ", "answer", ":",
		"A", "B", "J", "K", "a", ")", "(", " ", "\n", "\u00a0", "\u2003", "é", "日", "ſ", "K", "_", "1", ".", "Because", "x"}
	rng := rand.New(rand.NewPCG(3, 4))
	var in []string
	for range 3000 {
		var b strings.Builder
		for n := rng.IntN(10); n >= 0; n-- {
			b.WriteString(frags[rng.IntN(len(frags))])
		}
		in = append(in, b.String())
	}
	const prog = `import json, re, sys
def extract(text):
    m = re.search(r"answer is \(?([A-J])\)?", text)
    if m: return m.group(1)
    m = re.search(r'.*[aA]nswer:\s*([A-J])', text)
    if m: return m.group(1)
    m = re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
    if m: return m.group(0)
    return ""
json.dump([extract(t) for t in json.load(sys.stdin)], sys.stdout)`
	data, _ := json.Marshal(in)
	cmd := exec.Command(py, "-c", prog)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, s := range in {
		if got, _ := ExtractMMLUPro(s); got != want[i] {
			if bad++; bad <= 10 {
				t.Errorf("ExtractMMLUPro(%q) = %q, Python %q", s, got, want[i])
			}
		}
	}
}

func BenchmarkExtractChoice(b *testing.B) {
	resp := strings.Repeat("Option A is wrong because the enzyme is saturated; (C) looks tempting. I think $x$ matters. ", 40) + "\n\nAnswer: D"
	for b.Loop() {
		ExtractChoice(resp, "ABCD")
	}
}
