package mathans

import "testing"

// equivTable holds (pred, gold) pairs with the verdict the reference
// graders give: Hendrycks MATH is_equiv (strip_string), the PRM800K grader
// (normalisation, then sympy), lm-eval minerva_math and math-verify. Where
// they disagree the row follows the package's documented decision.
var equivTable = []struct {
	pred, gold string
	want       bool
	what       string
}{
	// Hendrycks strip_string normalisations.
	{`\dfrac{1}{2}`, `\frac{1}{2}`, true, "dfrac is frac"},
	{`\tfrac{3}{4}`, `\frac34`, true, "tfrac, and frac without braces"},
	{`\frac12`, `\frac{1}{2}`, true, "fix_fracs: \\frac12"},
	{`\frac 59`, `\frac{5}{9}`, true, "fix_fracs with a space"},
	{`\frac9{19}`, `\frac{9}{19}`, true, "fix_fracs: braced second argument only"},
	{`\frac{270}{7}`, `\frac{270}7\text{ degrees}`, true, "unbraced second argument and a unit"},
	{`\left( 3, \frac{\pi}{2} \right)`, `(3,\frac{\pi}{2})`, true, "\\left and \\right dropped"},
	{`10,\!080`, `10080`, true, "\\! and the thousands separator"},
	{`11,\! 111,\! 111,\! 100`, `11111111100`, true, "several thousands separators"},
	{`58,500`, `58500`, true, "plain thousands separator"},
	{`1,000`, `1`, false, "a thousands separator is not a list"},
	{`30^\circ`, `30`, true, "^\\circ dropped"},
	{`30^{\circ}`, `30^\circ`, true, "^{\\circ} dropped"},
	{`30°`, `30`, true, "unicode degree sign"},
	{`\$18.90`, `18.90`, true, "\\$ dropped"},
	{`$18.90`, `18.9`, true, "math delimiters and trailing zero (value)"},
	{`50\%`, `50`, true, "\\% dropped (Hendrycks, minerva, NeMo)"},
	{`50%`, `50`, true, "% dropped"},
	{`50\%`, `0.5`, false, "percent is not converted to a fraction"},
	{`864 \mbox{ inches}^2`, `864`, true, "\\mbox unit with power (remove_right_units)"},
	{`15\mbox{ cm}^2`, `15`, true, "cm^2"},
	{`5.4 \text{ cents}`, `5.4`, true, "\\text unit"},
	{`12 \text{ units}`, `12`, true, "units"},
	{`12 units`, `12`, true, "bare unit word"},
	{`20 degrees`, `20^\circ`, true, "degrees word vs ^\\circ"},
	{`0.5`, `\frac{1}{2}`, true, "0.5 is 1/2"},
	{`.5`, `\frac{1}{2}`, true, "leading dot"},
	{`.35625`, `0.35625`, true, "leading dot vs 0."},
	{`.0000672`, `6.72 \times 10^{-5}`, true, "scientific notation with \\times 10^"},
	{`6.72e-5`, `.0000672`, true, "e-notation"},
	{`k = 4`, `4`, true, "k = dropped (single variable assignment)"},
	{`x=5`, `5`, true, "x= dropped"},
	{`x = 5`, `x=5`, true, "assignment on both sides"},
	{`5.`, `5`, true, "trailing period"},
	{`3/4`, `\frac{3}{4}`, true, "fix_a_slash_b"},
	{`-3/4`, `-\frac{3}{4}`, true, "negative a/b"},
	{`\sqrt2`, `\sqrt{2}`, true, "fix_sqrt"},
	{`11\sqrt2`, `11 \sqrt{2}`, true, "fix_sqrt after a coefficient"},
	{`\text{(C)}`, `C`, true, "choice letter in \\text and parentheses"},
	{`\textbf{(B)}`, `\text{(B)}`, true, "\\textbf"},
	{`(B)`, `\text{(C)}`, false, "different choice"},
	{`\text{Evelyn}`, `Evelyn`, true, "\\text unwrapped"},
	{`evelyn`, `\text{Evelyn}`, true, "text compared case-insensitively"},
	{`\text{east}`, `\text{west}`, false, "different words"},
	{`east`, `seat`, false, "words are not products of variables"},
	{`\boxed{5}`, `5`, true, "a boxed answer"},
	{`$\boxed{\frac{1}{4}}$`, `\frac14`, true, "boxed in math mode"},
	{`\(\frac{3}{2}\)`, `1.5`, true, "\\( \\) delimiters"},
	{`\displaystyle\frac{3}{2}`, `\frac32`, true, "\\displaystyle"},
	{`x \in [-2,7]`, `[-2,7]`, true, "x \\in prefix"},
	{`\$32,\!348`, `32348`, true, "dollar, \\!, thousands"},
	{`4210_{5}`, `4210_5`, true, "braced base subscript"},
	{`52_8`, `52`, false, "a base-8 numeral is not the decimal number"},
	{`52_8`, `53_8`, false, "different base numerals"},

	// Numbers.
	{`3`, `3.0`, true, "integer vs decimal"},
	{`3`, `3.01`, false, "close but different"},
	{`3.14159`, `\pi`, false, "pi is not a decimal approximation"},
	{`1000000`, `1000001`, false, "large integers compared exactly"},
	{`11111111100`, `11111111101`, false, "very large integers exactly"},
	{`\frac{1}{3}`, `0.3333333333`, true, "decimal within 1e-6"},
	{`\frac{1}{3}`, `0.333`, false, "decimal rounded too far"},
	{`\frac{1}{2}`, `2`, false, "a half is not two"},
	{`\frac{2}{4}`, `\frac{1}{2}`, true, "unreduced fraction"},
	{`-\frac{3}{8}`, `\frac{-3}{8}`, true, "sign placement"},
	{`-\frac{3}{8}`, `\frac{3}{-8}`, true, "negative denominator"},
	{`-\frac{3}{8}`, `\frac{3}{8}`, false, "sign matters"},
	{`1\frac{4}{5}`, `\frac{9}{5}`, true, "mixed number"},
	{`137 \frac{1}{2}`, `137.5`, true, "mixed number with a space"},
	{`1\frac{4}{5}`, `\frac{4}{5}`, false, "a mixed number is not the product"},
	{`2^{10}`, `1024`, true, "power"},
	{`2^{-2}`, `\frac{1}{4}`, true, "negative power"},
	{`5!`, `120`, true, "factorial"},
	{`0`, `-0`, true, "negative zero"},
	{`0`, `0.0000001`, false, "zero vs a small number"},
	{`.0000672`, `.0000673`, false, "small numbers compared relatively"},
	{`1.25`, `\frac{5}{4}`, true, "decimal vs fraction exactly"},
	{`\frac{20000}{\pi}`, `6366.1977`, true, "decimal approximation of an irrational within 1e-6"},
	{`\frac{20000}{\pi}`, `6366.2`, false, "coarser approximation"},

	// Radicals, pi, complex numbers.
	{`2\sqrt{3}`, `\sqrt{12}`, true, "radical simplification"},
	{`\frac{\sqrt{3}}{3}`, `\frac{1}{\sqrt{3}}`, true, "rationalised denominator"},
	{`\frac{\sqrt{3}}{3}`, `\frac{\sqrt{2}}{2}`, false, "different radicals"},
	{`\sqrt{4}`, `2`, true, "perfect square"},
	{`\sqrt[3]{8}`, `2`, true, "cube root"},
	{`\sqrt[3]{-8}`, `-2`, true, "odd root of a negative"},
	{`\pi/2`, `\frac{\pi}{2}`, true, "pi over two, two ways"},
	{`\frac{1}{2}\pi`, `\frac{\pi}{2}`, true, "coefficient in front"},
	{`8 \pi`, `8\pi`, true, "space"},
	{`7\pi`, `8\pi`, false, "different multiples of pi"},
	{`288\pi`, `288 \pi`, true, "space before pi"},
	{`18+2\pi`, `2\pi+18`, true, "commuted sum"},
	{`6+9i`, `9i+6`, true, "complex, commuted"},
	{`6-5i`, `6+5i`, false, "conjugate"},
	{`1+2i`, `i \cdot 2 + 1`, true, "\\cdot"},
	{`i^2`, `-1`, true, "imaginary unit squared"},
	{`70 \sqrt{2}`, `70\sqrt2`, true, "spacing and braces"},
	{`\sqrt{66}`, `\sqrt{65}`, false, "different radicands"},
	{`-\sqrt{3}`, `\sqrt{3}`, false, "sign of a radical"},
	{`\cot x`, `\frac{\cos x}{\sin x}`, true, "trig identity by evaluation"},
	{`\cot x`, `\tan x`, false, "different functions"},

	// Expressions with variables.
	{`x^2`, `2x`, false, "x^2 is not 2x"},
	{`2x`, `x+x`, true, "like terms"},
	{`(a+5)(b+2)`, `ab+2a+5b+10`, true, "expanded product"},
	{`(a+5)(b+2)`, `(a+2)(b+5)`, false, "swapped constants"},
	{`x^3+3x-6`, `3x+x^3-6`, true, "commuted polynomial"},
	{`x^5 - x^4 + x^3 - x^2 + x - 1`, `\frac{x^6-1}{x+1}`, true, "polynomial vs rational function"},
	{`8n^2 + 4n + 1`, `8n^2+4n+2`, false, "constant term differs"},
	{`2k+2`, `2(k+1)`, true, "factored"},
	{`2k`, `2n`, false, "different variable names"},
	{`3R^2`, `3r^2`, false, "case of a variable matters"},
	{`\frac{11+9a}{20}`, `\frac{11}{20}+\frac{9a}{20}`, true, "split fraction"},
	{`p - q`, `-(q-p)`, true, "negated difference"},
	{`6r^2-4r-24`, `2(3r^2-2r-12)`, true, "common factor"},
	{`5r^5`, `5r^4`, false, "exponent differs"},
	{`x^{2}`, `x^2`, true, "braced exponent"},

	// Equations.
	{`y = 2x + 3`, `y=3+2x`, true, "commuted right side"},
	{`y = 2x + 3`, `2x + 3`, true, "y = dropped (Hendrycks two-character left side)"},
	{`2x + 3 = y`, `y = 2x+3`, true, "sides swapped"},
	{`y = -2x`, `y = 2x`, false, "different slope"},
	{`5x - 7y + 11z + 4 = 0`, `-5x+7y-11z-4=0`, true, "plane up to a factor"},
	{`10x - 14y + 22z + 8 = 0`, `5x - 7y + 11z + 4 = 0`, true, "plane scaled by 2"},
	{`5x - 7y + 11z + 4 = 0`, `5x - 7y + 11z - 4 = 0`, false, "different plane"},

	// Tuples, intervals, sets, lists.
	{`(1,2)`, `[1,2]`, false, "open vs closed"},
	{`(1,2)`, `(2,1)`, false, "ordered pair order matters"},
	{`(8,-2)`, `\left(8, -2\right)`, true, "pair with \\left"},
	{`(\frac{3}{2}, -13)`, `(1.5,-13)`, true, "pair element-wise by value"},
	{`(6,31,-1)`, `(6, 31, -1)`, true, "triple with spaces"},
	{`(6,31,-1)`, `(6,31)`, false, "different lengths"},
	{`(3,4]`, `(3,4)`, false, "half-open vs open"},
	{`(3,4]`, `\left(3,4\right]`, true, "half-open with \\left/\\right"},
	{`(-\infty, 0]`, `(-\infty,0]`, true, "infinite endpoint"},
	{`(-\infty, 0]`, `(\infty,0]`, false, "sign of infinity"},
	{`(5,\infty)`, `(5, \infty)`, true, "open ray"},
	{`(-\infty, 2) \cup (3, \infty)`, `(3,\infty)\cup(-\infty,2)`, true, "union in either order"},
	{`(0,9) \cup (9,36)`, `(0,36)`, false, "a union is not the hull"},
	{`(0,9) \cup (9,36)`, `(0,9] \cup (9,36)`, false, "bracket kind in a union"},
	{`[\frac{\pi^2}{8}, \frac{5\pi^2}{4}]`, `\left[ \frac{\pi^2}{8}, \frac{5 \pi^2}{4} \right]`, true, "interval of expressions"},
	{`\{1,2\}`, `\{2,1\}`, true, "set order ignored"},
	{`\{1,2\}`, `\{1,3\}`, false, "different sets"},
	{`\{1,2\}`, `(1,2)`, false, "set vs tuple"},
	{`1, 2`, `2, 1`, true, "all solutions: unordered"},
	{`1,-2`, `-2,1`, true, "solution list from the data set"},
	{`x=1, x=-2`, `1,-2`, true, "assignments in a list"},
	{`3, 5, 7`, `7, 5, 3`, true, "three solutions"},
	{`3, 5, 7`, `3, 5`, false, "missing solution"},
	{`3, 5`, `3, 5, 5`, false, "multiplicity counts"},
	{`1 \pm \sqrt{19}`, `1+\sqrt{19}, 1-\sqrt{19}`, true, "\\pm expanded"},
	{`3 \pm 2 \sqrt{2}`, `3 + 2\sqrt2`, false, "\\pm is two answers"},
	{`\{1\pm\sqrt{5},-2\}`, `-2, 1+\sqrt{5}, 1-\sqrt{5}`, true, "\\pm inside a set vs a list"},
	{`1 \text{ and } 2`, `1, 2`, true, "\\text{and} joins answers"},

	// Matrices and vectors.
	{`\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}`, `\begin{pmatrix} 0.2 \\ -3.6 \end{pmatrix}`, true, "vector entries by value"},
	{`\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}`, `\begin{bmatrix} -1 & 0 \\ 0 & -1 \end{bmatrix}`, true, "pmatrix vs bmatrix"},
	{`\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}`, `\begin{pmatrix} -1 & 0 \\ 0 & 1 \end{pmatrix}`, false, "one entry differs"},
	{`\begin{pmatrix} -7 \\ 16 \\ 5 \end{pmatrix}`, `(-7,16,5)`, true, "column vector as a tuple"},
	{`\begin{pmatrix} -7 \\ 16 \\ 5 \end{pmatrix}`, `\begin{pmatrix} -7 & 16 & 5 \end{pmatrix}`, false, "column is not a row"},
	{`\begin{pmatrix} -7 \\ 16 \\ 5 \end{pmatrix}`, `[-7,16,5]`, false, "vector vs bracketed list"},

	// Garbage and edge cases.
	{``, ``, false, "empty answers are never correct"},
	{``, `3`, false, "no answer"},
	{`3`, ``, false, "no gold"},
	{`\frac{1}{0}`, `\frac{2}{0}`, false, "division by zero is not a value"},
	{`((((`, `3`, false, "unbalanced"},
	{`3)`, `3`, false, "trailing bracket"},
	{`\unknown{3}`, `3`, false, "unknown command"},
	{`\sqrt{}`, `0`, false, "empty argument"},
	{`2^{10000000}`, `2^{10000001}`, false, "huge powers do not hang"},
}

func TestEquivalentTable(t *testing.T) {
	if len(equivTable) < 120 {
		t.Fatalf("table has %d rows, want at least 120", len(equivTable))
	}
	for _, c := range equivTable {
		got, why := EquivalentWhy(c.pred, c.gold)
		if got != c.want {
			t.Errorf("Equivalent(%q, %q) = %v (%s), want %v: %s [normalised %q vs %q]",
				c.pred, c.gold, got, why, c.want, c.what, Normalize(c.pred), Normalize(c.gold))
		}
		// The relation is symmetric.
		if back := Equivalent(c.gold, c.pred); back != c.want {
			t.Errorf("Equivalent(%q, %q) = %v reversed, want %v: %s", c.gold, c.pred, back, c.want, c.what)
		}
	}
}
