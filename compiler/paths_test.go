package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
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
		p := mustPlan(t, s)
		if p.OutputDir != filepath.ToSlash(c.want) || p.RecipeDir != "myeval" {
			t.Errorf("%s: plan output_dir %q, recipe_dir %q; want %q, myeval", c.name, p.OutputDir, p.RecipeDir, c.want)
		}
	}
}

// TestRemotePaths: with remote paths a dataset that is not here is a
// warning, and the hashes cover its path; one that is here is read and
// checked as always.
func TestRemotePaths(t *testing.T) {
	dir := t.TempDir()
	recipe := func(data string) []byte {
		return []byte(`services: m: {type: "api", url: "https://h/v1/chat/completions", model: "m"}
benchmarks: [{name: "gsm8k", params: data_path: "` + data + `", solver: {type: "simple", service: "m"}}]
`)
	}
	l := newTestLoader(t)
	path := filepath.Join(dir, "r.cue")
	if _, err := l.Load(path, recipe("/nowhere/a.jsonl"), nil); err == nil {
		t.Fatal("a dataset that is not here loads without remote paths")
	}
	l.RemotePaths = true
	a, err := l.Load(path, recipe("/nowhere/a.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := path + `:2:49: benchmarks[0].params.data_path: dataset "/nowhere/a.jsonl" is not here (no such file or directory); with remote paths it is read on the compute nodes, and the hashes cover its path, not its content`
	if len(a.Warnings) != 1 || a.Warnings[0].Error() != want {
		t.Errorf("warnings %q, want one: %s", a.Warnings, want)
	}
	if len(a.LocalFiles()) != 0 {
		t.Errorf("local files %v, want none: the data was not read", a.LocalFiles())
	}
	b, err := l.Load(path, recipe("/nowhere/b.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ha, _, _ := ComputeHashes(a)
	hb, _, _ := ComputeHashes(b)
	if ha.Recipe == hb.Recipe {
		t.Error("two remote paths give the same recipe hash: with no content, the path must count")
	}
	// Here, and garbled: an error even with remote paths.
	if err := os.WriteFile(filepath.Join(dir, "g.jsonl"), []byte("{\"question\": 1}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = l.Load(path, recipe("g.jsonl"), nil)
	if err == nil || !strings.Contains(err.Error(), "benchmarks[0].params.data_path: the data does not load: dataset "+filepath.Join(dir, "g.jsonl")+": line 2: ") {
		t.Errorf("garbled data: err = %v", err)
	}
}

// mustPlan is s's plan, its hashes computed, or the test's end.
func mustPlan(t *testing.T, s *Source) *plan.Plan {
	t.Helper()
	h, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
