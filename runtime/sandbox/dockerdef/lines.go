package dockerdef

import "strings"

// instruction is one Dockerfile instruction: its keyword in capitals, the
// rest of it, and the line it starts on.
type instruction struct {
	line int
	cmd  string
	args string
	text string
}

// instructions reads a Dockerfile as Docker's parser does: parser
// directives at the top, comments and blank lines skipped (inside a
// continued instruction too), a backslash at a line's end joining the
// next line (without the newline).
func instructions(s string) ([]instruction, error) {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	var out []instruction
	directives := true
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if directives {
			if k, v, ok := directive(line); ok {
				if k == "escape" && v != `\` {
					return nil, &Error{Line: i + 1, Instruction: line, Msg: "not supported yet: an escape character other than \\"}
				}
				continue
			}
			directives = false
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		start := i + 1
		var b strings.Builder
		for {
			cont := strings.HasSuffix(line, `\`)
			if !cont {
				b.WriteString(line)
				break
			}
			b.WriteString(strings.TrimSuffix(line, `\`))
			if i+1 >= len(lines) {
				break
			}
			i++
			for skip(lines[i]) && i+1 < len(lines) {
				i++
			}
			// A continued line keeps its indentation, as Docker's does.
			line = strings.TrimRight(lines[i], " \t")
		}
		text := b.String()
		word, rest, _ := strings.Cut(text, " ")
		if w, r, ok := strings.Cut(text, "\t"); ok && len(w) < len(word) {
			word, rest = w, r
		}
		out = append(out, instruction{line: start, cmd: strings.ToUpper(word), args: strings.TrimSpace(rest), text: text})
	}
	return out, nil
}

// Step is one Dockerfile instruction as Docker's parser reads it: the
// line it starts on and its text, continuation lines joined.
type Step struct {
	Line int
	Text string
}

// Steps reads a Dockerfile's instructions (instructions' reading, for
// callers that only look at them: runtime/harbor's check of what a
// task's image needs).
func Steps(s string) ([]Step, error) {
	ins, err := instructions(s)
	if err != nil {
		return nil, err
	}
	out := make([]Step, len(ins))
	for i, in := range ins {
		out[i] = Step{Line: in.line, Text: in.text}
	}
	return out, nil
}

// skip: a blank or comment line, which a continued instruction skips.
func skip(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}

// directive reads a parser directive line (# syntax=…, # escape=…).
func directive(line string) (key, val string, ok bool) {
	rest, ok := strings.CutPrefix(line, "#")
	if !ok {
		return "", "", false
	}
	k, v, ok := strings.Cut(rest, "=")
	k = strings.ToLower(strings.TrimSpace(k))
	if !ok || strings.ContainsAny(k, " \t") || k == "" {
		return "", "", false
	}
	return k, strings.TrimSpace(v), true
}
