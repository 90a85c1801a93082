package dockerdef

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// SingularityCE's definition-file parser reads the file line by line and
// starts a new section at any line whose first word starts with %, however
// it is indented: a %setup section runs on the build's host. So nothing of
// the Dockerfile or of its build context's file names may make a line, or
// a line that starts with %, in the text nel writes. The converter refuses
// such a value at its instruction (bodyLine), and Text checks the whole
// text again (checkText), so that whatever a later change forgets, the
// parser sees only the headers and sections nel writes.

// bodyIndent is how Text indents a section's lines.
const bodyIndent = "    "

// bodyLine checks l, a line of a section's body before its indentation:
// no control character (a tab aside), and no % to start it.
func bodyLine(l string) error {
	for i := 0; i < len(l); i++ {
		if c := l[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return fmt.Errorf("a control character (%q) in %s: nel writes nothing of the kind into the definition file, whose parser reads it line by line", c, clip(fmt.Sprintf("%q", l)))
		}
	}
	if strings.HasPrefix(strings.TrimLeft(l, " \t"), "%") {
		return fmt.Errorf("%s would be a line of the definition file starting with %%, which its parser reads as a new section", clip(fmt.Sprintf("%q", l)))
	}
	return nil
}

// Text is the definition file that builds d on the local image base (a
// SIF), with the build context at context: plain names (%files and From
// take no quoting), as the build's working folder sees them. An error
// says the text would hold a line other than nel's headers, section names
// and indented body lines.
func (d *Def) Text(base, context string) (string, error) {
	for _, n := range []string{base, context} {
		if n == "" || shellquote.Quote(n) != n {
			return "", fmt.Errorf("definition file: %q is not a plain file name", n)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Bootstrap: localimage\nFrom: %s\n", base)
	if d.Copies {
		fmt.Fprintf(&b, "\n%%files\n%s%s %s\n", bodyIndent, context, Staging)
	}
	section := func(name string, lines []string) error {
		b.WriteString("\n" + name + "\n")
		for _, l := range lines {
			if err := bodyLine(l); err != nil {
				return fmt.Errorf("definition file, %s: %w", name, err)
			}
			b.WriteString(bodyIndent + l + "\n")
		}
		return nil
	}
	if len(d.Env) > 0 {
		if err := section("%environment", d.Env); err != nil {
			return "", err
		}
	}
	if err := section("%post", d.Post); err != nil {
		return "", err
	}
	if err := checkText(b.String()); err != nil {
		return "", err
	}
	return b.String(), nil
}

// checkText: every line of text is a header Text writes, a section
// name Text writes (once, in Text's order, after an empty line), or an
// indented body line that bodyLine accepts.
func checkText(text string) error {
	sections := []string{"%files", "%environment", "%post"}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		switch {
		case i == 0:
			if l == "Bootstrap: localimage" {
				continue
			}
		case i == 1:
			if s, ok := strings.CutPrefix(l, "From: "); ok && s != "" && shellquote.Quote(s) == s {
				continue
			}
		case l == "" && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "%"):
			continue
		case strings.HasPrefix(l, "%"):
			k := slices.Index(sections, l)
			if k >= 0 && lines[i-1] == "" {
				sections = sections[k+1:]
				continue
			}
		case strings.HasPrefix(l, bodyIndent):
			if err := bodyLine(l); err != nil {
				return fmt.Errorf("definition file, line %d: %w", i+1, err)
			}
			continue
		}
		return fmt.Errorf("definition file, line %d: %q is none of the lines nel writes", i+1, clip(l))
	}
	return nil
}
