package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/runctl"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
)

// Recorded is what a run folder says of the run that ran in it: the
// hashes a run that continues it must have.
type Recorded struct {
	Dir        rundir.Dir
	RecipeHash string     // from the source record; "" when there is none
	PlanHash   string     // of the latest plan; "" when there is none
	latest     *plan.Plan // the latest plan, for LoadResume; nil when there is none
}

// ReadRecorded reads what folder d records of its last run; a folder
// without any record gives a Recorded with empty hashes (a first run).
func ReadRecorded(d rundir.Dir) (*Recorded, error) {
	r := &Recorded{Dir: d}
	sf, err := ReadSource(d)
	if err != nil {
		return nil, err
	}
	if sf != nil {
		r.RecipeHash = sf.RecipeHash
	}
	if p, err := runctl.LatestPlan(d); err == nil {
		r.PlanHash, r.latest = p.PlanHash, p
	}
	return r, nil
}

// check refuses a run whose hashes differ from the recorded ones: its
// shards' journals belong to the recorded plan, so it would not continue
// the run but start another one over it.
func (r *Recorded) check(recipeHash, planHash string) error {
	if r == nil {
		return nil
	}
	if r.RecipeHash != "" && r.RecipeHash != recipeHash {
		return exitcode.New(exitcode.Usage, fmt.Errorf("run --resume: %s holds a run of recipe %s, and this recipe is %s: it would start over, not continue (run without --resume to start a new run in the folder, or choose another output dir)", r.Dir, r.RecipeHash, recipeHash))
	}
	if r.PlanHash != "" && r.PlanHash != planHash {
		return exitcode.New(exitcode.Usage, fmt.Errorf("run --resume: %s holds a run of plan %s, and this run's plan is %s (same recipe, other deployment: endpoint, shards, output dir as written): it would start over, not continue", r.Dir, r.PlanHash, planHash))
	}
	return nil
}

// LoadResume loads the recipe the run in folder dir ran, as nel run
// --resume DIR continues it: the kept copy, its overrides, and the output
// dir its plan was written for (so that the plan, and its journals, are
// the same).
func LoadResume(dir string) (*compiler.Source, *Recorded, error) {
	d := rundir.Dir(dir)
	rec, err := ReadRecorded(d)
	if err != nil {
		return nil, nil, err
	}
	// The recipe's own output.dir, when it is this folder: the recipe is
	// loaded as the run loaded it, wherever that ran from, and its plan
	// hash is the same. Else a flag (-o) chose the folder: say it again.
	s, _, _, err := LoadRecorded(d)
	if err == nil && !sameDir(s.OutputDir(), dir) {
		out := dir
		if rec.latest != nil {
			if out, err = recordedOutput(rec.latest.OutputDir, dir); err != nil {
				return nil, nil, err
			}
		}
		s, _, _, err = LoadRecorded(d, compiler.OutputDirFlag("--resume "+dir, out))
	}
	if errors.Is(err, ErrNoSource) {
		return nil, nil, exitcode.New(exitcode.Usage, fmt.Errorf("run --resume: %s has no record of a local run (%s): a SLURM run continues when its job script is resubmitted (sbatch %s)", dir, d.Source(), d.Job("*")))
	}
	if err != nil {
		return nil, nil, err
	}
	return s, rec, nil
}

// recordedOutput is the output dir to give the resumed run: the one its
// plan names (the plan hash covers it as written, and the journals belong
// to that plan) when it is dir; a relative one read from elsewhere is
// refused with the folder to run from.
func recordedOutput(planned, dir string) (string, error) {
	if sameDir(planned, dir) {
		return planned, nil
	}
	if filepath.IsAbs(planned) {
		return "", exitcode.New(exitcode.Usage, fmt.Errorf("run --resume: the run in %s was planned for output dir %s, which is not this folder (moved?): it would start over, not continue", dir, planned))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	from := "the folder it was started in"
	if start, ok := strings.CutSuffix(abs, string(filepath.Separator)+filepath.Clean(planned)); ok {
		from = start
	}
	return "", exitcode.New(exitcode.Usage, fmt.Errorf("run --resume: the run in %s was planned for output dir %q, relative to %s: run nel run --resume %s from there, or it would start over, not continue", dir, planned, from, planned))
}

func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// openRunLog opens the run's own log for appending.
func openRunLog(d rundir.Dir) (*os.File, error) {
	if err := os.MkdirAll(string(d.Logs()), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(d.Logs().Run(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}
