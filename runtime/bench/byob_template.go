package bench

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Template is a BYOB prompt template: the subset of Python's str.format
// that NeMo Evaluator's BYOB prompts use (template.format(**row)). "{name}"
// is replaced by the record's field name, "{{" and "}}" are literal braces.
// What str.format would also read — positional fields ("{}", "{0}"),
// attributes and indexes ("{a.b}", "{a[0]}"), conversions ("{a!r}") and
// format specs ("{a:>8}") — is refused when the template is parsed, so a
// template never renders differently here than the recipe's author expects.
type Template struct {
	text  string
	parts []tplPart
}

type tplPart struct {
	lit   string
	field string // "" for a literal
}

// ParseTemplate parses text; its errors say what is wrong and where (the
// character offset, counted from 1).
func ParseTemplate(text string) (*Template, error) {
	t := &Template{text: text}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, tplPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '{' && i+1 < len(text) && text[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(text) && text[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '}':
			return nil, fmt.Errorf("single '}' at character %d (write '}}' for a literal brace)", charAt(text, i))
		case c == '{':
			end := strings.IndexByte(text[i+1:], '}')
			if end < 0 {
				return nil, fmt.Errorf("'{' at character %d is not closed (write '{{' for a literal brace)", charAt(text, i))
			}
			name := text[i+1 : i+1+end]
			if err := checkFieldName(name); err != nil {
				return nil, fmt.Errorf("{%s} at character %d: %w", name, charAt(text, i), err)
			}
			flush()
			t.parts = append(t.parts, tplPart{field: name})
			i += end + 1
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return t, nil
}

// charAt is the 1-based character (rune) position of byte offset i.
func charAt(text string, i int) int { return utf8.RuneCountInString(text[:i]) + 1 }

// checkFieldName refuses the str.format features Template does not do.
func checkFieldName(name string) error {
	switch {
	case name == "" || strings.Trim(name, "0123456789") == "":
		return fmt.Errorf("positional fields take str.format's arguments, which a BYOB prompt has none of: name a dataset field")
	case strings.ContainsAny(name, "{"):
		return fmt.Errorf("a field name cannot hold '{'")
	case strings.ContainsAny(name, ".[!:"):
		return fmt.Errorf("not supported yet: attributes, indexes, conversions and format specs in a field ({name} only)")
	}
	return nil
}

// Text is the template as written.
func (t *Template) Text() string { return t.text }

// Fields lists the fields the template reads, each once, in order.
func (t *Template) Fields() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range t.parts {
		if p.field != "" && !seen[p.field] {
			seen[p.field] = true
			out = append(out, p.field)
		}
	}
	return out
}

// Render fills the template from rec. Values render as Python's str()
// does for scalars (text); lists and objects as JSON.
func (t *Template) Render(rec map[string]any) (string, error) {
	if missing := MissingFields(t.Fields(), rec); missing != nil {
		return "", missing
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.field == "" {
			b.WriteString(p.lit)
			continue
		}
		b.WriteString(fieldText(rec[p.field]))
	}
	return b.String(), nil
}

// fieldText is a record value as a prompt shows it.
func fieldText(v any) string {
	switch v.(type) {
	case []any, map[string]any, []string:
		return string(canonicalJSON(v))
	}
	return text(v)
}

// FieldsError says which fields a record lacks, and which it has.
type FieldsError struct {
	Missing []string
	Columns []string
}

func (e *FieldsError) Error() string {
	noun := "field"
	if len(e.Missing) > 1 {
		noun = "fields"
	}
	quoted := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		quoted[i] = "{" + m + "}"
	}
	return fmt.Sprintf("%s %s not a column of the dataset (its columns: %s)", noun, strings.Join(quoted, ", ")+isAre(len(e.Missing)), strings.Join(e.Columns, ", "))
}

func isAre(n int) string {
	if n > 1 {
		return " are"
	}
	return " is"
}

// MissingFields returns a *FieldsError naming the fields rec lacks, or nil
// (an untyped nil, so that it compares equal to a nil error).
func MissingFields(fields []string, rec map[string]any) error {
	var missing []string
	for _, f := range fields {
		if _, ok := rec[f]; !ok {
			missing = append(missing, f)
		}
	}
	if missing == nil {
		return nil
	}
	cols := make([]string, 0, len(rec))
	for k := range rec {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	return &FieldsError{Missing: missing, Columns: cols}
}
