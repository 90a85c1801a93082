package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// A v1 config with execution: lepton/default is written for Lepton, a
// cloud platform nel does not submit to. Its methodology (the deployment,
// the tasks and their parameters) is the same as on SLURM, so nel reads
// it as the execution: slurm config it means and compiles that: the
// launcher's Lepton executor (main-legacy, executors/lepton) builds each
// endpoint from deployment.* and deployment.lepton_config, and each
// evaluation job from execution.lepton_platform.tasks. What has a SLURM
// meaning is mapped:
//
//   - the endpoint's resource shape (gpu.<N>x<accelerator>) is the job's
//     GPUs per node (--gres=gpu:N) on one node; with deployment none, the
//     evaluation tasks' shape is;
//   - Lepton secret references ({value_from: {secret_name_ref: NAME}})
//     become the environment variable NAME on the node, passed by name as
//     host:NAME is, never its value; plain values are literals;
//   - vLLM and SGLang on Lepton serve checkpoint_path as their command's
//     model argument (a Hugging Face id there as often as a path): a path
//     is mounted as on SLURM, an id is served as hf_model_handle;
//   - the endpoint's readiness timeout is the server's startup timeout.
//
// The rest is the platform's own (node groups, replicas and autoscaling,
// queue priority, image pull secrets, endpoint names and tokens, Lepton
// storage mounts) and is named in one warning. A SLURM account, partition,
// walltime or mounts may be added with -O execution.account=… (and so on);
// without them sbatch takes the cluster's defaults.

// leptonShapeRE is a Lepton GPU resource shape: gpu.1xh200,
// gpu.8xh100-80gb.
var leptonShapeRE = regexp.MustCompile(`^gpu\.([1-9][0-9]*)x([a-z0-9][a-z0-9-]*)$`)

// leptonDeployments are the deployment types the Lepton executor starts.
var leptonDeployments = []string{"vllm", "sglang", "nim", "none"}

// leptonOnly are the settings that mean something on Lepton only, in the
// order the warning names them.
var leptonOnly = []string{
	"execution.env_var_names", // not read by the Lepton executor either
	"execution.evaluation_tasks.resource_shape",
	"execution.evaluation_tasks.timeout",
	"execution.evaluation_tasks.use_shared_storage",
	"execution.lepton_platform.deployment.node_group",
	"execution.lepton_platform.deployment.platform_defaults",
	"execution.lepton_platform.tasks.node_group",
	"execution.lepton_platform.tasks.api_tokens",
	"execution.lepton_platform.tasks.mounts",
	"execution.lepton_platform.tasks.image_pull_secrets",
	"deployment.lepton_config.endpoint_name",
	"deployment.lepton_config.min_replicas",
	"deployment.lepton_config.max_replicas",
	"deployment.lepton_config.auto_scaler",
	"deployment.lepton_config.api_tokens",
	"deployment.lepton_config.api_token",
	"deployment.lepton_config.health",
	"deployment.lepton_config.mounts",
}

// label drops a config's top-level name, a label neither the launcher nor
// nel reads (the Lepton examples write one), with a warning.
func (t *v1) label() {
	if f := removeField(t.root, "name"); f != nil {
		t.warn(f, []any{"name"}, "not read: a label the launcher does not read either (nel names a run by its output folder)")
	}
}

// lepton rewrites execution: lepton as the execution: slurm section it
// means (see above); other configs are left as they are.
func (t *v1) lepton() {
	exf := fieldOf(t.root, "execution")
	ex, _ := t.get("execution").(*ast.StructLit)
	if ex == nil || t.str("execution.type") != "lepton" {
		return
	}
	t.leptonKnown(ex)
	typ := t.str("deployment.type")
	if !slices.Contains(leptonDeployments, typ) {
		t.refuse(t.get("deployment.type"), []any{"deployment", "type"}, "not supported: deployment %s with execution lepton (the launcher's Lepton executor deploys %s)", typ, strings.Join(leptonDeployments, ", "))
	}
	// The warning reads the Lepton settings before the rewrite moves
	// lepton_config out of the deployment.
	warnAt, left := t.leptonLeftOut()
	out := obj(fld("type", stringAt("slurm", t.get("execution.type").Pos())), fld("output_dir", getIn(ex, "output_dir")),
		fld("num_nodes", ast.NewLit(token.INT, "1")))
	for _, k := range []string{"account", "partition", "walltime", "mounts"} {
		appendField(out, k, getIn(ex, k))
	}
	appendField(out, "endpoint_readiness_timeout", getIn(ex, "lepton_platform.deployment.endpoint_readiness_timeout"))
	shape := "execution.evaluation_tasks.resource_shape"
	if typ != "none" {
		shape = "deployment.lepton_config.resource_shape"
	}
	gpu := t.leptonGres(out, shape)
	left = slices.DeleteFunc(left, func(p string) bool { return p == shape }) // read: the job's GPUs
	switch {
	case typ == "none":
	case slices.Contains(leptonDeployments, typ):
		t.leptonDeployment(typ)
	default: // refused above; lepton_config is no deployment's field
		removeField(structOr(t.get("deployment")), "lepton_config")
	}
	t.leptonTaskEnv()
	exf.Value = out
	msg := "runs as a SLURM job: nel does not submit to Lepton; it compiles this config's deployment and tasks to sbatch, with the cluster's default account and partition unless -O execution.account=… or execution.partition=… gives them"
	if gpu != "" {
		msg += fmt.Sprintf(" (%s's GPU model, %s, is the partition's to give)", shape, gpu)
	}
	if typ != "none" {
		msg += "; the tasks share one server, where Lepton deploys an endpoint per task"
	}
	if len(left) > 0 {
		msg += "; left out, Lepton's own: " + strings.Join(left, ", ")
	}
	t.warnings = append(t.warnings, errAt(warnAt, t.path, []any{"execution"}, "%s", msg)...)
}

// leptonKnown refuses the fields of a Lepton execution section nel does
// not know: Lepton's, and the SLURM settings -O may add.
func (t *v1) leptonKnown(ex *ast.StructLit) {
	at := []any{"execution"}
	t.known(ex, at, "type", "output_dir", "env_var_names", "evaluation_tasks", "lepton_platform",
		"account", "partition", "walltime", "mounts")
	t.known(structOr(getIn(ex, "evaluation_tasks")), append(at, "evaluation_tasks"), "resource_shape", "timeout", "use_shared_storage")
	t.known(structOr(getIn(ex, "lepton_platform")), append(at, "lepton_platform"), "deployment", "tasks")
	t.known(structOr(getIn(ex, "lepton_platform.deployment")), append(at, "lepton_platform", "deployment"),
		"node_group", "endpoint_readiness_timeout", "platform_defaults")
	t.known(structOr(getIn(ex, "lepton_platform.tasks")), append(at, "lepton_platform", "tasks"),
		"node_group", "env_vars", "mounts", "image_pull_secrets", "api_tokens")
	if getIn(ex, "mounts") != nil {
		t.mountsKnown(at)
	}
}

// leptonLeftOut names the Lepton-only settings the config has, and where
// the warning that names them points: the first of them written in the
// config itself (the packaged defaults' are named too, but a position in
// nel's copy of them would help no one).
func (t *v1) leptonLeftOut() (warnAt token.Pos, left []string) {
	for _, p := range leptonOnly {
		v := t.get(p)
		if v == nil || isEmpty(v) {
			continue
		}
		left = append(left, p)
		if !warnAt.IsValid() && v.Pos().Filename() == t.path {
			warnAt = v.Pos()
		}
	}
	return warnAt, left
}

// isEmpty reports whether x is an empty mapping or list.
func isEmpty(x ast.Expr) bool {
	switch n := x.(type) {
	case *ast.StructLit:
		return len(n.Elts) == 0
	case *ast.ListLit:
		return len(n.Elts) == 0
	}
	return false
}

// leptonGres sets the job's GPUs per node from the resource shape at
// shape, and returns the shape's accelerator ("" for a CPU shape or
// none). A shape nel cannot read as GPUs is refused.
func (t *v1) leptonGres(out *ast.StructLit, shape string) string {
	v := t.get(shape)
	if v == nil {
		return ""
	}
	s, _ := stringOf(v)
	if strings.HasPrefix(s, "cpu.") {
		return ""
	}
	m := leptonShapeRE.FindStringSubmatch(s)
	if m == nil {
		t.refuse(v, anyPath(shape), "not supported: resource shape %q (nel reads gpu.<N>x<accelerator>, such as gpu.8xh100-80gb, as N GPUs per node, and cpu.<size> as none)", s)
		return ""
	}
	out.Elts = append(out.Elts, fld("gres", stringAt("gpu:"+m[1], v.Pos())))
	return m[2]
}

// leptonDeployment reads deployment.lepton_config (which the Lepton
// executor requires of a deployment) into the deployment as SLURM reads
// it, and takes the config out: its resource shape is read by then.
func (t *v1) leptonDeployment(typ string) {
	d, _ := t.get("deployment").(*ast.StructLit)
	at := []any{"deployment"}
	lc := removeField(d, "lepton_config")
	if lc == nil || isNull(lc.Value) {
		t.refuse(d, append(at, "lepton_config"), "missing: the launcher's Lepton executor requires deployment.lepton_config (its resource_shape is the job's GPUs)")
		return
	}
	cfg := structOr(lc.Value)
	t.known(cfg, append(at, "lepton_config"), "endpoint_name", "resource_shape", "min_replicas", "max_replicas",
		"auto_scaler", "api_tokens", "api_token", "envs", "mounts", "health")
	t.known(structOr(getIn(cfg, "mounts")), append(at, "lepton_config", "mounts"), "enabled", "cache_path", "mount_path")
	if env := t.leptonEnv(getIn(cfg, "envs"), append(at, "lepton_config", "envs")); env != nil {
		setField(d, "env_vars", deepMerge(env, structOr(getIn(d, "env_vars"))))
	}
	if c := getIn(d, "command"); c != nil {
		t.refuse(c, append(at, "command"), "the launcher's Lepton executor builds the server's command and does not read deployment.command: leave it out, or use execution: slurm/default")
	}
	if typ == "nim" {
		return
	}
	// Lepton's vLLM and SGLang command lines pass checkpoint_path as the
	// model and take the GPU memory share from extra_args only.
	if ck := getIn(d, "checkpoint_path"); ck != nil {
		if s, ok := stringOf(ck); ok && s != "???" && !strings.HasPrefix(s, "/") && getIn(d, "hf_model_handle") == nil {
			removeField(d, "checkpoint_path")
			setField(d, "hf_model_handle", ck)
		}
	}
	if g := fieldOf(d, "gpu_memory_utilization"); g != nil {
		removeField(d, "gpu_memory_utilization")
		if !strings.HasPrefix(g.Value.Pos().Filename(), builtinPrefix) { // the config's or -O's, not the packaged default
			t.warn(g.Value, append(at, "gpu_memory_utilization"), "not used: the launcher's Lepton server command does not pass it (write --gpu-memory-utilization in extra_args)")
		}
	}
}

// leptonTaskEnv adds execution.lepton_platform.tasks.env_vars to the
// evaluation's env_vars, whose own win.
func (t *v1) leptonTaskEnv() {
	env := t.leptonEnv(t.get("execution.lepton_platform.tasks.env_vars"), []any{"execution", "lepton_platform", "tasks", "env_vars"})
	if env == nil {
		return
	}
	ev, _ := t.get("evaluation").(*ast.StructLit)
	if ev == nil {
		return // benchmarks() says evaluation is missing
	}
	setField(ev, "env_vars", deepMerge(env, structOr(getIn(ev, "env_vars"))))
}

// leptonEnv is a Lepton env map ({NAME: VALUE} or {NAME: {value_from:
// {secret_name_ref: SECRET}}}) in the launcher's env_vars spelling: a
// secret is host:SECRET, the variable of that name on the node (passed
// by name, as Lepton resolves its secrets in the container), a value is
// lit:VALUE.
func (t *v1) leptonEnv(x ast.Expr, at []any) *ast.StructLit {
	st, ok := x.(*ast.StructLit)
	if !ok || len(st.Elts) == 0 {
		return nil
	}
	out := obj()
	for f := range fields(st) {
		name, p := labelOf(f), append(slices.Clip(at), labelOf(f))
		var v string
		switch val := f.Value.(type) {
		case *ast.StructLit:
			ref, _ := stringOf(getIn(val, "value_from.secret_name_ref"))
			if !envNameRE.MatchString(ref) {
				t.refuse(val, p, "expected a value or value_from.secret_name_ref naming a secret (the variable of that name on the SLURM node), found %q", ref)
				continue
			}
			v = "host:" + ref
		case *ast.BasicLit:
			s, isString := stringOf(val)
			if !isString {
				s = val.Value
			}
			v = "lit:" + s
		default:
			t.refuse(f.Value, p, "expected a value or value_from.secret_name_ref")
			continue
		}
		out.Elts = append(out.Elts, fld(name, stringAt(v, f.Value.Pos())))
	}
	return out
}
