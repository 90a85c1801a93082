package compiler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue/token"
)

// article is word after "a" or "an" as its first letter sounds for the
// type names a message puts it before ("a docker sandbox", "an apptainer
// sandbox"): "an" before a vowel.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// Error is one problem in a recipe: where it is, which field, and what was
// expected and found. Line and Column are 0 when the problem has no place in
// the file (a missing section, an -O override).
type Error struct {
	File   string
	Line   int
	Column int
	Path   string // e.g. benchmarks[2].solver.service; "" for the whole file
	Msg    string
}

func (e Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// fileSet is the files one recipe was read from: the recipe first, then
// what it composed (fragments, _base_ files, playbooks). Positions in any of
// them are the recipe's.
type fileSet []string

func (fs fileSet) main() string { return fs[0] }

func (fs fileSet) has(name string) bool { return slices.Contains(fs, name) }

// of is the file pos is in, the recipe when pos is no position.
func (fs fileSet) of(pos token.Pos) string {
	if pos.IsValid() && fs.has(pos.Filename()) {
		return pos.Filename()
	}
	return fs.main()
}

// Errors is the list of problems found in a recipe. A command that gets
// Errors exits 2 (invalid input); any other error exits 1.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sorted orders errors by position, then path, and drops exact duplicates.
func (es Errors) sorted() Errors {
	slices.SortStableFunc(es, func(a, b Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.Compact(es)
}

// maxErrors bounds what one run prints: past this the rest is noise.
const maxErrors = 50

func (es Errors) truncated() Errors {
	if len(es) <= maxErrors {
		return es
	}
	rest := len(es) - maxErrors
	out := slices.Clone(es[:maxErrors])
	return append(out, Error{Msg: fmt.Sprintf("… and %d more errors", rest)})
}
