// Package templates holds the text/template files nel compiles recipes
// into (sbatch scripts, Makefiles) and the escaping they need besides shell
// quoting, which is runtime/shellquote's.
package templates

import (
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"

	"github.com/nel-eval/nel/runtime/shellquote"
)

//go:embed *.tmpl
var files embed.FS

// Parse returns the named template set with nel's functions: sprig's text
// functions, minus the ones that must not be used for shell (squote, quote)
// and the ones that would make output differ between runs (dates, random).
func Parse(extra template.FuncMap) (*template.Template, error) {
	funcs := sprig.TxtFuncMap()
	for _, name := range []string{
		"squote", "quote", // not shell quoting: use sh
		"now", "date", "dateInZone", "date_in_zone", "dateModify", "date_modify", "ago", "htmlDate", "htmlDateInZone",
		"randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "uuidv4", "env", "expandenv",
	} {
		delete(funcs, name)
	}
	funcs["sh"] = shellquote.Quote
	funcs["shargs"] = shellquote.Join
	funcs["comment"] = Comment
	funcs["mk"] = MakeEscape
	for k, v := range extra {
		funcs[k] = v
	}
	t, err := template.New("nel").Option("missingkey=error").Funcs(funcs).ParseFS(files, "*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}
	return t, nil
}

// Comment makes s safe inside a '#' comment line: a newline in a recipe
// path must not end the comment and start a command.
func Comment(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

// MakeEscape protects '$' from make's own expansion in a Makefile.
func MakeEscape(s string) string { return strings.ReplaceAll(s, "$", "$$") }
