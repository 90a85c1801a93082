package compiler

import (
	"path/filepath"
	"testing"
)

// TestOutputDir: output.dir written in the recipe is relative to the
// recipe's directory; one a command-line flag gives is as given; -O writes
// into the recipe.
func TestOutputDir(t *testing.T) {
	src := []byte(`services: m: {type: "api", url: "https://h/v1/chat/completions", model: "m"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "m"}}]
output: dir: "out"
`)
	flagO, err := ParseOverride("output.dir=edited")
	if err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(t.TempDir(), "abs")
	for _, c := range []struct {
		name string
		ovs  []Override
		want string
	}{
		{"as written", nil, filepath.Join("myeval", "out")},
		{"-O edits the recipe", []Override{flagO}, filepath.Join("myeval", "edited")},
		{"-o is the command line's", []Override{OutputDirFlag("-o here", "here")}, "here"},
		{"-o after -O wins", []Override{flagO, OutputDirFlag("-o ./here/", "./here/")}, "here"},
		{"absolute", []Override{{Text: "output.dir=" + abs, Path: []string{"output", "dir"}, Value: abs}}, abs},
	} {
		s, err := newTestLoader(t).Load(filepath.Join("myeval", "r.cue"), src, c.ovs)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.OutputDir(); got != c.want {
			t.Errorf("%s: OutputDir() = %q, want %q", c.name, got, c.want)
		}
		h, _, err := ComputeHashes(s)
		if err != nil {
			t.Fatal(err)
		}
		p, err := BuildPlan(s, h, "test")
		if err != nil {
			t.Fatal(err)
		}
		if p.OutputDir != filepath.ToSlash(c.want) || p.RecipeDir != "myeval" {
			t.Errorf("%s: plan output_dir %q, recipe_dir %q; want %q, myeval", c.name, p.OutputDir, p.RecipeDir, c.want)
		}
	}
}
