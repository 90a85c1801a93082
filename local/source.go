package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/rundir"
)

// Source is a run folder's source record (rundir.Dir.Source): which recipe a run ran, so that
// nel publish can put it in a store. The recipe and its lock are copied
// beside it (recipe/) as they were when the run started; files the recipe
// references (data_path, rubric_file) are read from RecipeDir at publish
// time, and a lock checks that they are still what was run.
type Source struct {
	RecipeHash string `json:"recipe_hash"`
	// Recipe is the path as given; RecipeDir the absolute directory its
	// relative paths resolve against.
	Recipe    string `json:"recipe"`
	RecipeDir string `json:"recipe_dir"`
	// File is the copy's name under recipe/; Lock the lock's, "" when none.
	File string `json:"file"`
	Lock string `json:"lock,omitempty"`
	// Overrides are the -O texts the recipe was loaded with (output.dir
	// left out: it is not methodology).
	Overrides []string `json:"overrides,omitempty"`
}

// WriteSource records s in the run folder out. text is the recipe's text
// when it is no file (quick mode built it from flags), nil to copy s.Path.
func WriteSource(out rundir.Dir, s *compiler.Source, recipeHash string, text []byte) error {
	abs, err := filepath.Abs(s.Dir)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	sf := Source{RecipeHash: recipeHash, Recipe: s.Path, RecipeDir: abs, File: filepath.Base(s.Path)}
	for _, o := range s.Overrides {
		if slices.Equal(o.Path, []string{"output", "dir"}) {
			continue
		}
		sf.Overrides = append(sf.Overrides, o.Text)
	}
	copyIn := func(src, name string) error {
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("run: keep the recipe for nel publish: %w", err)
		}
		return atomicfile.WriteFile(out.Recipe(name), b)
	}
	if err := os.MkdirAll(out.RecipeDir(), 0o755); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if text != nil {
		if err := atomicfile.WriteFile(out.Recipe(sf.File), text); err != nil {
			return fmt.Errorf("run: keep the recipe for nel publish: %w", err)
		}
	} else if err := copyIn(s.Path, sf.File); err != nil {
		return err
	}
	if s.Lock != nil {
		sf.Lock = filepath.Base(s.LockFile)
		if err := copyIn(s.LockFile, sf.Lock); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(sf, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(out.Source(), append(b, '\n'))
}

// ReadSource reads the run folder's source record; nil, nil when the run
// has none (a SLURM run: nel publish then needs --recipe).
func ReadSource(out rundir.Dir) (*Source, error) {
	b, err := os.ReadFile(out.Source())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sf Source
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, fmt.Errorf("%s: %w", out.Source(), err)
	}
	return &sf, nil
}

// ErrNoSource is LoadRecorded's error for a run folder without a source
// record (a SLURM run, or a folder nel run never ran in).
var ErrNoSource = errors.New("no record of the recipe nel run ran")

// LoadRecorded loads the recipe a run folder's run ran: the copy nel run
// kept in .nel/recipe/, with the overrides it was loaded with, its
// relative paths resolved where the run read them, and its lock applied.
// It returns the recipe, the copy's path and the lock's ("" when
// unlocked); ErrNoSource (wrapped) when the folder has no record.
func LoadRecorded(out rundir.Dir, extra ...compiler.Override) (*compiler.Source, string, string, error) {
	sf, err := ReadSource(out)
	if err != nil {
		return nil, "", "", err
	}
	if sf == nil {
		return nil, "", "", fmt.Errorf("%s: %w (%s)", out, ErrNoSource, out.Source())
	}
	copyPath := out.Recipe(sf.File)
	src, err := os.ReadFile(copyPath)
	if err != nil {
		return nil, "", "", err
	}
	var ovs []compiler.Override
	for _, t := range sf.Overrides {
		o, err := compiler.ParseOverride(t)
		if err != nil {
			return nil, "", "", fmt.Errorf("%s: %w", out.Source(), err)
		}
		ovs = append(ovs, o)
	}
	l, err := compiler.NewLoader()
	if err != nil {
		return nil, "", "", err
	}
	// Named by its original path, so its relative paths resolve where the
	// run read them.
	s, err := l.Load(filepath.Join(sf.RecipeDir, sf.File), src, append(ovs, extra...))
	if err != nil {
		return nil, "", "", err
	}
	lockPath := ""
	if sf.Lock != "" {
		lockPath = out.Recipe(sf.Lock)
		lk, err := compiler.ReadLock(lockPath)
		if err != nil {
			return nil, "", "", err
		}
		if err := s.ApplyLock(lk, lockPath); err != nil {
			return nil, "", "", err
		}
	}
	return s, copyPath, lockPath, nil
}
