package harbor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A small TOML reader, for task.toml. A TOML library would cost nel-run
// about 190 kB (pelletier/go-toml/v2, measured), more than its size budget
// has left, and task.toml uses a small part of the language: tables,
// arrays of tables, strings, numbers, booleans, arrays and inline tables.
// What it does not read (dates and times) is refused with its line, never
// skipped. Values decode as string, int64, float64, bool, []any and
// map[string]any.

// parseTOML reads a TOML document into nested maps.
func parseTOML(src string) (map[string]any, error) {
	p := &tomlParser{src: src, line: 1}
	root := map[string]any{}
	cur := root
	// defined holds the tables a header opened, so that a second [x]
	// header is refused as TOML refuses it.
	defined := map[string]bool{}
	for {
		p.skipBlank(true)
		if p.eof() {
			return root, nil
		}
		var err error
		if p.peek() == '[' {
			cur, err = p.header(root, defined)
		} else {
			err = p.keyValue(cur)
		}
		if err != nil {
			return nil, err
		}
		p.skipBlank(false)
		if !p.eof() && p.peek() != '\n' {
			return nil, p.errf("expected the end of the line, found %q", p.rest(12))
		}
	}
}

type tomlParser struct {
	src  string
	pos  int
	line int
}

func (p *tomlParser) eof() bool  { return p.pos >= len(p.src) }
func (p *tomlParser) peek() byte { return p.src[p.pos] }

func (p *tomlParser) rest(n int) string {
	r := p.src[p.pos:]
	if i := strings.IndexByte(r, '\n'); i >= 0 {
		r = r[:i]
	}
	if len(r) > n {
		r = r[:n] + "…"
	}
	return r
}

func (p *tomlParser) errf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// skipBlank skips spaces, tabs and comments, and newlines when nl is set.
func (p *tomlParser) skipBlank(nl bool) {
	for !p.eof() {
		switch c := p.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n' && nl:
			p.pos++
			p.line++
		case c == '#':
			for !p.eof() && p.peek() != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// header reads a [table] or [[array.of.tables]] header and returns the
// table that the following keys go into.
func (p *tomlParser) header(root map[string]any, defined map[string]bool) (map[string]any, error) {
	array := strings.HasPrefix(p.src[p.pos:], "[[")
	p.pos++
	if array {
		p.pos++
	}
	p.skipBlank(false)
	key, err := p.key()
	if err != nil {
		return nil, err
	}
	p.skipBlank(false)
	closing := "]"
	if array {
		closing = "]]"
	}
	if !strings.HasPrefix(p.src[p.pos:], closing) {
		return nil, p.errf("expected %s after the table name, found %q", closing, p.rest(12))
	}
	p.pos += len(closing)
	parent, err := p.walk(root, key[:len(key)-1])
	if err != nil {
		return nil, err
	}
	last := key[len(key)-1]
	name := strings.Join(key, ".")
	if array {
		list, ok := parent[last].([]any)
		if _, exists := parent[last]; exists && !ok {
			return nil, p.errf("%s is already a value, not an array of tables", name)
		}
		t := map[string]any{}
		parent[last] = append(list, t)
		return t, nil
	}
	if defined[name] {
		return nil, p.errf("table [%s] is defined twice", name)
	}
	defined[name] = true
	t, err := p.walk(parent, []string{last})
	return t, err
}

// walk returns the table at path under t, creating the tables missing; an
// array of tables stands for its last element.
func (p *tomlParser) walk(t map[string]any, path []string) (map[string]any, error) {
	for _, k := range path {
		switch v := t[k].(type) {
		case nil:
			n := map[string]any{}
			t[k] = n
			t = n
		case map[string]any:
			t = v
		case []any:
			last, ok := v[len(v)-1].(map[string]any)
			if !ok {
				return nil, p.errf("%s is an array of values, not a table", k)
			}
			t = last
		default:
			return nil, p.errf("%s is already a value, not a table", k)
		}
	}
	return t, nil
}

// keyValue reads key = value into t.
func (p *tomlParser) keyValue(t map[string]any) error {
	key, err := p.key()
	if err != nil {
		return err
	}
	p.skipBlank(false)
	if p.eof() || p.peek() != '=' {
		return p.errf("expected = after key %s", strings.Join(key, "."))
	}
	p.pos++
	p.skipBlank(false)
	v, err := p.value()
	if err != nil {
		return err
	}
	parent, err := p.walk(t, key[:len(key)-1])
	if err != nil {
		return err
	}
	last := key[len(key)-1]
	if _, dup := parent[last]; dup {
		return p.errf("key %s is defined twice", strings.Join(key, "."))
	}
	parent[last] = v
	return nil
}

// key reads a dotted key of bare and quoted parts.
func (p *tomlParser) key() ([]string, error) {
	var parts []string
	for {
		p.skipBlank(false)
		if p.eof() {
			return nil, p.errf("expected a key")
		}
		switch c := p.peek(); {
		case c == '"' || c == '\'':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			parts = append(parts, s)
		default:
			start := p.pos
			for !p.eof() && isBare(p.peek()) {
				p.pos++
			}
			if p.pos == start {
				return nil, p.errf("expected a key, found %q", p.rest(12))
			}
			parts = append(parts, p.src[start:p.pos])
		}
		p.skipBlank(false)
		if p.eof() || p.peek() != '.' {
			return parts, nil
		}
		p.pos++
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value reads one value.
func (p *tomlParser) value() (any, error) {
	if p.eof() {
		return nil, p.errf("expected a value")
	}
	switch c := p.peek(); c {
	case '"', '\'':
		return p.str()
	case '[':
		return p.array()
	case '{':
		return p.inlineTable()
	}
	start := p.pos
	for !p.eof() && (isBare(p.peek()) || strings.IndexByte("+.:", p.peek()) >= 0) {
		p.pos++
	}
	return p.scalar(p.src[start:p.pos])
}

// scalar reads a boolean or a number.
func (p *tomlParser) scalar(tok string) (any, error) {
	switch tok {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan", "+nan", "-nan":
		return math.NaN(), nil
	case "":
		return nil, p.errf("expected a value, found %q", p.rest(12))
	}
	if strings.Contains(tok, ":") || len(tok) >= 5 && isDigits(tok[:4]) && tok[4] == '-' {
		return nil, p.errf("dates and times are not read in task.toml (found %s)", tok)
	}
	clean := strings.ReplaceAll(tok, "_", "")
	if len(clean) > 1 && clean[0] == '0' && strings.ContainsAny(clean[1:2], "xob") {
		if n, err := strconv.ParseInt(clean, 0, 64); err == nil {
			return n, nil
		}
	} else if !strings.ContainsAny(clean, ".eE") {
		if n, err := strconv.ParseInt(clean, 10, 64); err == nil {
			return n, nil
		}
	} else if f, err := strconv.ParseFloat(clean, 64); err == nil {
		return f, nil
	}
	return nil, p.errf("expected a value, found %q", tok)
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// array reads [v, v, …], over lines, a trailing comma allowed.
func (p *tomlParser) array() ([]any, error) {
	p.pos++
	out := []any{}
	for {
		p.skipBlank(true)
		if p.eof() {
			return nil, p.errf("the array is not closed")
		}
		if p.peek() == ']' {
			p.pos++
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipBlank(true)
		switch {
		case p.eof():
			return nil, p.errf("the array is not closed")
		case p.peek() == ',':
			p.pos++
		case p.peek() != ']':
			return nil, p.errf("expected , or ] in an array, found %q", p.rest(12))
		}
	}
}

// inlineTable reads {k = v, …}.
func (p *tomlParser) inlineTable() (map[string]any, error) {
	p.pos++
	t := map[string]any{}
	p.skipBlank(false)
	if !p.eof() && p.peek() == '}' {
		p.pos++
		return t, nil
	}
	for {
		if err := p.keyValue(t); err != nil {
			return nil, err
		}
		p.skipBlank(false)
		if p.eof() {
			return nil, p.errf("the inline table is not closed")
		}
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return t, nil
		default:
			return nil, p.errf("expected , or } in an inline table, found %q", p.rest(12))
		}
	}
}

// str reads a basic or literal string, single- or multi-line.
func (p *tomlParser) str() (string, error) {
	q := p.src[p.pos : p.pos+1]
	if strings.HasPrefix(p.src[p.pos:], q+q+q) {
		return p.multiline(q + q + q)
	}
	p.pos++
	var b strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return "", p.errf("the string is not closed on its line")
		}
		c := p.peek()
		switch {
		case c == q[0]:
			p.pos++
			return b.String(), nil
		case c == '\\' && q == `"`:
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// multiline reads a """ or ”' string: a newline right after the opening
// quotes is dropped, and in a basic one a backslash at the end of a line
// drops the line break and the blank that follows.
func (p *tomlParser) multiline(delim string) (string, error) {
	p.pos += 3
	if strings.HasPrefix(p.src[p.pos:], "\r\n") {
		p.pos += 2
		p.line++
	} else if !p.eof() && p.peek() == '\n' {
		p.pos++
		p.line++
	}
	var b strings.Builder
	for {
		if p.eof() {
			return "", p.errf("the multi-line string is not closed")
		}
		if strings.HasPrefix(p.src[p.pos:], delim) {
			p.pos += 3
			// Up to two more quotes belong to the string ("""a"""" is a").
			for i := 0; i < 2 && !p.eof() && p.peek() == delim[0]; i++ {
				b.WriteByte(delim[0])
				p.pos++
			}
			return b.String(), nil
		}
		c := p.peek()
		switch {
		case c == '\\' && delim == `"""` && p.lineEndingBackslash():
			p.pos++
			p.skipBlank(true)
		case c == '\\' && delim == `"""`:
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			if c == '\n' {
				p.line++
			}
			b.WriteByte(c)
			p.pos++
		}
	}
}

// lineEndingBackslash says whether the backslash at pos ends its line
// (only blanks after it).
func (p *tomlParser) lineEndingBackslash() bool {
	r := p.src[p.pos+1:]
	i := strings.IndexByte(r, '\n')
	return i >= 0 && strings.TrimRight(r[:i], " \t\r") == ""
}

// escape reads one backslash escape of a basic string into b.
func (p *tomlParser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.src) {
		return p.errf("a backslash ends the file")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	simple := map[byte]string{'b': "\b", 't': "\t", 'n': "\n", 'f': "\f", 'r': "\r", 'e': "\x1b", '"': `"`, '\\': `\`}
	if s, ok := simple[c]; ok {
		b.WriteString(s)
		return nil
	}
	n := map[byte]int{'u': 4, 'U': 8}[c]
	if n == 0 || p.pos+n > len(p.src) {
		return p.errf("unknown escape \\%c", c)
	}
	r, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
	if err != nil || !utf8.ValidRune(rune(r)) {
		return p.errf("bad escape \\%c%s", c, p.src[p.pos:p.pos+n])
	}
	p.pos += n
	b.WriteRune(rune(r))
	return nil
}
