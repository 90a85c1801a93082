package mathans

import (
	"regexp"
	"strings"
)

// latexReplacer does the fixed substitutions of Hendrycks' strip_string and
// minerva's SUBSTITUTIONS. The longer \circ forms come first: a Replacer
// tries its arguments in order at each position.
var latexReplacer = strings.NewReplacer(
	"\n", " ", "\t", " ", "\r", " ",
	// "\\" (a matrix row break) maps to itself so that "\\ " is not
	// read as the control space "\ ".
	"\\\\", "\\\\",
	"\\!", "", "\\,", " ", "\\;", " ", "\\:", " ", "\\ ", " ", "~", " ",
	"\\quad", " ", "\\qquad", " ",
	"\\dfrac", "\\frac", "\\tfrac", "\\frac", "\\cfrac", "\\frac",
	"\\displaystyle", "", "\\textstyle", "",
	"^{\\circ}", "", "^\\circ", "", "^{°}", "", "^°", "", "°", "",
	"\\$", "", "$", "", "\\%", "", "%", "",
	"\\mbox", "\\text", "\\textrm", "\\text", "\\textbf", "\\text", "\\textit", "\\text",
	"\\mathrm", "\\text", "\\mathbf", "\\text", "\\textnormal", "\\text", "\\textsf", "\\text",
	"\\operatorname", "\\text",
	"{,}", ",",
	"\\lbrace", "\\{", "\\rbrace", "\\}", "\\lvert", "|", "\\rvert", "|",
	"\\leqslant", "\\le", "\\geqslant", "\\ge", "\\leq", "\\le", "\\geq", "\\ge", "\\neq", "\\ne",
	"\\lt", "<", "\\gt", ">", "<=", "\\le ", ">=", "\\ge ", "!=", "\\ne ", "≤", "\\le ", "≥", "\\ge ", "≠", "\\ne ",
	"\\infinity", "\\infty", "**", "^",
	"\\varnothing", "\\emptyset", "\\ldots", "", "\\dots", "", "\\cdots", "",
	"−", "-", "×", "\\times", "·", "\\cdot", "π", "\\pi", "√", "\\sqrt", "∞", "\\infty",
)

// unitWords are the trailing unit words graders drop (minerva's
// REMOVED_EXPRESSIONS and the units MATH solutions write in \text{…}).
var unitWords = map[string]bool{
	"cm": true, "mm": true, "m": true, "km": true, "meter": true, "meters": true,
	"inch": true, "inches": true, "in": true, "ft": true, "foot": true, "feet": true,
	"yard": true, "yards": true, "mile": true, "miles": true, "mph": true,
	"unit": true, "units": true, "sq": true, "square": true, "cubic": true,
	"degree": true, "degrees": true, "deg": true, "radian": true, "radians": true,
	"cent": true, "cents": true, "dollar": true, "dollars": true,
	"second": true, "seconds": true, "minute": true, "minutes": true, "hour": true,
	"hours": true, "day": true, "days": true, "week": true, "weeks": true,
	"year": true, "years": true, "pound": true, "pounds": true, "lb": true, "lbs": true,
	"ounce": true, "ounces": true, "gallon": true, "gallons": true, "liter": true, "liters": true,
	"gm": true, "g": true, "kg": true, "points": true, "point": true, "ways": true, "pct": true, "percentage": true,
	"students": true, "people": true, "digits": true, "edges": true, "meals": true,
	"integers": true, "multiples": true, "times": true, "percent": true, "th": true,
}

var (
	thousandsRe = regexp.MustCompile(`^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$`)
	slashFracRe = regexp.MustCompile(`^(-?\d+)/(\d+)$`)
	choiceRe    = regexp.MustCompile(`^\(([A-J])\)$`)
	inPrefixRe  = regexp.MustCompile(`^[A-Za-z]\s*\\in\s*`)
	leadDotRe   = regexp.MustCompile(`(^|[^0-9A-Za-z}\\)])\.([0-9])`)
	// assignRe is a left side that names one variable: "x", "k", "x_1",
	// "a_{n}", "\theta" (Hendrycks drops any left side of two characters).
	assignRe  = regexp.MustCompile(`^(?:[A-Za-z]{1,2}|\\[A-Za-z]+)(?:_\{?[A-Za-z0-9]+\}?)?$`)
	trailUnit = regexp.MustCompile(`\s*\b([A-Za-z]+)(?:\^\{?[23]\}?)?\.?\s*$`)
	// tupleAssignRe is a left side that names a tuple of unknowns: "(p,q)".
	tupleAssignRe = regexp.MustCompile(`^\((?:[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?\s*,\s*)+[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?\)$`)
	// glueCommaRe is a comma TeX keeps tight to the next digit ("10,\!080",
	// "14{,}916", "11,\! 111"): a thousands separator, never a list.
	glueCommaRe = regexp.MustCompile(`(?:,\\!|\{,\s*\})\s*`)
	// andRe is "and" joining the last answer of a list: "19, 46, and 82".
	andRe = regexp.MustCompile(`(?:,\s*)*\band\s+`)
	// plainFuncRe is a function name written without its backslash before
	// a parenthesis, and "pi" alone: plain-text math ("sqrt(3)", "pi/2").
	plainFuncRe = regexp.MustCompile(`(^|[^A-Za-z\\])(sqrt|sin|cos|tan|cot|sec|csc|ln|log|exp|arcsin|arccos|arctan)\s*\(`)
	plainPiRe   = regexp.MustCompile(`(^|[^A-Za-z\\])pi($|[^A-Za-z])`)
)

// Normalize rewrites an answer into a canonical string: the Hendrycks MATH
// strip_string / minerva normalize_final_answer rules plus a few more
// (see the package comment). Equal results mean equal answers; unequal ones
// may still be Equivalent.
func Normalize(s string) string {
	return stripAssign(normalizeKeepLHS(s))
}

// stripAssign drops a left side naming the unknown(s) of a one-equation
// answer: "k = 4" is 4, "(p,q) = (3,2)" is (3,2) (Hendrycks drops any
// left side of two characters).
func stripAssign(s string) string {
	if strings.Count(s, "=") == 1 {
		i := strings.IndexByte(s, '=')
		if lhs := strings.TrimSpace(s[:i]); assignRe.MatchString(lhs) || tupleAssignRe.MatchString(lhs) {
			s = strings.TrimSpace(s[i+1:])
		}
	}
	return s
}

// normalizeKeepLHS is Normalize but for the left side of an equation,
// which Equivalent needs to compare two equations as equations.
func normalizeKeepLHS(s string) string {
	s = stripDelims(strings.TrimSpace(s))
	s = unwrapCmd(s, "\\boxed")
	s = unwrapCmd(s, "\\fbox")
	s = glueCommaRe.ReplaceAllString(s, "{,}")
	s = latexReplacer.Replace(s)
	// A semicolon left after \; became a space separates answers.
	s = strings.ReplaceAll(s, ";", ",")
	s = removeCmd(s, "\\left")
	s = removeCmd(s, "\\right")
	for _, c := range []string{"\\bigl", "\\bigr", "\\Bigl", "\\Bigr", "\\big", "\\Big"} {
		s = removeCmd(s, c)
	}
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, ".")
	s = texts(s)
	s = dropTrailingUnits(s)
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, ". ")
	s = inPrefixRe.ReplaceAllString(s, "")
	if strings.Contains(s, "and") {
		if t := andRe.ReplaceAllString(s, ","); !strings.HasPrefix(t, ",") && !isText(t) {
			s = t
		}
	}
	s = strings.ReplaceAll(s, "{,}", ",")
	// Before spaces go: "32, 349" is two answers, "32,349" one number.
	if thousandsRe.MatchString(s) {
		s = strings.ReplaceAll(s, ",", "")
	}
	s = plainFuncRe.ReplaceAllString(s, "$1\\$2(")
	s = plainPiRe.ReplaceAllString(s, "$1\\pi $2")
	s = squeezeSpaces(s)
	s = fixArgs(s)
	s = unbraceScripts(s)
	for strings.Contains(s, ",,") {
		s = strings.ReplaceAll(s, ",,", ",")
	}
	if m := slashFracRe.FindStringSubmatch(s); m != nil {
		s = "\\frac{" + m[1] + "}{" + m[2] + "}"
	}
	if m := choiceRe.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	s = leadDotRe.ReplaceAllString(s, "${1}0.$2")
	return s
}

// stripDelims removes math delimiters around the whole answer: $…$, $$…$$,
// \(…\), \[…\].
func stripDelims(s string) string {
	for {
		t := s
		switch {
		case len(s) >= 4 && strings.HasPrefix(s, "$$") && strings.HasSuffix(s, "$$"):
			s = s[2 : len(s)-2]
		case len(s) >= 2 && s[0] == '$' && s[len(s)-1] == '$' && !strings.HasSuffix(s, "\\$"):
			s = s[1 : len(s)-1]
		case len(s) >= 4 && strings.HasPrefix(s, "\\(") && strings.HasSuffix(s, "\\)"):
			s = s[2 : len(s)-2]
		case len(s) >= 4 && strings.HasPrefix(s, "\\[") && strings.HasSuffix(s, "\\]"):
			s = s[2 : len(s)-2]
		}
		s = strings.TrimSpace(s)
		if s == t {
			return s
		}
	}
}

// unwrapCmd returns the argument of cmd when the whole of s is cmd{…}.
func unwrapCmd(s, cmd string) string {
	for strings.HasPrefix(s, cmd+"{") {
		end := matchBrace(s, len(cmd))
		if end != len(s)-1 {
			return s
		}
		s = strings.TrimSpace(s[len(cmd)+1 : end])
	}
	return s
}

// matchBrace returns the index of the '}' closing the '{' at s[open],
// skipping escaped \{ and \}, or -1.
func matchBrace(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // \{ \} \\ do not group
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// removeCmd deletes the control word cmd where it is not the start of a
// longer one (\left but not \leftarrow).
func removeCmd(s, cmd string) string {
	if !strings.Contains(s, cmd) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, cmd)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(cmd)
		b.WriteString(s[:i])
		if j < len(s) && isLetter(s[j]) {
			b.WriteString(cmd)
		}
		s = s[j:]
	}
}

// texts unwraps \text{…}: a unit after an answer ("5 \text{ cm}^2",
// "\frac{270}7\text{ degrees}") is dropped with its power, "and"/"or"
// between answers becomes a comma, anything else keeps its content.
func texts(s string) string {
	for n := 0; n < 64; n++ {
		i := strings.Index(s, "\\text{")
		if i < 0 {
			return s
		}
		open := i + len("\\text")
		end := matchBrace(s, open)
		if end < 0 {
			return s
		}
		inner := s[open+1 : end]
		word := strings.TrimSpace(inner)
		before := strings.TrimSpace(s[:i])
		rest := s[end+1:]
		switch {
		case before != "" && (word == "and" || word == "or"):
			s = s[:i] + "," + rest
		case before != "" && isUnit(word, inner):
			rest = dropPower(rest)
			s = s[:i] + rest
		default:
			s = s[:i] + inner + rest
		}
	}
	return s
}

// isUnit reports whether the \text argument is a unit: a known unit word,
// or (Hendrycks' remove_right_units) words after a leading space.
func isUnit(word, inner string) bool {
	lw := strings.ToLower(word)
	if unitWords[lw] {
		return true
	}
	if strings.HasPrefix(inner, " ") && lw != "" {
		for i := 0; i < len(lw); i++ {
			if !isLetter(lw[i]) && lw[i] != ' ' {
				return false
			}
		}
		return true
	}
	return false
}

// dropPower removes a leading ^2, ^3, ^{2}, ^{3} (square units).
func dropPower(s string) string {
	for _, p := range []string{"^2", "^3", "^{2}", "^{3}"} {
		if strings.HasPrefix(s, p) {
			return s[len(p):]
		}
	}
	return s
}

// dropTrailingUnits removes unit words at the end of an answer that has
// something before them ending in a digit, a brace or a parenthesis.
func dropTrailingUnits(s string) string {
	for n := 0; n < 4; n++ {
		m := trailUnit.FindStringSubmatchIndex(s)
		if m == nil || !unitWords[strings.ToLower(s[m[2]:m[3]])] {
			return s
		}
		before := strings.TrimSpace(s[:m[0]])
		if m[2] > 0 && s[m[2]-1] == '\\' || before == "" {
			return s
		}
		c := before[len(before)-1]
		// "5 m" drops the unit, "2m" (a product) and "x in" do not.
		if !(isDigit(c) || c == '}' || c == ')') || m[0] == m[2] {
			return s
		}
		s = before
	}
	return s
}

// squeezeSpaces deletes spaces, keeping one where it separates a control
// word from a following letter ("\cot x" must not become "\cotx").
func squeezeSpaces(s string) string {
	if !strings.Contains(s, " ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	inCmd := false // the bytes written last are a control word
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' {
			j := i
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if inCmd && j < len(s) && isLetter(s[j]) {
				b.WriteByte(' ')
			}
			i = j - 1
			inCmd = false
			continue
		}
		b.WriteByte(c)
		switch {
		case c == '\\':
			inCmd = true
		case !isLetter(c):
			inCmd = false
		}
	}
	return b.String()
}

// fixArgs braces the arguments of \frac and \sqrt written without braces:
// \frac12 → \frac{1}{2}, \frac9{19}, \frac{270}7, \frac\pi2, \sqrt2 → \sqrt{2}.
func fixArgs(s string) string {
	if !strings.Contains(s, "\\frac") && !strings.Contains(s, "\\sqrt") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "\\frac") && (i+5 == len(s) || !isLetter(s[i+5])):
			b.WriteString("\\frac")
			i += 5
			for k := 0; k < 2; k++ {
				arg, n := texArg(s[i:])
				if n == 0 {
					break
				}
				b.WriteString("{" + fixArgs(arg) + "}")
				i += n
			}
		case strings.HasPrefix(s[i:], "\\sqrt") && (i+5 == len(s) || !isLetter(s[i+5])):
			b.WriteString("\\sqrt")
			i += 5
			if i < len(s) && s[i] == '[' {
				if j := strings.IndexByte(s[i:], ']'); j > 0 {
					b.WriteString(s[i : i+j+1])
					i += j + 1
				}
			}
			if arg, n := texArg(s[i:]); n > 0 {
				b.WriteString("{" + fixArgs(arg) + "}")
				i += n
			}
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// texArg reads one TeX argument at the start of s: a braced group (its
// content), a control word, or one character; n is the bytes consumed.
func texArg(s string) (arg string, n int) {
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i >= len(s) {
		return "", 0
	}
	switch c := s[i]; {
	case c == '{':
		end := matchBrace(s, i)
		if end < 0 {
			return "", 0
		}
		return s[i+1 : end], end + 1
	case c == '\\':
		j := i + 1
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		if j == i+1 {
			return "", 0
		}
		return s[i:j], j
	case c == '}' || c == '^' || c == '_' || c == '(' || c == ')':
		return "", 0
	default:
		return s[i : i+1], i + 1
	}
}

// unbraceScripts writes single-character sub- and superscripts without
// braces: 4210_{5} → 4210_5, x^{2} → x^2.
func unbraceScripts(s string) string {
	if !strings.Contains(s, "_{") && !strings.Contains(s, "^{") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if (s[i] == '_' || s[i] == '^') && i+3 < len(s)+0 && s[i+1] == '{' && s[i+3] == '}' && s[i+2] != '\\' {
			b.WriteByte(s[i])
			b.WriteByte(s[i+2])
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
