package tbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/gitrev"
	"github.com/nel-eval/nel/runtime/plan"
)

// Version names the conversion rules; the compiler's hashes cover it, so
// a change to the rules is another benchmark.
const Version = "tbench-harbor-1"

// tasksDir finds the folder of repo that holds the v1 tasks (folders with
// a task.yaml): the repository itself, tasks/, benchmarks/ or
// original-tasks/, the first that has one, as NeMo Evaluator looks.
func tasksDir(repo string) (string, error) {
	for _, sub := range []string{".", "tasks", "benchmarks", "original-tasks"} {
		dir := filepath.Join(repo, sub)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "task.yaml")); e.IsDir() && err == nil {
				return dir, nil
			}
		}
	}
	return "", fmt.Errorf("no Terminal-Bench v1 task (a folder with task.yaml) in the repository, tasks/, benchmarks/ or original-tasks/")
}

// Result is what ConvertAll did.
type Result struct {
	Converted []string
	// Skipped are the tasks that did not convert, by name, with why: NeMo
	// Evaluator runs the others, and so does nel, saying which.
	Skipped map[string]error
}

// ConvertAll converts the v1 tasks of the repository checked out in repo
// into dst, one folder per task, in name order: every task, or those
// g.Tasks names. A task named there that the repository lacks is an
// error: the pinned revision and the benchmark's task list disagree.
// With g.Unsolvable set, each task's category is "unsolvable" or
// "solvable" instead of its task.yaml's.
func ConvertAll(ctx context.Context, repo, dst string, g plan.HarborGit) (*Result, error) {
	only := g.Tasks
	src, err := tasksDir(repo)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(src, e.Name(), "task.yaml")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	if only != nil {
		var missing []string
		for _, n := range only {
			if !slices.Contains(names, n) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%d of the benchmark's tasks are not in the repository at this revision: %s", len(missing), strings.Join(missing, ", "))
		}
		names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(only, n) })
		if len(names) == 0 {
			return nil, errors.New("the benchmark's task list is empty: no task to convert")
		}
	}
	res := &Result{Skipped: map[string]error{}}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		category := ""
		if g.Unsolvable != nil {
			category = "solvable"
			if slices.Contains(g.Unsolvable, n) {
				category = "unsolvable"
			}
		}
		if err := convertAs(filepath.Join(src, n), filepath.Join(dst, n), category); err != nil {
			res.Skipped[n] = err
			if rmErr := os.RemoveAll(filepath.Join(dst, n)); rmErr != nil {
				return nil, rmErr
			}
			continue
		}
		res.Converted = append(res.Converted, n)
	}
	if len(res.Converted) == 0 {
		return nil, fmt.Errorf("none of the %d tasks converted (the first: %v)", len(names), res.Skipped[names[0]])
	}
	return res, nil
}

// Prepare makes the Harbor dataset of a plan's git-sourced tasks on the
// node and returns its folder: the repository at g.Revision fetched into
// cache/git/REVISION (once for every benchmark of the run that reads it),
// its tasks converted into cache/DATASET@REVISION. Both appear whole, by
// a rename, so a rerun, or another shard, finds them done and reads the
// same tasks. A failure to fetch is a *gitrev.Error: the infrastructure's.
func Prepare(ctx context.Context, dataset string, g plan.HarborGit, cache string, log *slog.Logger) (string, error) {
	out := filepath.Join(cache, dataset+"@"+g.Revision)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	repo := filepath.Join(cache, "git", g.Revision)
	log.Info("fetching the benchmark's tasks", "url", gitrev.Redact(g.URL), "revision", g.Revision)
	if err := gitrev.Fetch(ctx, g.URL, g.Revision, repo); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cache, dataset+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	res, err := ConvertAll(ctx, repo, tmp, g)
	if err != nil {
		return "", fmt.Errorf("converting %s at revision %s to Harbor tasks: %w", gitrev.Redact(g.URL), g.Revision, err)
	}
	for _, n := range slices.Sorted(maps.Keys(res.Skipped)) {
		log.Warn("a task nel cannot run is left out, as NeMo Evaluator leaves out those Harbor's adapter cannot convert", "task", n, "err", res.Skipped[n])
	}
	log.Info("converted the benchmark's tasks", "tasks", len(res.Converted), "left_out", len(res.Skipped))
	if err := os.Rename(tmp, out); err != nil {
		if _, statErr := os.Stat(out); statErr != nil {
			return "", err
		}
	}
	return out, nil
}
