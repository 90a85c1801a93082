package compiler

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/gitrev"
	"github.com/nel-eval/nel/runtime/harbor/tbench"
	"github.com/nel-eval/nel/runtime/plan"
)

// The params of a Terminal-Bench v1 benchmark that say where its tasks
// come from: nel's own (NeMo Evaluator's take none; it clones upstream's
// default branch).
const (
	// paramGitURL names a mirror of the repository (a URL or a path git
	// fetches from), for clusters that cannot reach GitHub. Where, not
	// what: the hashes leave it out.
	paramGitURL = "git_url"
	// paramGitRevision is the commit the tasks are read at.
	paramGitRevision = "git_revision"
)

// harborGit reads benchmark i when its name is one of NeMo Evaluator's
// benchmarks built from Terminal-Bench v1's repository: its tasks are
// fetched at a commit and converted on the node, so there is nothing here
// to read; the commit and the task list are what the hashes cover.
func (c *ruleChecker) harborGit(i int, b *Benchmark) (plan.HarborTasks, bool) {
	tb, ok := tbench.Lookup(b.Name)
	if !ok {
		return plan.HarborTasks{}, false
	}
	g := &plan.HarborGit{URL: tbench.UpstreamURL, Tasks: tb.Tasks, Unsolvable: tb.Unsolvable}
	if v, ok := b.Params[paramGitURL]; ok {
		s, isStr := v.(string)
		switch {
		case !isStr || s == "" || strings.HasPrefix(s, "-"):
			c.at(fmt.Sprintf("expected the URL or path of a git repository holding Terminal-Bench v1's tasks, found %v", v), "benchmarks", i, "params", paramGitURL)
		case urlCredentials(s):
			// The URL goes into the plan and the job's files as written,
			// and a secret goes by name only. Not echoed: it holds one.
			c.at("a mirror's URL with credentials in it (it would be written into the plan): give git them on the node, in ~/.netrc or a credential helper, and name the repository without them", "benchmarks", i, "params", paramGitURL)
		}
		g.URL = s
		if localRelative(s) {
			// As a recipe's other paths: from its folder, not from wherever
			// nel lock or nel-run happen to run.
			if abs, err := filepath.Abs(filepath.Join(c.s.Dir, s)); err == nil {
				g.URL = abs
			}
		}
	}
	if v, ok := b.Params[paramGitRevision]; ok {
		s, _ := v.(string)
		if !gitrev.ValidRevision(s) {
			c.at(fmt.Sprintf("expected a commit's full hash (40 hex digits: a branch or a tag may move, and the tasks with it), found %v", v), "benchmarks", i, "params", paramGitRevision)
		}
		g.Revision = s
	}
	return plan.HarborTasks{Dataset: b.Name, Git: g}, true
}

// urlCredentials says whether repository URL s carries a secret: a
// password, or an http(s) user name (a token given as the user, as
// GitHub takes one). ssh's user name (git@) is none.
func urlCredentials(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return false
	}
	_, hasPassword := u.User.Password()
	return hasPassword || u.Scheme == "http" || u.Scheme == "https"
}

// GitTasks returns, for benchmark i when its tasks are built from a git
// repository on the node, the repository's URL and the commit the recipe
// pins ("" when it pins none): what nel lock resolves.
func GitTasks(s *Source, i int) (url, rev string, ok bool) {
	t, ok := s.harbor[i]
	if !ok || t.Git == nil {
		return "", "", false
	}
	return t.Git.URL, t.Git.Revision, true
}

// lockedCommit reads benchmark i's commit from its lock entry d: the
// recipe's own, which the lock must agree with, or the one nel lock
// pinned where the recipe names none.
func (c *ruleChecker) lockedCommit(i int, d LockedBenchmark, path, again string) {
	t := c.s.harbor[i]
	switch {
	case !gitrev.ValidRevision(d.Revision):
		c.errs = append(c.errs, Error{File: path, Path: "datasets." + d.Benchmark, Msg: "no commit for tasks built from a git repository: " + again})
	case t.Git.Revision == "":
		g := *t.Git
		g.Revision = d.Revision
		t.Git = &g
		c.s.harbor[i] = t
	case t.Git.Revision != d.Revision:
		c.at(fmt.Sprintf("params.%s is %s, but the lock %s pinned %s: %s", paramGitRevision, t.Git.Revision, path, d.Revision, again), "benchmarks", i)
	}
}

// gitTasks says whether name is a benchmark whose tasks nel-run builds
// from Terminal-Bench v1's repository.
func gitTasks(name string) bool {
	_, ok := tbench.Lookup(name)
	return ok
}

// harborGitMethod is what the hashes cover of git-sourced tasks: the
// commit, the task list and the conversion's rules, not the URL.
func harborGitMethod(g *plan.HarborGit) map[string]any {
	return map[string]any{"git_revision": g.Revision, "tasks": g.Tasks, "unsolvable": g.Unsolvable, "converter": tbench.Version}
}

// harborGitUnsupported refuses what git-sourced tasks need that nel
// cannot give: a commit to pin; images built from the converted
// Dockerfiles for nel's own loop outside docker (the docker sandbox builds
// them on the node, as it builds a harbor:// dataset's; the apptainer
// sandbox builds only what compile has checked converts, and these
// Dockerfiles are made on the node).
func harborGitUnsupported(no func(string, ...any), r *Recipe, i int, b *Benchmark, g *plan.HarborGit) {
	if g.Revision == "" {
		no(fmt.Sprintf("%s without a pinned commit (NeMo Evaluator clones the default branch's head of %s at each run, so the same name runs other tasks over time; set params.%s to a commit's full hash, or run nel lock to pin the branch's head; and params.%s to a mirror where GitHub cannot be reached)", b.Name, g.URL, paramGitRevision, paramGitURL), "benchmarks", i, "name")
	}
	if sb := resolveSandbox(r, b); b.Solver.Type == "tool_calling" && sb != nil && (sb.Type == "apptainer" || sb.Type == "ecs_fargate") {
		// Every converted Dockerfile sets ENV TEST_DIR (and most RUN
		// more): harbor.Task.Image would refuse each task on the node
		// in an ecs_fargate task (runtime/shard taskImage); the
		// apptainer sandbox would build those that convert, which
		// compile cannot check (some FROM --platform, which no
		// conversion takes), failing the others' samples.
		no(fmt.Sprintf("%s's tasks in an %s sandbox with solver type tool_calling (their converted Dockerfiles are made on the node and must be built, which nel does there only in a docker sandbox; the apptainer sandbox builds a harbor:// dataset's Dockerfiles, which compile checks: use a docker or local sandbox, or solver type harbor, whose CLI builds them)", b.Name, sb.Type), sandboxPath(b, i, "type")...)
	}
}

// withoutGitParams is b's params less those that say where its tasks
// come from, which nel reads itself: the Harbor CLI takes no params, and
// the hashes cover the commit (harborGitMethod, from params or the lock
// alike), not the URL.
func withoutGitParams(b *Benchmark) map[string]any {
	if !gitTasks(b.Name) {
		return b.Params
	}
	out := maps.Clone(b.Params)
	delete(out, paramGitURL)
	delete(out, paramGitRevision)
	return out
}

// localRelative says whether a git_url is a relative path on this file
// system: not a URL (scheme://), not absolute, not scp's host:path.
func localRelative(u string) bool {
	if u == "" || strings.Contains(u, "://") || filepath.IsAbs(u) {
		return false
	}
	if i := strings.IndexByte(u, ':'); i > 0 && !strings.Contains(u[:i], "/") {
		return false // host:path
	}
	return true
}
