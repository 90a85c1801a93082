package compiler

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/harbor/tbench"
	"github.com/nel-eval/nel/runtime/plan"
)

// tbRecipe is a tool_calling recipe over NAME with PARAMS.
const tbRecipe = `
services: m: {type: "api", url: "http://h/v1", model: "org/m"}
benchmarks: [{
	name: "NAME"
	solver: {type: "tool_calling", service: "m", sandbox_tools: true}
	sandbox: {type: "local"}
	params: {PARAMS}
}]
`

func tbLoad(t *testing.T, name, params string) (*Source, Hashes, error) {
	t.Helper()
	dir := t.TempDir()
	text := strings.NewReplacer("NAME", name, "PARAMS", params).Replace(tbRecipe)
	writeFiles(t, dir, map[string]string{"r.cue": text})
	return loadWithEnv(t, filepath.Join(dir, "r.cue"), nil)
}

var (
	revA = strings.Repeat("a1", 20)
	revB = strings.Repeat("b2", 20)
)

// NeMo Evaluator's Terminal-Bench v1 benchmarks compile to git-sourced
// Harbor tasks: upstream's URL or the mirror params.git_url names, the
// commit params.git_revision pins, the -hard names' task lists.
func TestHarborGitPlan(t *testing.T) {
	s, h, err := tbLoad(t, "terminal-bench-hard", `git_revision: "`+revA+`"`)
	if err != nil {
		t.Fatal(err)
	}
	if errs := Unsupported(s); len(errs) != 0 {
		t.Fatalf("refused: %v", errs)
	}
	hard, _ := tbench.Lookup("terminal-bench-hard")
	want := plan.HarborTasks{Dataset: "terminal-bench-hard", Git: &plan.HarborGit{URL: tbench.UpstreamURL, Revision: revA, Tasks: hard.Tasks}}
	if got := harborPlan(s, 0); got == nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("tasks %+v, want %+v", got, want)
	}
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	if g := p.Benchmarks[0].Harbor; g == nil || g.Git == nil || g.Git.Revision != revA {
		t.Errorf("plan's tasks %+v", g)
	}

	s, _, err = tbLoad(t, "terminal-bench-hard-aa-split", `git_revision: "`+revA+`"`)
	if err != nil {
		t.Fatal(err)
	}
	if got := harborPlan(s, 0); got == nil || len(got.Git.Tasks) != 44 || strings.Join(got.Git.Unsolvable, ",") != "feal-differential-cryptanalysis,install-windows-xp,make-doom-for-mips,run-pdp11-code" {
		t.Errorf("the AA split: tasks %+v", got.Git)
	}

	s, _, err = tbLoad(t, "terminal-bench-v1", `git_revision: "`+revA+`", git_url: "/srv/mirrors/terminal-bench.git"`)
	if err != nil {
		t.Fatal(err)
	}
	if got := harborPlan(s, 0); got == nil || got.Git.URL != "/srv/mirrors/terminal-bench.git" || got.Git.Tasks != nil {
		t.Errorf("a mirror: tasks %+v", got.Git)
	}

	// A relative path is the recipe's, as its other paths are; URLs and
	// scp's host:path stay as written.
	for give, want := range map[string]string{
		"mirrors/tb.git":              "RECIPE/mirrors/tb.git",
		"../tb":                       "PARENT/tb",
		"git@github.com:laude/tb.git": "git@github.com:laude/tb.git",
		"https://example.org/tb.git":  "https://example.org/tb.git",
		"file:///srv/mirrors/tb.git":  "file:///srv/mirrors/tb.git",
	} {
		s, _, err := tbLoad(t, "terminal-bench-v1", `git_revision: "`+revA+`", git_url: "`+give+`"`)
		if err != nil {
			t.Fatal(err)
		}
		got := harborPlan(s, 0).Git.URL
		want = strings.NewReplacer("RECIPE", s.Dir, "PARENT", filepath.Dir(s.Dir)).Replace(want)
		if got != want {
			t.Errorf("git_url %q: the plan fetches %q, want %q", give, got, want)
		}
	}
}

// The benchmark hash covers the commit and the task list, not where the
// repository is fetched from.
func TestHarborGitHashes(t *testing.T) {
	hash := func(name, params string) string {
		t.Helper()
		_, h, err := tbLoad(t, name, params)
		if err != nil {
			t.Fatal(err)
		}
		return h.Benchmarks[name]
	}
	base := hash("terminal-bench-v1", `git_revision: "`+revA+`"`)
	if hash("terminal-bench-v1", `git_revision: "`+revA+`", git_url: "file:///mirror"`) != base {
		t.Error("a mirror changed the benchmark hash")
	}
	if hash("terminal-bench-v1", `git_revision: "`+revB+`"`) == base {
		t.Error("another commit left the benchmark hash unchanged")
	}
	if hash("terminal-bench-hard", `git_revision: "`+revA+`"`) == hash("terminal-bench-hard-aa-split", `git_revision: "`+revA+`"`) {
		t.Error("the -hard lists hash the same")
	}
}

// Without a pinned commit the tasks are whatever upstream holds today:
// refused, with how to pin one. A revision that is no commit's full hash
// is an error at the param.
func TestHarborGitRefusals(t *testing.T) {
	s, _, err := tbLoad(t, "terminal-bench-v1", "")
	if err != nil {
		t.Fatal(err)
	}
	errs := Unsupported(s)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "benchmarks[0].name: not supported yet: terminal-bench-v1 without a pinned commit (NeMo Evaluator clones the default branch's head of "+tbench.UpstreamURL+" at each run") || !strings.Contains(errs[0].Error(), "set params.git_revision") {
		t.Errorf("no revision: %v", errs)
	}
	for _, params := range []string{`git_revision: "main"`, `git_revision: "` + strings.ToUpper(revA) + `"`, `git_revision: 12`} {
		_, _, err := tbLoad(t, "terminal-bench-v1", params)
		if err == nil || !strings.Contains(err.Error(), "benchmarks[0].params.git_revision: expected a commit's full hash") {
			t.Errorf("%s: %v", params, err)
		}
	}
	docker := strings.Replace(tbRecipe, `sandbox: {type: "local"}`, `sandbox: {type: "docker", image: "ubuntu:24.04"}`, 1)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"r.cue": strings.NewReplacer("NAME", "terminal-bench-v1", "PARAMS", `git_revision: "`+revA+`"`).Replace(docker)})
	s, _, err = loadWithEnv(t, filepath.Join(dir, "r.cue"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The docker sandbox builds each converted Dockerfile on the node
	// (terminal_bench_docker.txtar runs one).
	if errs := Unsupported(s); len(errs) != 0 {
		t.Errorf("a docker sandbox: %v, want no refusal", errs)
	}
	// An ecs_fargate task runs a task's session from its image as docker
	// does (runtime/shard/agent.go taskImage): every converted Dockerfile
	// would fail its sample on the node.
	ecs := strings.Replace(tbRecipe, `sandbox: {type: "local"}`, `sandbox: {type: "ecs_fargate", cluster: "evals", subnets: ["subnet-1"], image: "python:3.12-slim", nel_run_image: "registry.example.org/nel:1"}`, 1)
	writeFiles(t, dir, map[string]string{"r.cue": strings.NewReplacer("NAME", "terminal-bench-v1", "PARAMS", `git_revision: "`+revA+`"`).Replace(ecs)})
	if s, _, err = loadWithEnv(t, filepath.Join(dir, "r.cue"), nil); err != nil {
		t.Fatal(err)
	}
	if errs := Unsupported(s); len(errs) != 1 || !strings.Contains(errs[0].Error(), "benchmarks[0].sandbox.type: not supported yet: terminal-bench-v1's tasks in an ecs_fargate sandbox with solver type tool_calling (their converted Dockerfiles are made on the node and must be built, which nel does there only in a docker sandbox") {
		t.Errorf("an ecs_fargate sandbox: %v", errs)
	}
	if _, _, err := tbLoad(t, "terminal-bench-v1", `git_revision: "`+revA+`", git_url: ""`); err == nil || !strings.Contains(err.Error(), "benchmarks[0].params.git_url: expected the URL or path of a git repository") {
		t.Errorf("an empty git_url: %v", err)
	}
	// A password or token in the URL would be written into the plan and
	// the job's files: secrets go by name, so it is refused; a user name
	// alone (ssh's git@) is no secret.
	for _, u := range []string{"https://user:s3cret@git.example.org/tb.git", "https://ghp_token@github.com/org/tb.git"} {
		_, _, err := tbLoad(t, "terminal-bench-v1", `git_revision: "`+revA+`", git_url: "`+u+`"`)
		if err == nil || !strings.Contains(err.Error(), "benchmarks[0].params.git_url: a mirror's URL with credentials in it") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "ghp_token") {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, _, err := tbLoad(t, "terminal-bench-v1", `git_revision: "`+revA+`", git_url: "ssh://git@git.example.org/tb.git"`); err != nil {
		t.Errorf("an ssh URL with a user name: %v", err)
	}
}

// A lock pins the commit where the recipe names none; where it names one,
// the lock must agree. The benchmark hash covers the locked commit.
func TestHarborGitLock(t *testing.T) {
	recipe := strings.NewReplacer("NAME", "terminal-bench-v1", "PARAMS", "").Replace(tbRecipe)
	unlocked, err := loadLocked(t, recipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := BenchmarkInputs(unlocked, 0)
	if err != nil {
		t.Fatal(err)
	}
	lock := func(rev string) *Lock {
		return &Lock{LockVersion: LockVersion, Datasets: []LockedBenchmark{{Benchmark: "terminal-bench-v1", Inputs: in, Revision: rev}}, Images: []LockedImage{}}
	}
	s, err := loadLocked(t, recipe, lock(revA))
	if err != nil {
		t.Fatal(err)
	}
	if got := harborPlan(s, 0); got == nil || got.Git.Revision != revA {
		t.Errorf("locked: tasks %+v, want the lock's commit", got)
	}
	if errs := Unsupported(s); len(errs) != 0 {
		t.Errorf("locked: refused %v", errs)
	}
	// The locked commit is in the benchmark hash: another is another
	// benchmark.
	hA, _, _ := ComputeHashes(s)
	other, err := loadLocked(t, recipe, lock(revB))
	if err != nil {
		t.Fatal(err)
	}
	hB, _, _ := ComputeHashes(other)
	if hA.Benchmarks["terminal-bench-v1"] == hB.Benchmarks["terminal-bench-v1"] {
		t.Error("locked at two commits: the same benchmark hash")
	}

	for _, tc := range []struct{ rev, want string }{
		{"", "r.lock.json: datasets.terminal-bench-v1: no commit for tasks built from a git repository"},
		{"main", "no commit for tasks built from a git repository"},
	} {
		if _, err := loadLocked(t, recipe, lock(tc.rev)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("lock %q: %v, want %q", tc.rev, err, tc.want)
		}
	}
	withRev := strings.NewReplacer("NAME", "terminal-bench-v1", "PARAMS", `git_revision: "`+revA+`"`).Replace(tbRecipe)
	s, err = loadLocked(t, withRev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in, err = BenchmarkInputs(s, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := loadLocked(t, withRev, lock(revB)); err == nil || !strings.Contains(err.Error(), "benchmarks[0]: params.git_revision is "+revA+", but the lock") {
		t.Errorf("a lock that disagrees: %v", err)
	}
}
