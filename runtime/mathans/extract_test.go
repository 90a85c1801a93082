package mathans

import "testing"

func TestExtract(t *testing.T) {
	cases := []struct {
		in, want, how string
	}{
		{`So $x = \boxed{5}$.`, "5", "boxed"},
		{`First \boxed{1}, then \boxed{\frac{1}{2}}.`, `\frac{1}{2}`, "boxed"}, // the last one
		{`\boxed{\{1, 2\}}`, `\{1, 2\}`, "boxed"},                              // escaped braces do not nest
		{`\boxed{(3, \frac{\pi}{2})}`, `(3, \frac{\pi}{2})`, "boxed"},
		{`The answer is $\boxed 5$.`, "5", "boxed"},              // Hendrycks "\boxed 5"
		{`\fbox{12}`, "12", "boxed"},                             // \fbox
		{`\boxed{7} and then \boxed{3`, "7", "boxed"},            // a truncated last box is skipped
		{"Work.\nAnswer: 42", "42", "answer_line"},               // our prompt's form
		{"Answer: $\\frac{1}{2}$", `\frac{1}{2}`, "answer_line"}, // math delimiters stripped
		{"**Answer:** 7", "7", "answer_line"},                    // markdown
		{"Final Answer: The final answer is $5$. I hope it is correct.", "5", "answer_line"},
		{"The final answer is 17. I hope it is correct.", "17", "answer_line"},
		{"the answer is 3.\nWait, the answer is 4.", "4", "answer_line"}, // last one wins
		{"Answer: \\$32,\\!348", `\$32,\!348`, "answer_line"},            // \$ is not a delimiter
		{"Answer: \\(x = 2\\)", "x = 2", "answer_line"},
		{"Answer: the value is $12$ cm.", "12", "answer_line"}, // math segment in prose
		{"I do not know.", "", ""},
		{"", "", ""},
	}
	for _, c := range cases {
		got, how := Extract(c.in)
		if got != c.want || how != c.how {
			t.Errorf("Extract(%q) = %q, %q; want %q, %q", c.in, got, how, c.want, c.how)
		}
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{`\dfrac{1}{2}`, `\frac{1}{2}`},
		{`\frac12`, `\frac{1}{2}`},
		{`\frac{270}7\text{ degrees}`, `\frac{270}{7}`},
		{`\left( 3, \frac{\pi}{2} \right)`, `(3,\frac{\pi}{2})`},
		{`10,\!080`, `10080`},
		{`(1,000)`, `(1,000)`}, // a tuple keeps its commas
		{`1,-2`, `1,-2`},
		{`30^\circ`, `30`},
		{`\$18.90`, `18.90`},
		{`50\%`, `50`},
		{`864 \mbox{ inches}^2`, `864`},
		{`k = 4`, `4`},
		{`5x - 7y + 11z + 4 = 0`, `5x-7y+11z+4=0`},
		{`\sqrt2`, `\sqrt{2}`},
		{`3/4`, `\frac{3}{4}`},
		{`.5`, `0.5`},
		{`\text{(C)}`, `C`},
		{`\cot x`, `\cot x`}, // the space that ends a control word stays
		{`4210_{5}`, `4210_5`},
		{`x \in [-2,7]`, `[-2,7]`},
		{`\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}`, `\begin{pmatrix}1/5\\-18/5\end{pmatrix}`},
		{`5.`, `5`},
		{`$\boxed{3}$`, `3`},
	}
	for _, c := range cases {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzEquivalent checks that nothing panics or loops on malformed input and
// that an answer equals itself whenever it normalises to something.
func FuzzEquivalent(f *testing.F) {
	for _, c := range equivTable {
		f.Add(c.pred, c.gold)
	}
	for _, s := range []string{`\frac{`, `\sqrt[`, `\begin{pmatrix}`, `\{\}`, `(,)`, `^^^`, `\left(`,
		`1e999999`, `\boxed{`, `((((((((((((((((((((((((((((((((((((((((((((((1`, `x_`, `|`, `\log_`, `2^{2^{2^{2^{2^{9}}}}}`} {
		f.Add(s, "1")
	}
	f.Fuzz(func(t *testing.T, pred, gold string) {
		// equivalent, not EquivalentWhy: no recover hides a panic here.
		ok, why := equivalent(pred, gold)
		if ok && why == "" {
			t.Errorf("no reason for %q vs %q", pred, gold)
		}
		Extract(pred)
		if n := Normalize(pred); n != "" && !Equivalent(pred, pred) {
			// Self-equality holds by string comparison.
			t.Errorf("%q is not equivalent to itself", pred)
		}
	})
}
