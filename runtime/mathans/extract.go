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
// without braces), "answer_line" (the last final-answer line), or "" and
// "" when there is neither. Math delimiters ($…$, \(…\)) around the answer
// are removed.
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
	return "", ""
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
