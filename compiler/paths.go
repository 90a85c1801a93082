package compiler

import (
	"path/filepath"

	"cuelang.org/go/cue"
)

// One rule for relative paths: a path written in a recipe is relative to
// the recipe's own directory (Source.Dir), wherever nel runs. That covers
// params.data_path and a benchmark's other datasets, byob's dataset,
// prompt file and scorer command files, a judge's rubric_file, harbor://
// datasets (harbor_datasets/ beside the recipe), playbook files, defaults
// fragments and _base_ files, output.dir (OutputDir), and a process
// service's command, which runs in the recipe's directory (the plan's
// recipe_dir: runtime/serve, and srun --chdir in a job). A path given on
// the command line (-o DIR) is relative to the current directory, as any
// command's is.

// OutputDir is the run folder the plan names: output.dir resolved against
// the recipe's directory, or as given when a command-line flag set it
// (OutputDirFlag). Like Dir, it is relative to the directory nel was run
// in unless absolute, so that the plan's bytes do not depend on where the
// checkout lies.
func (s *Source) OutputDir() string {
	dir := s.Recipe.Output.Dir
	if o, ok := overrideFor(s.Overrides, []cue.Selector{cue.Str("output"), cue.Str("dir")}); ok && o.cwd {
		return filepath.Clean(dir)
	}
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	return filepath.Join(s.Dir, dir)
}
