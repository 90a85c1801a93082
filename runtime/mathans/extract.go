package mathans

import (
	"regexp"
	"strings"
)

// answerLineRe finds final-answer lines: "Answer: …", "**Final Answer:** …",
// "The final answer is …", "the answer is …". The rest of the line is the
// answer; the last match in the response wins.
var answerLineRe = regexp.MustCompile(`(?im)\banswer[*_]*\s*(?:is\b[*_]*\s*:?|[:：])[*_]*[ \t]*([^\n]*)$`)

// hopeRe is the Minerva/lm-eval few-shot sign-off.
var hopeRe = regexp.MustCompile(`(?i)[.\s]*I hope it is correct\.?\s*$`)

// Extract returns the final answer of a response and how it was found:
// "boxed" (the last \boxed{…} or \fbox{…}, nested braces; "\boxed 5"
// without braces), "answer_line" (the last final-answer line), "math" (the
// last math segment, $…$, $$…$$, \(…\) or \[…\], of a response that has
// neither, as Math-Verify reads one), or "" and "" when there is none.
// Math delimiters ($…$, \(…\)) around the answer are removed.
func Extract(response string) (answer, how string) {
	if a, ok := lastBoxed(response); ok {
		return cleanAnswer(a), "boxed"
	}
	ms := answerLineRe.FindAllStringSubmatch(response, -1)
	if len(ms) > 0 {
		a := ms[len(ms)-1][1]
		// "Final Answer: The final answer is $5$. I hope it is correct."
		for range 3 {
			m := answerLineRe.FindStringSubmatch(a)
			if m == nil {
				break
			}
			a = m[1]
		}
		if a = cleanAnswer(a); a != "" {
			return a, "answer_line"
		}
	}
	if a, ok := lastMath(response); ok {
		return cleanAnswer(a), "math"
	}
	return "", ""
}

// lastMath returns the content of the last non-empty math segment of s:
// $…$ or \(…\) on one line (a lone $ is a dollar sign), $$…$$ or \[…\]
// over any number of lines; escaped \$ is not a delimiter.
func lastMath(s string) (string, bool) {
	last, found := "", false
	keep := func(seg string) {
		if strings.TrimSpace(seg) != "" {
			last, found = seg, true
		}
	}
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "\\(") || strings.HasPrefix(s[i:], "\\["):
			end := "\\)"
			if s[i+1] == '[' {
				end = "\\]"
			}
			j := strings.Index(s[i+2:], end)
			if j < 0 || end == "\\)" && strings.Contains(s[i+2:i+2+j], "\n") {
				i++
				continue
			}
			keep(s[i+2 : i+2+j])
			i += 2 + j + 1
		case s[i] == '\\':
			i++ // \$ and other escapes
		case strings.HasPrefix(s[i:], "$$"):
			j := strings.Index(s[i+2:], "$$")
			if j < 0 {
				return last, found
			}
			keep(s[i+2 : i+2+j])
			i += 2 + j + 1
		case s[i] == '$':
			j := closingDollar(s, i+1)
			if j < 0 {
				continue // a dollar sign
			}
			keep(s[i+1 : j])
			i = j
		}
	}
	return last, found
}

// closingDollar returns the index of the unescaped $ that closes an
// inline segment opened before s[from], or -1 when the line ends first.
func closingDollar(s string, from int) int {
	for j := from; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '\n':
			return -1
		case '$':
			return j
		}
	}
	return -1
}

// lastBoxed returns the argument of the last complete \boxed or \fbox.
func lastBoxed(s string) (string, bool) {
	for end := len(s); end > 0; {
		i, name := lastOf(s[:end], "\\boxed", "\\fbox")
		if i < 0 {
			return "", false
		}
		j := i + len(name)
		switch {
		case j < len(s) && s[j] == '{':
			if k := matchBrace(s, j); k > 0 {
				return s[j+1 : k], true
			}
		case j < len(s) && s[j] == ' ':
			// Hendrycks: "\boxed 5$" is the text up to the next "$".
			a := strings.TrimSpace(s[j:])
			if k := strings.IndexByte(a, '$'); k >= 0 {
				a = a[:k]
			}
			if k := strings.IndexByte(a, '\n'); k >= 0 {
				a = a[:k]
			}
			if a != "" {
				return a, true
			}
		}
		end = i
	}
	return "", false
}

// lastOf returns the last index of any of subs in s and which one.
func lastOf(s string, subs ...string) (int, string) {
	best, name := -1, ""
	for _, sub := range subs {
		if i := strings.LastIndex(s, sub); i > best {
			best, name = i, sub
		}
	}
	return best, name
}

// cleanAnswer trims an extracted answer: markdown emphasis, the "I hope it
// is correct" sign-off, a math segment inside prose, delimiters, a final
// period.
func cleanAnswer(a string) string {
	a = strings.TrimSpace(a)
	a = hopeRe.ReplaceAllString(a, "")
	a = strings.Trim(a, "*_ \t")
	if seg, ok := mathSegment(a); ok {
		a = seg
	}
	a = stripDelims(a)
	a = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(a), "."))
	return unwrapCmd(a, "\\boxed")
}

// mathSegment returns the content of the first $…$ (or \(…\)) segment of a
// when a has one and is not wholly that segment's content already; escaped
// \$ are not delimiters.
func mathSegment(a string) (string, bool) {
	if i := strings.Index(a, "\\("); i >= 0 {
		if j := strings.Index(a[i:], "\\)"); j > 0 {
			return a[i+2 : i+j], true
		}
	}
	open := -1
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case '\\':
			i++
		case '$':
			if open < 0 {
				open = i
				for i+1 < len(a) && a[i+1] == '$' { // $$
					i++
				}
				open = i
				continue
			}
			return a[open+1 : i], true
		}
	}
	return "", false
}
