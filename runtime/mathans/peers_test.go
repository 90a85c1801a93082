package mathans

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// peerCase is one case of a peer grader's test suite: two answers (or
// responses) and the peer's verdict on them. The pairs and verdicts are
// facts carried over from the peers' published tests; each verdict was
// checked by hand (and, for Math-Verify, by running its suite), and where
// the peer is wrong, dispute says why.
type peerCase struct {
	gold, pred string
	peer       bool   // the peer's published verdict
	opts       string // non-default peer options the verdict was given under
	dispute    string // why the peer's verdict is wrong: the truth is !peer
}

// truth is the right verdict: the peer's, unless it is disputed.
func (c peerCase) truth() bool { return c.peer != (c.dispute != "") }

// peerSuite is one peer's cases and how nel reads them: responses go
// through Extract (answers that are whole responses, as Math-Verify's
// tests give them) or are answers already (NeMo-Skills' math_equal and
// Minerva's normaliser see extracted answers).
type peerSuite struct {
	name    string
	extract bool
	cases   []peerCase
}

func peerSuites() []peerSuite {
	return []peerSuite{
		{"Math-Verify", true, mathVerifyCases},
		{"NeMo-Skills", false, nemoSkillsCases},
		{"Minerva", false, minervaCases},
	}
}

// answerOf is what the math500 scorer compares: the extracted answer, or
// the text itself when nothing is extracted.
func answerOf(s string) string {
	if a, how := Extract(s); how != "" {
		return a
	}
	return s
}

func (p peerSuite) grade(c peerCase) bool {
	if p.extract {
		return Equivalent(answerOf(c.pred), answerOf(c.gold))
	}
	return Equivalent(c.pred, c.gold)
}

// nemoSkillsCases are NVIDIA NeMo-Skills' tests/test_math_equal.py
// (math_equal on extracted answers; each pair is asserted both ways).
var nemoSkillsCases = []peerCase{
	// test_correct_examples
	{`5`, `5`, true, "", ""},
	{`5`, `5.0`, true, "", ""},
	{`1/2`, `0.5`, true, "", ""},
	{`\frac{1}{2}`, `0.5`, true, "", ""},
	{`918\frac{1}{2}`, `918.5`, true, "", ""},
	{`x^2+2x+1`, `x^2 + 2*x + 1`, true, "", ""},
	{`x^2+2x+1`, `x^2 + 2*x - (-1)`, true, "", ""},
	{`y = x^2+2x+1`, `2x+ 1+x^2`, true, "", ""},
	{`odd`, `\text{odd}`, true, "", ""},
	{`E`, `\mathrm{E}`, true, "", ""},
	{`A`, `\textbf{A}`, true, "", ""},
	{`f'`, `f'`, true, "", ""},
	{`185`, `185\`, true, "", ""},
	{`185\`, `185\`, true, "", ""},
	{`.185`, `0.185`, true, "", ""},
	{`\frac {1}{2}`, `0.5`, true, "", ""},
	{`17\text{ any text}`, `17`, true, "", ""},
	{`\$10`, `10`, true, "", ""},
	{`10%`, `10`, true, "", ""},
	{`10\%`, `10`, true, "", ""},
	{`2.5`, `\frac{5}{2}`, true, "", ""}, // the test's 5 / 2, a Python float
	{`\frac{1}{3}`, `\dfrac{1}{3}`, true, "", ""},
	{`(r+5)(r+5)`, `(r+5)^2`, true, "", ""},
	{`\frac{\sqrt{3}}{3}`, `\frac{\sqrt{3}}{3} \approx 0.577`, true, "", ""},
	{`C`, `C. x = 42`, true, "", ""},
	{`\begin{pmatrix}0&0&0\\0&1&0\\0&0&1\end{pmatrix}`, `\begin{bmatrix} 0 & 0 & 0 \\ 0 & 1 & 0 \\ 0 & 0 & 1 \end{bmatrix}`, true, "", ""},
	// test_incorrect_examples
	{`5`, `5.001`, false, "", ""},
	{`0`, ``, false, "", ""}, // the test's None: no answer
	{`x^2+2x+1`, `x^3+2x+1`, false, "", ""},
	{`odd`, `\text{oddd}`, false, "", ""},
	{`E`, `\mathrm{E}*2`, false, "", ""},
	{`\sqrt{67},-\sqrt{85}`, `\sqrt{67}`, false, "", ""},
}

// minervaCases apply the normalisation of Lewkowycz et al. (2022),
// appendix D (as lm-evaluation-harness' minerva_math exact_match runs it
// before its sympy check) to answers as they follow "The final answer
// is": equal normalised strings are equal answers. The paper publishes the
// procedure, not test cases: each pair exercises one of its rules, and the
// verdicts were derived by hand and then checked by running the procedure.
var minervaCases = []peerCase{
	// Shorthand TeX.
	{`\frac{1}{2}`, `\frac12`, true, "", ""},
	{`\sqrt{3}`, `\sqrt3`, true, "", ""},
	{`-\frac{2}{3}`, `-\frac23`, true, "", ""},
	{`\frac{\sqrt{3}}{2}`, `\frac{\sqrt3}{2}`, true, "", ""},
	// The text after the last "=".
	{`5`, `x = 5`, true, "", ""},
	{`16`, `n=480/30=16`, true, "", ""},
	{`6`, `x = 5`, false, "", ""},
	// Units and words removed.
	{`10`, `10 \text{ cm}`, true, "", ""},
	{`12`, `12 \mbox{ inches}`, true, "", ""},
	{`5`, `5 \text{ ways}`, true, "", ""},
	{`5`, `5 dollars`, true, "", ""},
	{`36`, `36 \text{ square units}`, true, "", ""},
	{`2`, `2 \text{ m}`, true, "", ""},
	{`120`, `120 \text{ cm}^2`, true, "", ""},
	{`9`, `9 \text{ students}`, true, "", ""},
	{`30`, `30^\circ`, true, "", ""},
	{`30`, `30^{\circ}`, true, "", ""},
	{`18.90`, `\$18.90`, true, "", ""},
	// \text, \boxed and "and".
	{`(C)`, `\text{(C)}`, true, "", ""},
	{`Evelyn`, `\text{Evelyn}`, true, "", ""},
	{`7`, `\boxed{7}`, true, "", ""},
	{`1,2`, `1\text{ and }2`, true, "", ""},
	// Thousands separators: commas go when only digits are left.
	{`1000`, `1,000`, true, "", ""},
	{`32349`, `32, 349`, true, "", "spaces are deleted before the comma rule, so two numbers become one; Math-Verify keeps them apart"},
	// Spacing.
	{`[2,5)`, `[2, 5)`, true, "", ""},
	// What string equality does not reach.
	{`3`, `3.0`, false, "", "3.0 is 3 (lm-eval's sympy check, NeMo-Skills and Math-Verify agree)"},
	{`\frac{1}{2}`, `\frac{2}{4}`, false, "", "the same number"},
	{`\frac{1}{2}`, `\dfrac{1}{2}`, false, "", "\\dfrac is \\frac displayed larger (Hendrycks' is_equiv rewrites it)"},
	{`0.5`, `\frac{1}{2}`, false, "", "the same number"},
	{`18`, `\$18.00`, false, "", "the same amount"},
	{`-2,1`, `1,-2`, false, "", "the same solutions (Math-Verify compares solution lists as sets)"},
	{`10`, `10\%`, false, "", "a percent sign after the number a percentage question asks for (Hendrycks, NeMo and NeMo-Skills drop it)"},
	// Different answers.
	{`\frac{1}{2}`, `\frac{1}{3}`, false, "", ""},
	{`2`, `-2`, false, "", ""},
	{`(1,2)`, `(2,1)`, false, "", ""},
}

// TestPeersNoFalsePositive: nel never calls equal what is not. A wrong
// "equivalent" inflates a score; a missed one is only conservative.
func TestPeersNoFalsePositive(t *testing.T) {
	for _, p := range peerSuites() {
		neq := 0
		for i, c := range p.cases {
			if c.truth() {
				continue
			}
			neq++
			if p.grade(c) {
				t.Errorf("%s case %d: %.80q and %.80q are not equivalent, nel says they are (peer %v%s)",
					p.name, i, c.gold, c.pred, c.peer, optNote(c))
			}
		}
		if neq == 0 {
			t.Errorf("%s: no non-equivalent cases", p.name)
		}
	}
}

func optNote(c peerCase) string {
	if c.opts == "" {
		return ""
	}
	return ", " + c.opts
}

// agreementRe reads a row of AGREEMENT.md's table: peer, agreements,
// cases, false positives, misses.
var agreementRe = regexp.MustCompile(`(?m)^\| (Math-Verify|NeMo-Skills|Minerva) +\| (\d+)/(\d+) +\| [^|]*\| (\d+)/(\d+) +\| (\d+)/(\d+) +\|`)

// TestPeersAgreement measures agreement with each peer's published
// verdicts and holds AGREEMENT.md to the measured numbers.
func TestPeersAgreement(t *testing.T) {
	doc, err := os.ReadFile("AGREEMENT.md")
	if err != nil {
		t.Fatal(err)
	}
	written := map[string][]int{}
	for _, m := range agreementRe.FindAllStringSubmatch(string(doc), -1) {
		var ns []int
		for _, s := range m[2:] {
			n, _ := strconv.Atoi(s)
			ns = append(ns, n)
		}
		written[m[1]] = ns
	}
	for _, p := range peerSuites() {
		agree, fp, neq, miss, eq := 0, 0, 0, 0, 0
		for i, c := range p.cases {
			got := p.grade(c)
			if got == c.peer {
				agree++
			} else {
				t.Logf("%s case %d: nel %v, peer %v%s%s: %.100q vs %.100q", p.name, i, got, c.peer, optNote(c),
					map[bool]string{true: " (disputed: " + c.dispute + ")", false: ""}[c.dispute != ""], c.gold, c.pred)
			}
			if c.truth() {
				eq++
				if !got {
					miss++
				}
			} else {
				neq++
				if got {
					fp++
				}
			}
		}
		measured := []int{agree, len(p.cases), fp, neq, miss, eq}
		line := fmt.Sprintf("| %s | %d/%d | … | %d/%d | %d/%d |", p.name, agree, len(p.cases), fp, neq, miss, eq)
		t.Logf("measured: %s", line)
		if w, ok := written[p.name]; !ok || fmt.Sprint(w) != fmt.Sprint(measured) {
			t.Errorf("AGREEMENT.md says %s %v (agree/cases, false positives/non-equivalent, missed/equivalent), measured %v: update the table row to %s",
				p.name, w, measured, line)
		}
	}
}

// issueForms are the forms on which nel disagreed with its peers (issue 17
// §6), one line per form, each with the verdict the peers give and the
// peer case it comes from. pred is a response: it goes through Extract.
var issueForms = []struct {
	pred, gold string
	want       bool
	from       string
}{
	// Equations whose left side is a variable.
	{`$y = 2x+1$`, `2x+1`, true, "Math-Verify relations: $k=1$ is $1$; NeMo-Skills: y = x^2+2x+1"},
	{`$2x+1$`, `y = 2x+1`, true, "Math-Verify relations: $1$ is $k=1$"},
	{`$11a+c$`, `7 = 11a+c`, false, "Math-Verify relations: 7 = 11a+c is not 11a+c"},
	{`$y=-\frac{1}{2}x+\frac{3}{4}$`, `2x+4y-3=0`, true, "Math-Verify relations: the same line"},
	{`$x = 5+5+1 = 7 =11$`, `x = 11`, true, "Math-Verify relations: the last = is the answer"},
	{`$x=1/3\approx1.3$`, `1/3`, true, "Math-Verify relations: the exact value before \\approx"},
	{`$(p,q)=(3,2)$`, `(3,2)`, true, "Math-Verify numina: a tuple of unknowns"},
	// Inequalities either way round.
	{`$3 < x$`, `x > 3`, true, "Math-Verify relations: flipped inequalities"},
	{`$5 \geq x$`, `x \leq 5`, true, "Math-Verify relations"},
	{`$x \gt 5$`, `x > 5`, true, "Math-Verify relations: \\gt"},
	{`$x <= 2$`, `x \leq 2`, true, "Math-Verify relations: <="},
	{`$x != 5$`, `x \neq 5`, true, "Math-Verify relations: !="},
	{`$-x > -1$`, `x < 1`, true, "Math-Verify relations: negated"},
	{`$x < 5$`, `x > 5`, false, "Math-Verify relations"},
	{`$x \leq 5$`, `x \geq 5`, false, "Math-Verify relations"},
	{`$x > -1$`, `x < 1`, false, "Math-Verify relations"},
	{`$x \le 5$`, `x < 5`, false, "strict and non-strict differ"},
	// Intervals.
	{`$(3,\infty)$`, `x > 3`, true, "Math-Verify: a relation in the gold answer is its solution set"},
	{`$[3,\infty)$`, `x > 3`, false, "the endpoint is not a solution"},
	{`$x \in [-2,7]$`, `[-2,7]`, true, "Math-Verify: x \\in dropped"},
	{`$[-2,7]$`, `-2 \le x \le 7`, true, "Math-Verify set/relation: a chained inequality"},
	{`$(-2,7]$`, `-2 \le x \le 7`, false, "an open end is not a closed one"},
	{`$[0,1)$`, `[0,9)`, false, "Math-Verify sets"},
	{`$[0,9)$`, `(0,9)`, false, "Math-Verify sets"},
	// Ordered pairs and tuples.
	{`$(1,4.5)$`, `(1,\frac{9}{2})`, true, "Math-Verify complex: element-wise"},
	{`$(2,1)$`, `(1,2)`, false, "order matters"},
	{`${1,3}$`, `(3,1)`, false, "Math-Verify: a list is not a pair"},
	{`$D = (0, 1.5)$`, `D = (0, 1)`, false, "Math-Verify yujianll"},
	// Lists and thousands separators.
	{`is $\boxed{32, 349}$`, `32349`, false, "Math-Verify: a comma and a space separate answers"},
	{`is $\boxed{32,\! 349}$`, `32349`, true, "Math-Verify: ,\\! is a thousands separator"},
	{`$7,425,000$`, `7425000`, true, "Math-Verify number extraction"},
	{`$\boxed{11,\! 111,\! 111,\! 100}$`, `11111111100`, true, "Math-Verify"},
	{`$\boxed{\{-12, -11, -10, -8, -7, -6\}}$`, `-12;-11;-10;-8;-7;-6`, true, "Math-Verify numina: semicolons"},
	{`${-2021, 2021}$`, `\pm 2021`, true, "Math-Verify yujianll: braces group a list"},
	{`$19, 46, \text{ and } 82$`, `19, 46, and 82`, true, "Math-Verify yujianll"},
	// The last \boxed{} or the last $…$.
	{`First \boxed{1}, then \boxed{2}.`, `2`, true, "NeMo-Skills, Minerva, lm-eval: the last \\boxed"},
	{`First \boxed{1}, then \boxed{2}.`, `1`, false, "not the first"},
	{`So $x = 3$ at first, and finally $y=4$.`, `4`, true, "Math-Verify: the last math segment"},
	{`So $x = 3$ at first, and finally $y=4$.`, `3`, false, "not the first"},
	{`The identity matrix is $ \begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix} $.`, `\begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix}`, true, "Math-Verify matrices"},
	// Units and percent words.
	{`5 cm`, `5`, true, "Minerva: cm removed"},
	{`20 percent`, `20`, true, "Math-Verify percent notation"},
	{`$20\%$`, `20`, true, "Minerva/Hendrycks/NeMo-Skills drop the percent sign"},
	{`28 pct`, `28\%`, true, "Math-Verify percent notation"},
	{`$\boxed{28 percentage}$`, `28\%`, true, "Math-Verify percent notation"},
	{`The distance is $\boxed{125\textnormal{ miles}}.$`, `125`, true, "Math-Verify"},
	{`21 percent`, `20`, false, "a different number"},
	// Plain-text and Python-style math.
	{`sqrt(3)`, `\sqrt{3}`, true, "plain text"},
	{`2**(1/4)`, `\sqrt[4]{2}`, true, "Math-Verify expression extraction: Python powers"},
	{`pi/2`, `\frac{\pi}{2}`, true, "plain text"},
	{`x^2 + 2*x + 1`, `x^2+2x+1`, true, "NeMo-Skills"},
	{`sqrt(2)`, `\sqrt{3}`, false, "different radicands"},
	{`2**(1/3)`, `\sqrt[4]{2}`, false, "different roots"},
	{`pi/3`, `\frac{\pi}{2}`, false, "different multiples"},
	// Numbers written differently.
	{`40.`, `40`, true, "Math-Verify: 40."},
	{`4e1`, `40`, true, "scientific notation"},
	{`0.50`, `\frac12`, true, "Math-Verify: 0.50"},
	{`1,000.0`, `1000`, true, "Math-Verify number extraction"},
	{`4e1`, `4`, false, "4e1 is forty"},
	{`0.51`, `\frac12`, false, "a different number"},
}

func TestIssueForms(t *testing.T) {
	for _, c := range issueForms {
		ex := answerOf(c.pred)
		if got, why := EquivalentWhy(ex, c.gold); got != c.want {
			t.Errorf("%q (extracted %q) vs %q = %v (%s), want %v: %s", c.pred, ex, c.gold, got, why, c.want, c.from)
		}
	}
}
