package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// tree is a small command tree with the kinds of flags nel has.
func tree() *cobra.Command {
	root := &cobra.Command{Use: "nel"}
	root.Flags().Bool("version", false, "")
	compile := &cobra.Command{Use: "compile FILE", Run: func(*cobra.Command, []string) {}}
	compile.Flags().StringP("target", "t", "slurm", "")
	compile.Flags().Bool("locked", false, "")
	compile.Flags().String("nel-run", "", "")
	compile.Flags().StringArrayP("override", "O", nil, "")
	compile.Flags().StringP("output", "o", "", "")
	compile.Flags().Duration("progress", 0, "")
	wrap := &cobra.Command{Use: "with-services -- CMD", Run: func(*cobra.Command, []string) {}}
	wrap.Flags().String("plan", "", "")
	FlagsFirst(wrap)
	root.AddCommand(compile, wrap)
	return root
}

func TestNormalizeArgs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		// One-dash long flags get their second dash.
		{"compile -locked r.cue", "compile --locked r.cue"},
		{"compile r.cue -locked=false", "compile r.cue --locked=false"},
		{"compile -nel-run /x r.cue", "compile --nel-run /x r.cue"},
		{"compile -progress 5s r.cue", "compile --progress 5s r.cue"},
		{"compile -target=make r.cue", "compile --target=make r.cue"},
		{"compile -help", "compile --help"},
		{"-version", "--version"},
		// Shorthands stay, with their values however they look.
		{"compile -t make -O a=b -o -odd r.cue", "compile -t make -O a=b -o -odd r.cue"},
		{"compile -O=a=b r.cue", "compile -O=a=b r.cue"},
		{"compile -omydir r.cue", "compile -omydir r.cue"},
		// A one-letter flag with two dashes, as the flag package took it.
		{"compile --t make --o=d r.cue", "compile -t make -o=d r.cue"},
		// A flag's value is never rewritten, even when it looks like a flag.
		{"compile --nel-run -locked r.cue", "compile --nel-run -locked r.cue"},
		// Names that are no flag of the command are left for pflag to refuse.
		{"compile -bogus r.cue", "compile -bogus r.cue"},
		{"compile -plan r.cue", "compile -plan r.cue"},
		// Nothing after --, nor after the wrapped command of a flags-first one.
		{"compile -- -locked", "compile -- -locked"},
		{"with-services -plan p make -plan x", "with-services --plan p make -plan x"},
	} {
		got := NormalizeArgs(tree(), strings.Fields(tt.in))
		if want := strings.Fields(tt.want); !slices.Equal(got, want) {
			t.Errorf("NormalizeArgs(%s) = %q, want %q", tt.in, got, want)
		}
	}
}

// TestNormalizedParse: what NormalizeArgs gives, pflag reads as the flag
// package read the original.
func TestNormalizedParse(t *testing.T) {
	root := tree()
	var target, output string
	var locked bool
	compile, _, _ := root.Find([]string{"compile"})
	compile.Run = func(c *cobra.Command, _ []string) {
		target, _ = c.Flags().GetString("target")
		output, _ = c.Flags().GetString("output")
		locked, _ = c.Flags().GetBool("locked")
	}
	root.SetArgs(NormalizeArgs(root, strings.Fields("compile r.cue -locked --t make -o=out")))
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if target != "make" || output != "out" || !locked {
		t.Errorf("target %q, output %q, locked %v", target, output, locked)
	}
}

func TestBuild(t *testing.T) {
	if got := Build("abc123", "2026-01-02T03:04:05Z"); got != "commit abc123, built 2026-01-02T03:04:05Z" {
		t.Errorf("Build = %q", got)
	}
	// A test binary records no VCS stamp: what was not stamped is unknown.
	if got := Build("", ""); !strings.HasPrefix(got, "commit ") || !strings.Contains(got, ", built ") {
		t.Errorf("Build without stamps = %q", got)
	}
}
