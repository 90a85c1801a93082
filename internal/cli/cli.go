// Package cli is what nel and nel-run share on top of cobra: the
// single-dash long flags both accepted before they moved to cobra, the
// help layout (usage line, explanation, flags), the version line and the
// generated command reference. Commands themselves live in cmd/.
package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NormalizeArgs rewrites the flags of args for pflag as Go's flag package
// read them, so that every command line that worked before cobra still
// does: a long flag with one dash (-locked, -plan=x, -progress 5s) gets
// two, and a one-letter flag with two dashes (--o DIR) gets one. Only
// names that are flags of the command args run are touched; values of
// flags that take one, and everything after "--", are left as they are.
func NormalizeArgs(root *cobra.Command, args []string) []string {
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		c = root
	}
	// The flags cobra adds itself are added now, as it would add them.
	c.InitDefaultHelpFlag()
	c.InitDefaultVersionFlag()
	flags := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	flags.AddFlagSet(c.Flags())
	flags.AddFlagSet(c.InheritedFlags())
	names := len(strings.Fields(c.CommandPath())) - 1 // the words that name c
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		f, name, dashes, hasValue := lookup(flags, a)
		if f == nil {
			if !strings.HasPrefix(a, "-") {
				if names == 0 && c.Annotations[flagsFirst] != "" {
					return append(out, args[i:]...) // the wrapped command's
				}
				names--
			}
			out = append(out, a)
			continue
		}
		switch {
		case dashes == 1 && len(name) > 1:
			a = "-" + a
		case dashes == 2 && len(name) == 1 && f.Shorthand == name:
			a = a[1:]
		}
		out = append(out, a)
		if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++ // the flag's value, whatever it looks like
			out = append(out, args[i])
		}
	}
	return out
}

const flagsFirst = "nel:flags-first"

// FlagsFirst makes c's flags end at its first argument, as the flag
// package's did: what follows is another command's, flags included
// (nel-run with-services --plan P make -j 4).
func FlagsFirst(c *cobra.Command) {
	c.Flags().SetInterspersed(false)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[flagsFirst] = "true"
}

// lookup finds the flag arg names: -name, --name, -name=v or --name=v,
// where name is a long name or a shorthand.
func lookup(flags *pflag.FlagSet, arg string) (f *pflag.Flag, name string, dashes int, hasValue bool) {
	switch {
	case strings.HasPrefix(arg, "--"):
		dashes = 2
	case strings.HasPrefix(arg, "-") && len(arg) > 1:
		dashes = 1
	default:
		return nil, "", 0, false
	}
	name, _, hasValue = strings.Cut(arg[dashes:], "=")
	if name == "" {
		return nil, "", 0, false
	}
	if f = flags.Lookup(name); f != nil {
		if dashes == 1 && len(name) == 1 && f.Shorthand != name {
			return nil, "", 0, false // a one-letter long name keeps two dashes
		}
		return f, name, dashes, hasValue
	}
	if len(name) == 1 {
		if f = flags.ShorthandLookup(name); f != nil {
			return f, name, dashes, hasValue
		}
	}
	if dashes == 1 && len(arg) > 2 && !hasValue {
		// -oDIR: a shorthand with its value attached.
		if f = flags.ShorthandLookup(arg[1:2]); f != nil {
			return f, arg[1:2], 1, true
		}
	}
	return nil, "", 0, false
}

// UseLine is the usage line of c: its path and what its Use says after
// its name (nel compile [-t slurm|make] ... FILE).
func UseLine(c *cobra.Command) string {
	return c.CommandPath() + strings.TrimPrefix(c.Use, c.Name())
}

// WriteHelp writes c's help as both CLIs always laid it out: the usage
// line, the explanation, then the flags.
func WriteHelp(w io.Writer, c *cobra.Command) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n", UseLine(c))
	text := c.Long
	if text == "" {
		text = c.Short
	}
	b.WriteString(strings.TrimRight(text, "\n") + "\n")
	if c.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&b, "  %-12s %s\n", sub.Name(), sub.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		b.WriteString("\nFlags:\n" + c.LocalFlags().FlagUsages())
	}
	io.WriteString(w, b.String())
}

// Build is the commit and build date a binary was built from, for its
// version output: "commit C, built D". They come from the build (-ldflags
// -X, as make build sets them from the commit, so that a build is
// reproducible), else from the VCS stamp go build records, else they are
// "unknown".
func Build(commit, date string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && commit == "":
				commit = s.Value
			case s.Key == "vcs.time" && date == "":
				date = s.Value
			}
		}
	}
	if commit == "" {
		commit = "unknown"
	}
	if date == "" {
		date = "unknown"
	}
	return fmt.Sprintf("commit %s, built %s", commit, date)
}

// IsTerminal reports whether w is a terminal that can redraw a line in
// place (a character device whose TERM is not "dumb"): nel run's and
// nel-run shard's progress lines are drawn there, and logged elsewhere.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}
