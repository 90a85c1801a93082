package compiler_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue/ast"

	"github.com/nel-eval/nel/compiler"
)

// compatDir holds nel's own configs that use every field and form NeMo
// Evaluator's published configs use (published-paths.txt lists them).
const compatDir = "../testdata/nemo-compat"

// compatFeatureIssue says, for each feature compile refuses in the
// compatibility configs ("not supported yet: FEATURE"), which issue adds
// it; docs/nemo-compat.md attributes the published configs the same way.
var compatFeatureIssue = map[string]string{
	// nmp_harbor by its name: NeMo reads its tasks from an NMP checkout
	// (not public) and docker-builds their base image from it, which nel
	// does not; harbor://NAME@VERSION and a converted folder compile.
	"solver type harbor on a benchmark other than harbor:// tasks": "issue 20",
	// NeMo clones Terminal-Bench v1's default branch unpinned; nel builds
	// the tasks on the node (both solvers) at the commit the recipe pins
	// in params.git_revision, and refuses the name without one.
	"terminal-bench-hard without a pinned commit": "none",
	"terminal-bench-v1 without a pinned commit":   "none",
	// NeMo uploads the skill into the task's container; the Harbor CLI
	// takes no such setting.
	"skill and skill_dir with solver type harbor": "none",
	// NeMo patches the OpenHands SDK's per-command timeout in the sandbox;
	// the Harbor CLI takes no such setting, and nel does not patch agents.
	"cmd_timeout with solver type harbor": "none",
	// The Harbor CLI gives its agent instruction.md; nel renders templates
	// for its own loop (tool_calling) only.
	"instruction_template with solver type harbor": "none",
	// Harbor takes an agent timeout override or the task's, not the larger.
	"timeout_strategy max with solver type harbor": "none",
	// The openclaw solver runs OpenClaw in a local (bubblewrap) session on
	// Harbor or byob tasks. PinchBench's tasks and graders live in NeMo's
	// private image; web search needs a key inside the sandbox; a
	// container session gives OpenClaw no route to nel-run's proxy yet.
	"the pinchbench benchmark":                             "none",
	"web_search_provider on the openclaw solver":           "none",
	"the openclaw solver in a sandbox of type ecs_fargate": "issue 20",
	// nel's ecs_fargate sandbox (issue 22) starts tasks from the settings
	// the recipe gives, or those SSM holds for its region; NeMo
	// Evaluator's CodeBuild image builds and its harbor solver on Fargate
	// are not nel's (the CodeBuild and ECR clients would grow nel-run; the
	// Harbor CLI needs docker), and nel_run_image is nel's own field.
	"an ecs_fargate sandbox without image":         "none",
	"an ecs_fargate sandbox without nel_run_image": "none",
	"ecr_repository":                               "none",
	"codebuild_build_timeout":                      "none",
	"solver type harbor in an ecs_fargate sandbox": "none",
	// The Harbor CLI starts task containers through a docker daemon.
	"solver type harbor in an apptainer sandbox": "none",
	// Gym's native protocol: items from a local JSONL, the agent's
	// responses API; nel speaks the evaluator protocol.
	"gym:// query parameters other than protocol=evaluator": "issue 21",
	"stateful sandboxes":             "issue 20",
	"benchmark source vlmevalkit://": "issue 19",
	"image_detail":                   "issue 19",
	// nel compiles where sbatch runs; no issue asks for submitting over SSH.
	"remote submission": "none",
	// nel reads Harbor tasks where the user put them; it downloads none
	// (the hashes cover their content, which must be there to hash).
	"a Harbor dataset that is not on this machine": "none",
}

// compatConfigs is what nel does today with each compatibility config: it
// compiles (refused is empty) or compile refuses exactly these features.
// When an issue lands a feature, this test fails and names the config to
// move; docs/nemo-compat.md changes with it.
var compatConfigs = []struct {
	file    string
	refused []string // sorted
	// invalid, when set, are the errors the config does not load with
	// (each file:line:col: path: message, in order): names NeMo's own
	// registry does not resolve either.
	invalid []string
}{
	{"chat_suite.yaml", nil, nil},
	{"harnesses.yaml", nil, nil},
	{"slurm_vllm.yaml", nil, nil},
	{"slurm_dynamo.yaml", nil, nil},
	{"loader_forms.yaml", nil, nil},
	{"slurm_fragments.yaml", []string{"remote submission"}, nil},
	{"agentic_hosted.yaml", []string{"an ecs_fargate sandbox without image", "an ecs_fargate sandbox without nel_run_image", "cmd_timeout with solver type harbor", "codebuild_build_timeout", "ecr_repository", "instruction_template with solver type harbor", "skill and skill_dir with solver type harbor", "solver type harbor in an ecs_fargate sandbox", "solver type harbor on a benchmark other than harbor:// tasks", "stateful sandboxes", "terminal-bench-hard without a pinned commit", "terminal-bench-v1 without a pinned commit", "timeout_strategy max with solver type harbor"}, nil},
	{"agentic_slurm.yaml", []string{"solver type harbor in an apptainer sandbox"}, nil},
	{"gym_tools.yaml", []string{"an ecs_fargate sandbox without nel_run_image", "gym:// query parameters other than protocol=evaluator", "solver type harbor on a benchmark other than harbor:// tasks", "the openclaw solver in a sandbox of type ecs_fargate", "the pinchbench benchmark", "web_search_provider on the openclaw solver"}, nil},
	{"vision.yaml", nil, nil},
	{"unknown_names.yaml", nil, []string{
		`unknown_names.yaml:18:11: benchmarks[0].name: unknown benchmark "swebench-multilingual"; built in: drop, gpqa, gsm8k, humaneval, ifeval, math500, mgsm, mmlu, mmlu_pro, simpleqa, triviaqa, xstest (nel list), or declare a benchmark of your own with byob (docs/byob.md); NeMo Evaluator has no environment "swebench-multilingual" either (its get_environment raises KeyError "Unknown environment" when the job starts); its tasks are the Harbor dataset harbor://swebench_multilingual@1.0: write playbook: swebench_multilingual, or name: "harbor://swebench_multilingual@1.0"`,
		`unknown_names.yaml:24:11: benchmarks[1].name: unknown benchmark "swebench-verified"; built in: drop, gpqa, gsm8k, humaneval, ifeval, math500, mgsm, mmlu, mmlu_pro, simpleqa, triviaqa, xstest (nel list), or declare a benchmark of your own with byob (docs/byob.md); NeMo Evaluator has no environment "swebench-verified" either (its get_environment raises KeyError "Unknown environment" when the job starts); its tasks are the Harbor dataset harbor://swebench-verified@1.0: write playbook: swebench_verified, or name: "harbor://swebench-verified@1.0"`,
		`unknown_names.yaml:34:11: benchmarks[2].name: unknown benchmark "research-bench"; built in: drop, gpqa, gsm8k, humaneval, ifeval, math500, mgsm, mmlu, mmlu_pro, simpleqa, triviaqa, xstest (nel list), or declare a benchmark of your own with byob (docs/byob.md); NeMo Evaluator has no environment "research-bench" either (its get_environment raises KeyError "Unknown environment" when the job starts)`,
		`unknown_names.yaml:43:11: benchmarks[3].name: unknown benchmark "swebench-verified"; built in: drop, gpqa, gsm8k, humaneval, ifeval, math500, mgsm, mmlu, mmlu_pro, simpleqa, triviaqa, xstest (nel list), or declare a benchmark of your own with byob (docs/byob.md); NeMo Evaluator has no environment "swebench-verified" either (its get_environment raises KeyError "Unknown environment" when the job starts); its tasks are the Harbor dataset harbor://swebench-verified@1.0: write playbook: swebench_verified, or name: "harbor://swebench-verified@1.0"`,
	}},
}

// compatEnv is the environment the configs read: COMPAT_REGION is left
// unset so that its ${VAR:-default} takes the default. Secrets (api_key,
// container_env) stay references and need no value to compile; the API
// key has one so that the test can see it is never written.
var compatEnv = map[string]string{
	"COMPAT_ROOT":         "/lab/shared",
	"COMPAT_REVIEWER_URL": "https://review.example.org/v1/chat/completions",
	"COMPAT_API_KEY":      compatSecret,
}

// compatSecret is the API key's value: no compiled script may contain it.
const compatSecret = "sk-compat-0f1e2d3c-never-in-a-script"

// TestNeMoCompat: nel's own configs use every key path, value kind and
// form of NeMo Evaluator's published configs (published-paths.txt); each
// validates, and compiles to a script bash and shellcheck accept or is
// refused with exactly its expected "not supported yet" features.
func TestNeMoCompat(t *testing.T) {
	t.Chdir(compatDir)
	t.Setenv("HOME", t.TempDir()) // no ~/.config/nemo-evaluator/conf fragments
	compatListed(t)
	used := map[string]bool{}
	for _, c := range compatConfigs {
		compatUses(t, c.file, used)
	}
	for _, line := range readInventory(t, "published-paths.txt") {
		if !used[line] {
			t.Errorf("published-paths.txt: %q: no config in testdata/nemo-compat uses it", line)
		}
	}
	l, err := compiler.NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	l.LookupEnv = func(name string) (string, bool) {
		v, ok := compatEnv[name]
		return v, ok
	}
	for _, c := range compatConfigs {
		t.Run(c.file, func(t *testing.T) {
			for _, f := range c.refused {
				if compatFeatureIssue[f] == "" {
					t.Errorf("feature %q has no issue in compatFeatureIssue", f)
				}
			}
			if c.invalid != nil {
				compatInvalid(t, l, c.file, c.invalid)
				return
			}
			s := compatValidate(t, l, c.file)
			compatCompile(t, s, c.file, c.refused)
		})
	}
}

// compatListed: every config in the directory has its expected outcome
// in compatConfigs, so none is left untested.
func compatListed(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, c := range compatConfigs {
		listed = append(listed, c.file)
	}
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Fatalf("testdata/nemo-compat has %q, compatConfigs lists %q", files, listed)
	}
}

// compatInvalid does what nel validate does and wants exactly the errors
// want.
func compatInvalid(t *testing.T, l *compiler.Loader, file string, want []string) {
	t.Helper()
	_, err := l.LoadFile(file, nil)
	if err == nil {
		t.Fatalf("validate: no error, want %q", want)
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("validate:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// compatValidate does what nel validate does and wants no error.
func compatValidate(t *testing.T, l *compiler.Loader, file string) *compiler.Source {
	t.Helper()
	s, err := l.LoadFile(file, nil)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	if _, _, err := compiler.ComputeHashes(s); err != nil {
		t.Fatalf("hash: %v", err)
	}
	if _, errs := compiler.CheckData(context.Background(), s); len(errs) > 0 {
		t.Fatalf("validate data: %v", errs)
	}
	return s
}

// compatCompile compiles for SLURM and checks the outcome against refused.
func compatCompile(t *testing.T, s *compiler.Source, file string, refused []string) {
	t.Helper()
	out, err := compiler.Compile(s, compiler.CompileOptions{
		Target: "slurm", NelVersion: "test", NelRun: goldenNelRun, NelRunSHA256: goldenSHA256,
		Reproduce: "nel compile -t slurm " + file,
	})
	var errs compiler.Errors
	switch {
	case err == nil && len(refused) == 0:
		checkScript(t, file, out)
		if bytes.Contains(out, []byte(compatSecret)) {
			t.Errorf("the script holds the value of COMPAT_API_KEY")
		}
		return
	case err == nil:
		t.Fatalf("compiles now, and compile refused %q before: move it to the configs that compile (refused: nil) and update docs/nemo-compat.md", refused)
	case !errors.As(err, &errs):
		t.Fatalf("compile: %v", err)
	}
	var got []string
	for _, e := range errs {
		f, ok := notSupportedFeature(e.Msg)
		if !ok {
			t.Fatalf("compile: %v (want only \"not supported yet\" errors)", e)
		}
		if !slices.Contains(got, f) {
			got = append(got, f)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, refused) {
		t.Errorf("compile refuses %q, want %q: when a feature lands, update this config's refused list and docs/nemo-compat.md", got, refused)
	}
}

// notSupportedFeature is the feature a "not supported yet: FEATURE (why);
// hint" message names.
func notSupportedFeature(msg string) (string, bool) {
	_, f, ok := strings.Cut(msg, "not supported yet: ")
	if !ok {
		return "", false
	}
	f, _, _ = strings.Cut(f, "; ")
	f, _, _ = strings.Cut(f, " (")
	return f, true
}

// readInventory returns the path, value and form lines of an inventory,
// comments dropped.
func readInventory(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		kind, _, _ := strings.Cut(line, " ")
		if kind != "path" && kind != "value" && kind != "form" {
			t.Fatalf("%s:%d: %q: expected path, value or form", file, n, line)
		}
		out = append(out, line)
	}
	if len(out) < 100 {
		t.Fatalf("%s: only %d lines", file, len(out))
	}
	return out
}

// compatFreeMaps are the mappings whose keys the user chooses: the
// inventory writes them as *.
var compatFreeMaps = map[string]bool{
	"services": true, "sandboxes": true, "node_pools": true,
	"extra_env": true, "env_vars": true, "container_env": true, "extra_headers": true,
}

// compatUses adds to used the inventory lines a config uses: the paths and
// values of its composed syntax (what it writes, before the schema fills
// defaults in), and the forms of every file it was composed from.
func compatUses(t *testing.T, file string, used map[string]bool) {
	t.Helper()
	x := parseCompat(t, file)
	composed, files, err := compiler.Compose(file, x)
	if err != nil {
		t.Fatalf("compose %s: %v", file, err)
	}
	compatWalk(composed, "", "", used)
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			continue // one of nel's built-in fragments
		}
		compatForms(parseCompat(t, f), used)
	}
}

func parseCompat(t *testing.T, file string) ast.Expr {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	x, err := compiler.ParseData(file, src)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	return x
}

// compatWalk records the generalised path of every field under x, which
// is at path (the field key, its name).
func compatWalk(x ast.Expr, path, key string, used map[string]bool) {
	switch x := x.(type) {
	case *ast.StructLit:
		for _, d := range x.Elts {
			f, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			name, _, _ := ast.LabelName(f.Label)
			q := name
			if compatFreeMaps[key] {
				q = "*"
			}
			if path != "" {
				q = path + "." + q
			}
			used["path "+q] = true
			compatValue(q, name, f.Value, used)
			compatWalk(f.Value, q, name, used)
		}
	case *ast.ListLit:
		for _, e := range x.Elts {
			if s, ok := compiler.StringOf(e); ok && path == "output.export" {
				used["value output.export[]="+s] = true
			}
			compatWalk(e, path+"[]", "", used)
		}
	}
}

var endpointPathRE = regexp.MustCompile(`^https?://[^/]+.*/(chat/)?completions$`)

// compatValue records the value kinds and forms a field's value shows.
func compatValue(q, name string, v ast.Expr, used map[string]bool) {
	s, isStr := compiler.StringOf(v)
	_, isStruct := v.(*ast.StructLit)
	switch {
	case q == "benchmarks[].sandbox" && isStr:
		used["form sandbox-by-name"] = true
	case q == "benchmarks[].sandbox" && isStruct:
		used["form sandbox-inline"] = true
	case q == "benchmarks[].playbook":
		used["form playbook"] = true
	case !isStr:
	case name == "type" || name == "protocol" || strings.HasSuffix(q, "interceptors[].name"):
		used[fmt.Sprintf("value %s=%s", q, s)] = true
	case q == "benchmarks[].name":
		if scheme, _, ok := strings.Cut(s, "://"); ok {
			s = scheme + "://*"
		}
		used["value benchmarks[].name="+s] = true
	case name == "url" && !strings.HasPrefix(s, "$") && endpointPathRE.MatchString(s):
		used["form url-endpoint-path"] = true
	case name == "url" && !strings.HasPrefix(s, "$"):
		used["form url-base"] = true
	case name == "api_key" && strings.HasPrefix(s, "${"):
		used["form secret-ref"] = true
	}
}

var refRE = regexp.MustCompile(`(\$?)\$\{([^}]*)\}`)

// compatForms records the loader forms one file (as written) uses: its
// defaults entries, top-level variables and ${…} references.
func compatForms(x ast.Expr, used map[string]bool) {
	if st, ok := x.(*ast.StructLit); ok {
		for _, d := range st.Elts {
			f, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			name, _, _ := ast.LabelName(f.Label)
			switch {
			case name == "defaults":
				compatDefaults(f.Value, used)
			case strings.HasPrefix(name, "_"):
				used["form _vars"] = true
			}
		}
	}
	ast.Walk(x, func(n ast.Node) bool {
		e, _ := n.(ast.Expr)
		s, ok := compiler.StringOf(e)
		for _, m := range refRE.FindAllStringSubmatch(s, -1) {
			switch {
			case !ok:
			case m[1] != "":
				used["form $${VAR}"] = true
			case strings.HasPrefix(m[2], "."):
				used["form ${.path}"] = true
			case strings.Contains(m[2], ":-"):
				used["form ${VAR:-default}"] = true
			default:
				used["form ${VAR}"] = true
			}
		}
		return true
	}, nil)
}

func compatDefaults(x ast.Expr, used map[string]bool) {
	list, ok := x.(*ast.ListLit)
	if !ok {
		return
	}
	for _, e := range list.Elts {
		s, isStr := compiler.StringOf(e)
		group, _, grouped := strings.Cut(s, "/")
		switch {
		case !isStr:
			if st, ok := e.(*ast.StructLit); ok && len(st.Elts) == 1 {
				if f, ok := st.Elts[0].(*ast.Field); ok {
					if name, _, _ := ast.LabelName(f.Label); name == "_base_" {
						used["form _base_"] = true
					}
				}
			}
		case s == "_self_":
			used["form _self_"] = true
		case grouped:
			used["form defaults-group/name:"+group] = true
		default:
			used["form defaults-plain-name"] = true
		}
	}
}
