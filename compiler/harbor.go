package compiler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/sandbox/dockerdef"
)

// harborOf returns the dataset of a harbor://DATASET benchmark name.
func harborOf(name string) (dataset string, ok bool) {
	return strings.CutPrefix(name, "harbor://")
}

// harborData reads the dataset of every harbor:// benchmark when the
// recipe is loaded, as local data is read (data.go): the hashes cover the
// tasks' content, never where they lie. A dataset that is not there is not
// an error here (NeMo Evaluator downloads datasets, so its recipes
// validate without them); compile refuses it (support.go). A dataset that
// is there and does not read is an error at the benchmark's name.
func (c *ruleChecker) harborData() {
	for i, b := range c.r.Benchmarks {
		if t, ok := c.harborGit(i, b); ok {
			c.keepHarbor(i, t)
			b.harborGit = b.Solver.Type == "harbor"
			continue
		}
		name, ok := harborOf(b.Name)
		if !ok {
			continue
		}
		if !validDatasetName(name) {
			c.at(fmt.Sprintf("expected harbor://DATASET, DATASET a folder under $%s (by default %s beside the recipe), found %q", harbor.EnvDatasetsDir, harbor.DefaultDatasetsDir, b.Name), "benchmarks", i, "name")
			continue
		}
		dir := harbor.DatasetDir(c.s.Dir, c.s.harborEnv, name)
		t := plan.HarborTasks{Dataset: name, Dir: path.Join(harbor.DefaultDatasetsDir, name)}
		if c.s.harborEnv != "" {
			abs, err := filepath.Abs(dir)
			if err != nil {
				c.at(fmt.Sprintf("harbor dataset folder %s: %v", dir, err), "benchmarks", i, "name")
				continue
			}
			t.Dir = filepath.ToSlash(abs)
		}
		ds, err := harbor.Load(context.Background(), name, dir)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !exists(dir):
			// Left to compile, which refuses it with where it looked.
		case err != nil:
			c.at(fmt.Sprintf("%v (the dataset is read when the recipe is loaded, since the hashes cover its tasks' content)", err), "benchmarks", i, "name")
			continue
		default:
			t.Digest, t.Tasks = ds.Digest, len(ds.Tasks)
			c.harborImages(i, b, ds)
			if b.Solver.Type == "harbor" {
				b.harborDir = t.Dir
			}
		}
		c.keepHarbor(i, t)
	}
}

// keepHarbor keeps benchmark i's tasks for the plan and the hashes.
func (c *ruleChecker) keepHarbor(i int, t plan.HarborTasks) {
	if c.s.harbor == nil {
		c.s.harbor = map[int]plan.HarborTasks{}
	}
	c.s.harbor[i] = t
}

// harborImages records why one of ds's tasks has no image that benchmark
// i's container sandbox (docker, apptainer, ecs_fargate) can run its sessions in
// (harbor.Task.Image: a Dockerfile that builds, which docker does, and
// apptainer on the shard's node does when the Dockerfile converts into a
// definition file; or one that works outside /app);
// nel-run would find it on the node and fail each such sample. A task
// with no environment image at all runs in the sandbox's own.
func (c *ruleChecker) harborImages(i int, b *Benchmark, ds *harbor.Dataset) {
	sb := resolveSandbox(c.r, b)
	if b.Solver.Type != "tool_calling" || sb == nil || (sb.Type != "docker" && sb.Type != "apptainer" && sb.Type != "ecs_fargate" && sb.Type != "slurm") {
		return
	}
	for _, task := range ds.Tasks {
		if task.Config.DockerImage == "" && !exists(filepath.Join(task.Dir, "environment", "Dockerfile")) {
			continue
		}
		img, err := task.Image()
		if errors.Is(err, harbor.ErrBuild) && sb.Type == "docker" {
			continue // nel-run's docker sandbox builds it (docker build)
		}
		if errors.Is(err, harbor.ErrBuild) && sb.Type == "apptainer" && !isSandboxPool(sb) {
			// nel-run's apptainer sandbox builds it from the Dockerfile
			// converted into a definition file, when it converts.
			err = convertsForApptainer(&task)
		}
		if err == nil && sb.Type == "slurm" && img != sb.Image {
			// A slurm pool's server is a Pyxis container that cannot start
			// another per session: every session runs in the pool's image.
			// A task made for another image would fail its verifier there,
			// a wrong answer that is the sandbox's doing.
			err = fmt.Errorf("task %s runs in %s, and a slurm pool's sessions run in the pool's image %q (its server is a Pyxis container and starts no other per session): give the pool that image, or use an apptainer pool, whose sessions run each task's image", task.Name, img, sb.Image)
		}
		if err != nil {
			if c.s.harborImage == nil {
				c.s.harborImage = map[int]error{}
			}
			c.s.harborImage[i] = err
			return
		}
	}
}

// convertsForApptainer says why task's Dockerfile has no definition file
// the apptainer sandbox can build (runtime/sandbox/dockerdef); nil when it
// has one.
func convertsForApptainer(task *harbor.Task) error {
	dir := task.BuildContext()
	b, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err == nil {
		_, err = dockerdef.Convert(string(b), os.DirFS(dir))
	}
	if err != nil {
		return fmt.Errorf("task %s: environment/%w", task.Name, err)
	}
	return nil
}

// validDatasetName: a folder path under the datasets folder (registry
// names have a slash: terminal-bench/terminal-bench-2-1), never one that
// leaves it.
func validDatasetName(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) {
		return false
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// harborPlan is benchmark i's tasks for the plan; nil for a benchmark
// that is not harbor://.
func harborPlan(s *Source, i int) *plan.HarborTasks {
	t, ok := s.harbor[i]
	if !ok {
		return nil
	}
	return &t
}

// harborMethod is what the hashes cover of benchmark i's tasks: their
// content digest (the dataset's name when it was not there to read, and
// compile refuses that). Nil for a benchmark that is not harbor://.
func harborMethod(s *Source, i int) map[string]any {
	t, ok := s.harbor[i]
	switch {
	case !ok:
		return nil
	case t.Git != nil:
		return harborGitMethod(t.Git)
	case t.Digest == "":
		return map[string]any{"dataset": t.Dataset}
	}
	return map[string]any{"digest": t.Digest}
}

// harborUnsupported refuses what benchmark i's harbor:// tasks need that
// nel cannot give yet.
func harborUnsupported(no func(string, ...any), s *Source, i int, b *Benchmark) {
	t, ok := s.harbor[i]
	if !ok {
		return
	}
	if t.Git != nil {
		harborGitUnsupported(no, s.Recipe, i, b, t.Git)
	}
	if b.Solver.Type == "harbor" {
		// The Harbor CLI runs the folder here (--path), or the one
		// nel-run makes of a repository, or fetches the dataset from its
		// registry in the job.
		return
	}
	if t.Git == nil && t.Digest == "" {
		dir := harbor.DatasetDir(s.Dir, s.harborEnv, t.Dataset)
		no(fmt.Sprintf("a Harbor dataset that is not on this machine (looked in %s; nel does not download Harbor datasets for its own loop: put the task folders there, or set $%s; or use solver type harbor, whose CLI fetches NAME@VERSION from Harbor's registry in the job)", dir, harbor.EnvDatasetsDir), "benchmarks", i, "name")
	}
	if err := s.harborImage[i]; err != nil {
		no(fmt.Sprintf("a task image nel cannot pull by name for %s session (%v)", article(resolveSandbox(s.Recipe, b).Type), err), "benchmarks", i, "sandbox")
	}
	if b.Solver.Type != "tool_calling" && b.Solver.Type != "harbor" && b.Solver.Type != "openclaw" {
		no(fmt.Sprintf("harbor:// tasks with %s solver (an agent solves them in a sandbox: use solver type tool_calling with sandbox_tools: true, or openclaw)", article(b.Solver.Type)), "benchmarks", i, "solver", "type")
	}
	if b.Solver.Type == "tool_calling" && !b.Solver.SandboxTools {
		no("harbor:// tasks without sandbox_tools (the agent works on /app through the sandbox tools; set sandbox_tools: true)", "benchmarks", i, "solver", "sandbox_tools")
	}
	if b.Solver.Type == "tool_calling" && b.Solver.ResponseMode == "sandbox_artifact" {
		no("response_mode sandbox_artifact on harbor:// tasks (the task's verifier reads /app itself; nel reads no artifact: leave response_mode at last_message)", "benchmarks", i, "solver", "response_mode")
	}
}

// harborDirs lists where each harbor:// benchmark's tasks are read, by
// benchmark index; nil when the recipe has none.
func harborDirs(s *Source) map[string]string {
	if len(s.harbor) == 0 {
		return nil
	}
	out := map[string]string{}
	for i, t := range s.harbor {
		if t.Git != nil {
			continue // made in the run folder on the node
		}
		out[fmt.Sprint(i)] = t.Dir
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// toolSettings copies a tool_calling solver's settings into the plan's.
func toolSettings(p *plan.Solver, s Solver) {
	p.ResourceService = s.ResourceService
	p.SandboxTools = s.SandboxTools
	p.MaxTurns = s.MaxTurns
	p.ToolTimeout = s.ToolTimeout
	p.MaxOutputChars = s.MaxOutputChars
	p.ResponseMode = s.ResponseMode
}
