package compiler

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shellquote"
	"github.com/nel-eval/nel/templates"
)

// harnessStep is how the job runs a harness benchmark: the harness in its
// image under Pyxis, then nel-run ingest. Every value is pre-quoted or
// plain.
type harnessStep struct {
	Key, Kind, Image    string
	Dir, Log, Shard     string // paths under $NEL_OUT, inside double quotes
	Config, ConfigDelim string
	ConfigFile          string
	// Proxy is nel-run proxy's config (JSON) when the step runs behind
	// its service's chain, written to ProxyFile beside Config.
	Proxy, ProxyDelim, ProxyFile string
	Env                          []string // complete shell statements
	SrunFlags, Pyxis, Cmd        string
}

// The script run in the harness's image (bash -c SCRIPT nel-harness ARGV):
// the key under the names the harnesses read it from, $NEL_HARNESS_URL put
// in for harnessURLRef in every argument (as text: nothing is evaluated),
// then the harness, from its folder.
const harnessPrelude = `set -eu
if [ -n "${NEL_HARNESS_API_KEY:-}" ]; then
  export OPENAI_API_KEY="$NEL_HARNESS_API_KEY" NVIDIA_API_KEY="$NEL_HARNESS_API_KEY" NEMO_API_KEY="$NEL_HARNESS_API_KEY"
fi
u='` + harnessURLRef + `'
args=()
for a in "$@"; do args+=("${a//"$u"/"$NEL_HARNESS_URL"}"); done
cd ` + harnessInside + `
`

// harnessScript is a kind's own lines after the prelude. An eval-factory
// image gets its run_config with the URL filled in, runs nemo-evaluator
// (eval-factory in older images), and its results.yml is converted to
// JSON (runtime/harness.EvalFactoryResults) with the image's Python, so
// that nel-run reads no YAML.
func harnessScript(kind string) string {
	switch kind {
	case "lm-eval":
		return `exec "${args[@]}"
`
	case "skills":
		return `ns prepare_data "$NEL_HARNESS_TASK" || echo "nel: ns prepare_data $NEL_HARNESS_TASK failed; using the data in the image" >&2
exec "${args[@]}"
`
	case "container":
		return `python3 -c 'import json, os
c = json.load(open("` + harnessConfigFile + `"))
e = c["target"]["api_endpoint"]
e["url"] = e["url"].replace("` + harnessURLRef + `", os.environ["NEL_HARNESS_URL"])
json.dump(c, open("run_config.yaml", "w"), indent=2)'
command -v "${args[0]}" >/dev/null 2>&1 || args[0]=eval-factory
"${args[@]}"
python3 -c 'import json, yaml; json.dump(yaml.safe_load(open("results.yml")), open("results.json", "w"), indent=2)'
`
	case "vlmevalkit":
		return vlmevalkitScript
	case harborKind:
		return harborScript
	}
	return ""
}

// harnessSteps lays out the harness benchmarks' steps, by benchmark key.
func (j *job) harnessSteps(s *Source, p *plan.Plan) {
	for i, b := range p.Benchmarks {
		if b.Harness == nil {
			continue
		}
		if j.Harness == nil {
			j.Harness = map[string]harnessStep{}
		}
		rb := s.Recipe.Benchmarks[i]
		j.Harness[b.Key] = j.harnessStep(s.Recipe, p, b, rb)
		for _, k := range sortedKeys(rb.Solver.EnvVars) {
			if ref, ok := parseWholeEnvRef(rb.Solver.EnvVars[k]); ok && ref.Default == nil {
				j.Secrets = append(j.Secrets, secret{Name: ref.Name, Where: fmt.Sprintf("benchmarks[%d].solver.env_vars.%s", i, k)})
			}
		}
	}
	slices.SortStableFunc(j.Secrets, func(a, b secret) int { return strings.Compare(a.Name, b.Name) })
	j.Secrets = slices.CompactFunc(j.Secrets, func(a, b secret) bool { return a.Name == b.Name })
}

func (j *job) harnessStep(r *Recipe, p *plan.Plan, b plan.Benchmark, rb *Benchmark) harnessStep {
	h := b.Harness
	st := harnessStep{
		Key: b.Key, Kind: h.Kind, Image: h.Image,
		Dir:   j.Run.Harness(b.Dir),
		Log:   j.Run.HarnessLog(b.Dir),
		Shard: j.Run.Shard(b.Dir, 0, 1),
	}
	if h.Config != "" {
		st.Config, st.ConfigDelim = h.Config, templates.HeredocDelimiter(h.Config, "NEL_RUN_CONFIG_EOF")
		st.ConfigFile = harnessConfigFile
	}
	flags := []string{"--overlap", "--nodes=1", "--ntasks=1"}
	if j.Het {
		flags = append(flags, "--het-group="+strconv.Itoa(j.EvalGroup))
	}
	st.SrunFlags = strings.Join(flags, " ")
	var names []string
	st.Env, names = harnessEnv(r, p, b, rb)
	if dir := harborTasksDir(p.RecipeDir, rb); dir != "" {
		st.Env = append(st.Env, harborTasksEnv+"=$(cd "+shellquote.Quote(dir)+" && pwd) || nel_fail "+shellquote.Quote("cannot enter the Harbor dataset "+dir),
			"export "+harborTasksEnv)
		names = append(names, harborTasksEnv)
	} else if rb.harborGit {
		st.Env = append(st.Env, harborTasksEnv+`=$("$NEL_RUN" harbor-tasks --plan "$NEL_PLAN" --benchmark `+shellquote.Quote(b.Key)+") || nel_fail "+shellquote.Quote("cannot make the Harbor tasks of "+b.Key+" (see the error above)"),
			"export "+harborTasksEnv)
		names = append(names, harborTasksEnv)
	}
	hp, proxied := harnessProxyOf(r, p, b)
	var proxy *harnessProxy
	if proxied {
		proxy = &hp
	}
	st.Pyxis = harnessPyxis(r.Cluster, rb, h, names, proxy)
	st.Cmd = "bash -c " + shellquote.Quote(harnessPrelude+harnessScript(h.Kind)) + " nel-harness " + shellquote.Join(h.Argv)
	if proxied {
		st.wrapProxy(hp)
	}
	return st
}

// harnessEnv returns the statements that export the harness's endpoint,
// key (by name: the value stays in the environment) and the container
// solver's env_vars, and the names they export; and those that fill in the
// servers' addresses a container's params name (serviceref.go).
func harnessEnv(r *Recipe, p *plan.Plan, b plan.Benchmark, rb *Benchmark) (exports, names []string) {
	var sv plan.Service
	for _, x := range p.Services {
		if x.Name == b.Solver.Service {
			sv = x
		}
	}
	if sv.Managed {
		exports = append(exports, `export NEL_HARNESS_URL="$`+sv.URLEnv+`"`)
	} else {
		exports = append(exports, "export NEL_HARNESS_URL="+shellquote.Quote(plan.BaseURL(sv.URL)))
	}
	names = append(names, "NEL_HARNESS_URL")
	env := []plan.EnvVar{}
	if sv.APIKey != nil {
		env = append(env, plan.EnvVar{Name: "NEL_HARNESS_API_KEY", From: sv.APIKey})
	}
	for _, e := range append(env, harnessExtraEnv(b.Harness, rb)...) {
		names = append(names, e.Name)
		exports = append(exports, exportEnv(e))
	}
	refs, keys := serviceRefSteps(r, rb)
	return append(exports, refs...), append(names, keys...)
}

// harnessExtraEnv is the harness's environment besides its endpoint and
// key: the task (skills:// prepares its data by name) and the container
// solver's env_vars, a ${VAR} value as a reference.
func harnessExtraEnv(h *plan.Harness, rb *Benchmark) []plan.EnvVar {
	var env []plan.EnvVar
	switch h.Kind {
	case "skills":
		env = append(env, plan.EnvVar{Name: "NEL_HARNESS_TASK", Value: h.Task})
	case harborKind:
		// The harness's folder on the node, which the step mounts at the
		// same path too: Harbor bind-mounts each trial's folder into the
		// task's container through the node's docker daemon, which knows
		// the node's paths, not the container's.
		env = append(env, plan.EnvVar{Name: harborJobsDirEnv, From: &plan.EnvRef{Name: "nel_hdir"}})
	}
	for _, k := range sortedKeys(rb.Solver.EnvVars) {
		e := plan.EnvVar{Name: k, Value: rb.Solver.EnvVars[k]}
		if ref, ok := parseWholeEnvRef(e.Value); ok {
			e = plan.EnvVar{Name: k, From: &plan.EnvRef{Name: ref.Name, Default: ref.Default}}
		}
		env = append(env, e)
	}
	return env
}

// LocalHarness is what nel run needs, besides the plan, to run benchmark
// i's harness in its image with docker or apptainer: the same script the
// SLURM step runs (bash -c Script nel-harness Argv...), the environment
// besides NEL_HARNESS_URL and NEL_HARNESS_API_KEY, and the mounts
// (host:container) besides the harness's folder.
type LocalHarness struct {
	// Inside is where the harness's folder is mounted in the image;
	// ConfigFile is the name Plan's Harness.Config is written to there.
	Inside, ConfigFile string
	Script             string
	Env                []plan.EnvVar
	Mounts             []string
	// HostPathEnv, when set, names the variable that gets the harness's
	// folder's host path, where it is mounted too (the Harbor CLI's jobs
	// dir: the docker daemon it starts task containers with knows host
	// paths only).
	HostPathEnv string
	// TasksDir is a local Harbor dataset's folder, absolute: mounted
	// read-only at its own path and named in TasksEnv.
	TasksDir, TasksEnv string
	// TasksGit is set when the tasks come from a git repository: nel run
	// makes their folder in the run folder (tbench.Prepare), which is
	// then TasksDir.
	TasksGit *plan.HarborGit
	// TasksDataset names the folder TasksGit's tasks are made in.
	TasksDataset string
}

// HarnessLocal returns benchmark i's LocalHarness; ok is false when it is
// not run by a harness.
func HarnessLocal(s *Source, i int) (lh LocalHarness, ok bool) {
	rb := s.Recipe.Benchmarks[i]
	kind, task, _, ok := harnessOf(rb)
	if !ok {
		return lh, false
	}
	lh.Inside, lh.ConfigFile = harnessInside, harnessConfigFile
	lh.Script = harnessPrelude + harnessScript(kind)
	lh.Mounts = solverMounts(rb)
	if dir := harborTasksDir(s.Dir, rb); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			abs = dir // Abs fails only without a working directory
		}
		lh.TasksDir, lh.TasksEnv = abs, harborTasksEnv
	}
	if t := harborPlan(s, i); rb.harborGit && t != nil {
		lh.TasksGit, lh.TasksDataset, lh.TasksEnv = t.Git, t.Dataset, harborTasksEnv
	}
	for _, e := range harnessExtraEnv(&plan.Harness{Kind: kind, Task: task}, rb) {
		if e.Name == harborJobsDirEnv {
			lh.HostPathEnv = e.Name
			lh.Mounts = append(lh.Mounts, harborDockerSocket+":"+harborDockerSocket)
			continue
		}
		lh.Env = append(lh.Env, e)
	}
	return lh, true
}

// solverMounts are a container solver's mounts, host:container, by host
// path.
func solverMounts(rb *Benchmark) []string {
	var out []string
	for _, host := range sortedKeys(rb.Solver.Mounts) {
		out = append(out, host+":"+rb.Solver.Mounts[host])
	}
	return out
}

// exportEnv is the statement that exports e: a literal quoted, a
// reference by name.
func exportEnv(e plan.EnvVar) string {
	switch {
	case e.From == nil:
		return "export " + e.Name + "=" + shellquote.Quote(e.Value)
	case e.From.Default == nil:
		return "export " + e.Name + `="$` + e.From.Name + `"`
	default:
		return fmt.Sprintf(`if [ -n "${%s+x}" ]; then export %s="$%s"; else export %s=%s; fi`,
			e.From.Name, e.Name, e.From.Name, e.Name, shellquote.Quote(*e.From.Default))
	}
}

// harnessPyxis are the srun flags that run the harness in its image: the
// cluster's mounts, the harness's folder, the solver's mounts, and what
// the proxy needs when the step runs behind one (hp not nil): nel-run
// itself, and its links' folders.
func harnessPyxis(cl Cluster, rb *Benchmark, h *plan.Harness, envNames []string, hp *harnessProxy) string {
	mounts := "--container-mounts="
	if len(cl.ContainerMounts) > 0 {
		mounts += shellquote.Quote(strings.Join(cl.ContainerMounts, ",") + ",")
	}
	hmount := `"$nel_hdir:` + harnessInside
	if h.Kind == harborKind { // a constant path: safe inside double quotes
		hmount += "," + harborDockerSocket + ":" + harborDockerSocket + ",$nel_hdir:$nel_hdir"
		if rb.harborDir != "" || rb.harborGit {
			hmount += ",$" + harborTasksEnv + ":$" + harborTasksEnv + ":ro"
		}
	}
	if hp != nil { // shell text for inside the double quotes
		hmount += proxyBinMount
	}
	mounts += hmount + `"`
	if sm := solverMounts(rb); len(sm) > 0 {
		mounts += shellquote.Quote("," + strings.Join(sm, ","))
	}
	if hp != nil {
		for _, d := range hp.Dirs {
			mounts += "," + shellquote.Quote(d+":"+d)
		}
	}
	f := []string{"--container-image=" + shellquote.Quote(h.Image), mounts}
	if cl.MountHome {
		f = append(f, "--container-mount-home")
	} else {
		f = append(f, "--no-container-mount-home")
	}
	f = append(f, "--container-env="+strings.Join(envNames, ","))
	return strings.Join(f, " ")
}
