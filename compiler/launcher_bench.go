package compiler

import (
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
)

// cluster is the execution section as a nel cluster.
func (t *v1) cluster() ast.Expr {
	ex, _ := t.get("execution").(*ast.StructLit)
	at := []any{"execution"}
	switch typ := t.str("execution.type"); typ {
	case "local":
		t.known(ex, at, "type", "output_dir", "extra_docker_args", "mode", "endpoint_readiness_timeout", "mounts", "auto_export")
		if s := t.str("execution.extra_docker_args"); s != "" {
			t.refuse(t.get("execution.extra_docker_args"), append(at, "extra_docker_args"), "not supported yet: extra docker arguments")
		}
		if t.str("execution.mode") == "parallel" {
			t.warn(t.get("execution.mode"), append(at, "mode"), "nel run runs the tasks one after another (mode: parallel is not followed)")
		}
		t.mountsKnown(at)
		return obj(fld("type", ast.NewString("local")))
	case "slurm":
		return t.slurmCluster(ex, at)
	default:
		t.refuse(t.get("execution.type"), append(at, "type"), "not supported: execution type %q (nel runs locally and on SLURM)", typ)
		return obj()
	}
}

// slurmCluster is execution: slurm as a SLURM cluster with one node pool,
// sized as the launcher sizes its job.
func (t *v1) slurmCluster(ex *ast.StructLit, at []any) ast.Expr {
	t.known(ex, at, "type", "hostname", "username", "account", "output_dir", "partition", "cpu_partition",
		"num_nodes", "num_instances", "ntasks_per_node", "gres", "walltime", "max_walltime",
		"endpoint_readiness_timeout", "subproject", "sbatch_comment", "sbatch_extra_flags", "deployment", "mounts", "proxy", "auto_export")
	if h := t.get("execution.hostname"); h != nil {
		host, _ := stringOf(h)
		t.warn(h, append(at, "hostname"), "nel does not submit over ssh: on %s, run nel compile with this config and pipe it to sbatch (or nel run there)", host)
	}
	t.instancesOutsideServer()
	if v := t.get("execution.deployment.n_tasks"); v != nil {
		tasks, _ := intOf(v)
		nodes, _ := intOf(t.get("execution.num_nodes"))
		if tasks != nodes {
			t.refuse(v, append(at, "deployment", "n_tasks"), "not supported yet: a deployment task count other than num_nodes (nel runs one server task per node)")
		}
	}
	if v := t.get("execution.cpu_partition"); v != nil {
		t.warn(v, append(at, "cpu_partition"), "nel runs no export jobs: cpu_partition is not used")
	}
	t.mountsKnown(at)
	pool := obj()
	for _, k := range []string{"ntasks_per_node", "gres"} {
		appendField(pool, k, t.get("execution."+k))
	}
	if v := t.get("execution.num_nodes"); v != nil {
		pool.Elts = slices.Insert(pool.Elts, 0, ast.Decl(fld("nodes", v)))
	}
	out := obj(fld("type", ast.NewString("slurm")))
	for _, k := range []string{"account", "partition", "walltime", "max_walltime", "sbatch_comment", "sbatch_extra_flags"} {
		appendField(out, k, t.get("execution."+k))
	}
	appendField(out, "mount_home", t.get("execution.mounts.mount_home"))
	out.Elts = append(out.Elts, fld("node_pools", obj(fld("gpu", pool))))
	return out
}

// mountsKnown refuses the mount groups nel does not read.
func (t *v1) mountsKnown(at []any) {
	if m, ok := t.get("execution.mounts").(*ast.StructLit); ok {
		t.known(m, append(at, "mounts"), "deployment", "evaluation", "auxiliary", "mount_home")
		if aux, ok := getIn(m, "auxiliary").(*ast.StructLit); ok && len(aux.Elts) > 0 {
			t.refuse(aux, append(at, "mounts", "auxiliary"), "not supported yet: mounts of an auxiliary deployment's own")
		}
	}
}

// benchmarks are the evaluation's tasks, each a benchmark.
func (t *v1) benchmarks(reg *taskRegistry) ast.Expr {
	ev, _ := t.get("evaluation").(*ast.StructLit)
	at := []any{"evaluation"}
	if ev == nil {
		t.refuse(t.root, at, "missing: evaluation.tasks lists the tasks to run")
		return &ast.ListLit{}
	}
	t.known(ev, at, "tasks", "nemo_evaluator_config", "env_vars", "native")
	list, ok := valueAt(ev, "tasks").(*ast.ListLit)
	if !ok || len(list.Elts) == 0 {
		t.refuse(ev, append(at, "tasks"), "missing: evaluation.tasks lists the tasks to run")
		return &ast.ListLit{}
	}
	t.envMap(getIn(ev, "env_vars"), append(at, "env_vars"))
	out := &ast.ListLit{}
	for i, e := range list.Elts {
		if deselected([]any{"evaluation", "tasks", i}, t.keep) {
			continue
		}
		if b := t.task(reg, ev, e, append(at, "tasks", i)); b != nil {
			out.Elts = append(out.Elts, b)
		}
	}
	return out
}

// task is one task as a benchmark.
func (t *v1) task(reg *taskRegistry, ev *ast.StructLit, e ast.Expr, at []any) ast.Expr {
	st, ok := e.(*ast.StructLit)
	if !ok {
		t.refuse(e, at, "expected a task: {name: TASK, …}")
		return nil
	}
	t.known(st, at, "name", "nemo_evaluator_config", "env_vars", "container", "native", "config", "target")
	name := taskName(st)
	task, err := reg.lookup(name)
	if err != nil {
		t.refuse(st, append(at, "name"), "%v", err)
		return nil
	}
	own := t.taskLayer(st, at)
	cfg, env := t.taskConfig(ev, own, at)
	t.own = fieldSet(own)
	t.envMap(getIn(st, "env_vars"), append(slices.Clip(at), "env_vars"))
	native := getIn(st, "native")
	if native == nil {
		native = getIn(ev, "native")
	}
	if b, ok := native.(*ast.BasicLit); ok && b.Value == "true" {
		if task.Native == nil {
			t.refuse(native, append(at, "native"), "nel has no built-in benchmark for %s.%s: it runs in its container (%s)", task.Harness, task.Name, task.Image)
			return nil
		}
		t.warn(native, append(at, "native"), "%s runs as nel's %s: %s", name, task.Native.Benchmark, task.Native.Note)
		if getIn(st, "env_vars") != nil || getIn(ev, "env_vars") != nil || env != nil || getIn(st, "container") != nil {
			t.warn(native, append(at, "native"), "env_vars and container are the task's container's; nel's own %s runs without them", task.Native.Benchmark)
		}
		return t.nativeBenchmark(task, cfg, at)
	}
	return t.containerBenchmark(task, st, ev, cfg, env, at)
}

// taskConfig is the task's nemo_evaluator_config: the evaluation's, then
// the task's own (own) laid over it, as the launcher merges them. env is
// the env_vars either wrote inside it (moveMisplaced), the task's own last.
func (t *v1) taskConfig(ev *ast.StructLit, own ast.Expr, at []any) (cfg *ast.StructLit, env *ast.StructLit) {
	cfg = obj()
	for _, layer := range []struct {
		x  ast.Expr
		at []any
	}{{getIn(ev, "nemo_evaluator_config"), []any{"evaluation", "nemo_evaluator_config"}}, {own, append(slices.Clip(at), "nemo_evaluator_config")}} {
		l, ok := layer.x.(*ast.StructLit)
		if !ok {
			if layer.x != nil {
				t.refuse(layer.x, layer.at, "expected a mapping (config, target)")
			}
			continue
		}
		l, e := t.moveMisplaced(l, layer.at)
		if e != nil {
			t.envMap(e, append(slices.Clip(layer.at), "env_vars"))
			env = deepMerge(structOr(env), structOr(e))
		}
		t.known(l, layer.at, "config", "target")
		if c, ok := getIn(l, "config").(*ast.StructLit); ok {
			t.known(c, append(layer.at, "config"), "params")
		}
		if c, ok := getIn(l, "target").(*ast.StructLit); ok {
			t.known(c, append(layer.at, "target"), "api_endpoint")
			if a, ok := getIn(c, "api_endpoint").(*ast.StructLit); ok {
				t.known(a, append(layer.at, "target", "api_endpoint"), "adapter_config")
			}
		}
		cfg = deepMerge(cfg, l)
	}
	return cfg, env
}

// containerBenchmark runs the task in its eval-factory image.
func (t *v1) containerBenchmark(task *launcherTask, st, ev, cfg, inCfg *ast.StructLit, at []any) ast.Expr {
	image := task.Image
	if c := getIn(st, "container"); c != nil {
		image, _ = stringOf(c)
	}
	// The endpoint the config names is the one the task gets; a server
	// nel starts offers every type, and the task takes the first it knows.
	typ := "chat"
	if t.protocol == "completions" {
		typ = "completions"
	}
	if len(task.Endpoints) > 0 && !task.takes(typ) {
		if !t.deployed {
			t.refuse(st, append(at, "name"), "task %s takes %s endpoints; target.api_endpoint.url is a %s endpoint", task.Name, strings.Join(task.Endpoints, " or "), typ)
		}
		typ = task.Endpoints[0]
	}
	solver := obj(fld("type", ast.NewString("container")), fld("service", ast.NewString(v1Service)), fld("endpoint_type", ast.NewString(typ)))
	appendField(solver, "adapter_config", getIn(cfg, "target.api_endpoint.adapter_config"))
	// Each map was checked where it is written (benchmarks, task); the
	// merge is only converted.
	env := deepMerge(deepMerge(structOr(getIn(ev, "env_vars")), structOr(inCfg)), structOr(getIn(st, "env_vars")))
	appendField(solver, "env_vars", (&v1{path: t.path}).envMap(env, nil))
	if m, ok := t.get("execution.mounts.evaluation").(*ast.StructLit); ok && len(m.Elts) > 0 {
		solver.Elts = append(solver.Elts, fld("mounts", m))
	}
	b := obj(fld("name", stringAt("container://"+image+"#"+task.Name, st.Pos())))
	appendField(b, "params", getIn(cfg, "config.params"))
	b.Elts = append(b.Elts, fld("solver", solver))
	return b
}

// structOr is x as a mapping, an empty one when it is not.
func structOr(x ast.Expr) *ast.StructLit {
	if st, ok := x.(*ast.StructLit); ok && st != nil {
		return st
	}
	return obj()
}

// nativeParams maps the launcher's params onto a nel benchmark's fields
// (generation's under generation:).
var nativeParams = map[string]string{
	"limit_samples":   "max_problems",
	"parallelism":     "max_concurrent",
	"request_timeout": "request_timeout",
	"temperature":     "generation.temperature",
	"top_p":           "generation.top_p",
	"max_new_tokens":  "generation.max_tokens",
}

// nativeBenchmark runs the task as nel's own benchmark: the params that
// have a nel field become it, the rest are refused (they would change what
// is measured, or nel has no such knob).
func (t *v1) nativeBenchmark(task *launcherTask, cfg *ast.StructLit, at []any) ast.Expr {
	b := obj(fld("name", ast.NewString(task.Native.Benchmark)))
	gen := obj()
	for f := range fields(structOr(getIn(cfg, "config.params"))) {
		name := labelOf(f)
		if name == "extra" {
			t.nativeExtra(task, b, f.Value, at)
			continue
		}
		to, ok := nativeParams[name]
		switch {
		case isNull(f.Value): // unset, as the launcher's null is
		case !ok:
			t.refuse(f, t.cfgPath(f, at, "config", "params", name), "not supported natively: nel's %s has no such setting (leave out native to run %s in its container)", task.Native.Benchmark, task.Name)
		case strings.HasPrefix(to, "generation."):
			gen.Elts = append(gen.Elts, fld(strings.TrimPrefix(to, "generation."), f.Value))
		default:
			b.Elts = append(b.Elts, fld(to, f.Value))
		}
	}
	t.nativeAdapter(b, gen, getIn(cfg, "target.api_endpoint.adapter_config"), at)
	if len(gen.Elts) > 0 {
		b.Elts = append(b.Elts, fld("generation", gen))
	}
	b.Elts = append(b.Elts, fld("solver", obj(fld("type", ast.NewString("simple")), fld("service", ast.NewString(v1Service)))))
	return b
}

// nativeExtra reads params.extra for a native run: num_repeats is repeats;
// args the note of the native benchmark covers are accepted (the note says
// what differs); anything else is refused.
func (t *v1) nativeExtra(task *launcherTask, b *ast.StructLit, x ast.Expr, at []any) {
	for f := range fields(structOr(x)) {
		name := labelOf(f)
		s, _ := stringOf(f.Value)
		switch {
		case isNull(f.Value):
		case name == "num_repeats":
			b.Elts = append(b.Elts, fld("repeats", f.Value))
		case name == "args" && slices.Contains(task.Native.Args, s):
		default:
			t.refuse(f, t.cfgPath(f, at, "config", "params", "extra", name), "not supported natively: nel's %s has no such setting (leave out native to run %s in its container)", task.Native.Benchmark, task.Name)
		}
	}
}

// nativeAdapter maps the adapter_config keys nel has features for; the
// interceptors that would do the rest are not here yet.
func (t *v1) nativeAdapter(b, gen *ast.StructLit, x ast.Expr, at []any) {
	st, ok := x.(*ast.StructLit)
	if !ok {
		return
	}
	for f := range fields(st) {
		name := labelOf(f)
		switch name {
		case "custom_system_prompt":
			b.Elts = append(b.Elts, fld("system_prompt", f.Value))
		case "use_system_prompt":
			if v, ok := f.Value.(*ast.BasicLit); ok && v.Value == "true" && getIn(st, "custom_system_prompt") == nil {
				t.refuse(f, t.cfgPath(f, at, "target", "api_endpoint", "adapter_config", name), "use_system_prompt needs custom_system_prompt")
			}
		case "params_to_add":
			gen.Elts = append(gen.Elts, fld("extra_body", f.Value))
		default:
			t.refuse(f, t.cfgPath(f, at, "target", "api_endpoint", "adapter_config", name), "not supported yet (interceptors: issue 21)")
		}
	}
}

// cfgPath is where a merged nemo_evaluator_config field f is written: the
// task's own (at) or the evaluation's; rel is its path below either.
func (t *v1) cfgPath(f *ast.Field, at []any, rel ...any) []any {
	base := []any{"evaluation"}
	if t.own[f] {
		base = slices.Clone(at)
	}
	return append(append(base, "nemo_evaluator_config"), rel...)
}

// fieldSet is every field below x.
func fieldSet(x ast.Expr) map[*ast.Field]bool {
	out := map[*ast.Field]bool{}
	var walk func(ast.Expr)
	walk = func(x ast.Expr) {
		if st, ok := x.(*ast.StructLit); ok && st != nil {
			for f := range fields(st) {
				out[f] = true
				walk(f.Value)
			}
		}
	}
	walk(x)
	return out
}
