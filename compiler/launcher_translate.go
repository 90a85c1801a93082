package compiler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// A composed v1 config becomes the recipe it means (nemo-evaluator-launcher
// main-legacy: configs/, executors/local and executors/slurm):
//
//   - target.api_endpoint with deployment none is an api service ("model"):
//     url, model_id, and api_key_name as the reference ${NAME}, never its
//     value; a deployment (vllm, sglang, trtllm, nim) is the managed server
//     of that type, with the launcher's parallelism, image and port;
//   - execution local is a local cluster, execution slurm a SLURM cluster
//     with one node pool sized as the launcher sizes its job (num_nodes,
//     ntasks_per_node, gres); output_dir is output.dir;
//   - each task is a benchmark: container://IMAGE#TASK, the eval-factory
//     image the registry gives (launcher_tasks.go), with the launcher's
//     params (evaluation.nemo_evaluator_config, then the task's own,
//     merged), adapter_config, env_vars and evaluation mounts; or, where
//     the config says native: true and nel has the benchmark, nel's own.
//
// What the launcher does that nel cannot is refused, positioned, rather
// than dropped.

// v1Service is the name the translated recipe gives the model service.
const v1Service = "model"

// v1 translates one composed config, collecting errors and warnings.
type v1 struct {
	path     string
	root     *ast.StructLit
	errs     Errors
	warnings Errors
	deployed bool         // a deployment nel starts (not none)
	protocol string       // the service's protocol
	keep     map[int]bool // the tasks --task selected (nil: all)
	// own are the fields of the task being translated's own
	// nemo_evaluator_config: a message about a merged value names the
	// section it is written in.
	own map[*ast.Field]bool
}

// translateLauncher is the recipe syntax of the composed config st.
func translateLauncher(path string, st *ast.StructLit, keep map[int]bool) (ast.Expr, Errors, error) {
	reg, err := loadRegistry()
	if err != nil {
		return nil, nil, err
	}
	t := &v1{path: path, root: st, keep: keep}
	t.label()
	t.lepton()
	t.known(st, nil, launcherSections...)
	t.export()
	aux := t.auxDeployments()
	t.sharedEnv()
	svc := t.service()
	cluster := t.cluster()
	benchmarks := t.withAux(t.benchmarks(reg), aux)
	if len(t.errs) > 0 {
		return nil, nil, t.errs.sorted().truncated()
	}
	services := obj(fld(v1Service, svc))
	for _, a := range aux {
		services.Elts = append(services.Elts, fld(a.name, a.service))
		if pools, ok := getIn(cluster, "node_pools").(*ast.StructLit); ok {
			pools.Elts = append(pools.Elts, fld(a.name, a.pool))
		}
	}
	if len(aux) > 0 {
		// The tasks run on the model's first node, as the launcher's do.
		cluster.(*ast.StructLit).Elts = append(cluster.(*ast.StructLit).Elts, fld("eval_pool", ast.NewString("gpu")))
	}
	out := obj(
		fld("services", services),
		fld("benchmarks", benchmarks),
		fld("cluster", cluster),
		fld("output", obj(fld("dir", t.get("execution.output_dir")))),
	)
	return out, t.warnings, nil
}

// get is the value at a dotted path of the composed config; nil when it is
// missing or null.
func (t *v1) get(path string) ast.Expr { return getIn(t.root, path) }

func getIn(x ast.Expr, path string) ast.Expr {
	for _, key := range strings.Split(path, ".") {
		st, ok := x.(*ast.StructLit)
		if !ok || st == nil {
			return nil
		}
		if x = valueAt(st, key); x == nil {
			return nil
		}
	}
	if isNull(x) {
		return nil
	}
	return x
}

func (t *v1) str(path string) string {
	s, _ := stringOf(t.get(path))
	return s
}

// refuse records an error at x.
func (t *v1) refuse(x ast.Node, path []any, format string, args ...any) {
	pos := token.NoPos
	if x != nil {
		pos = x.Pos()
	}
	t.errs = append(t.errs, errAt(pos, t.path, path, format, args...)...)
}

// warn records a warning at x.
func (t *v1) warn(x ast.Node, path []any, format string, args ...any) {
	t.warnings = append(t.warnings, errAt(x.Pos(), t.path, path, format, args...)...)
}

// known refuses the fields of st (at path) that are not among names.
func (t *v1) known(st *ast.StructLit, path []any, names ...string) {
	if st == nil {
		return
	}
	for f := range fields(st) {
		if name := labelOf(f); !slices.Contains(names, name) {
			t.refuse(f, append(slices.Clip(path), name), "unknown field: nel reads %s here", strings.Join(names, ", "))
		}
	}
}

// sharedEnv lays the top-level env_vars under evaluation.env_vars and, for
// a deployment, deployment.env_vars: the launcher gives them to both, the
// sections' own winning.
func (t *v1) sharedEnv() {
	env, ok := t.get("env_vars").(*ast.StructLit)
	if !ok || len(env.Elts) == 0 {
		return
	}
	t.envMap(env, []any{"env_vars"}) // checked where it is written
	for _, sec := range []string{"evaluation", "deployment"} {
		st, ok := t.get(sec).(*ast.StructLit)
		if !ok || sec == "deployment" && t.str("deployment.type") == "none" {
			continue
		}
		merged := deepMerge(env, structOr(getIn(st, "env_vars")))
		if f := fieldOf(st, "env_vars"); f != nil {
			f.Value = merged
		} else {
			st.Elts = append(st.Elts, fld("env_vars", merged))
		}
	}
}

// service is the model service: the endpoint the config names, or the
// server its deployment starts.
func (t *v1) service() ast.Expr {
	typ := t.str("deployment.type")
	if typ == "none" {
		return t.apiService()
	}
	kinds := map[string]string{"vllm": "vllm", "sglang": "sglang", "trtllm": "trt_llm", "nim": "nim", "generic": "process"}
	kind, ok := kinds[typ]
	if !ok {
		t.refuse(t.get("deployment.type"), []any{"deployment", "type"}, "not supported yet: deployment %s (nel starts vllm, sglang, trtllm, nim and generic servers, or calls an endpoint with deployment none)", typ)
		return obj()
	}
	t.deployed, t.protocol = true, "chat_completions"
	var svc ast.Expr
	if kind == "process" {
		svc = t.genericServer()
	} else {
		svc = t.managedServer(kind)
	}
	if st, ok := svc.(*ast.StructLit); ok && t.dockerLocal(st) {
		return t.localDocker(kind, st)
	}
	return svc
}

// apiService is target.api_endpoint as an api service.
func (t *v1) apiService() ast.Expr {
	ep, _ := t.get("target.api_endpoint").(*ast.StructLit)
	if ep == nil {
		t.refuse(t.root, []any{"target", "api_endpoint"}, "missing: with deployment none, target.api_endpoint (url, model_id, api_key_name) names the endpoint")
		return obj()
	}
	t.known(ep, []any{"target", "api_endpoint"}, "url", "model_id", "api_key_name", "adapter_config")
	if ac := valueAt(ep, "adapter_config"); ac != nil {
		// The launcher builds each task's endpoint from
		// nemo_evaluator_config only: this one would do nothing there.
		t.refuse(ac, []any{"target", "api_endpoint", "adapter_config"}, "the launcher does not read an adapter_config here: write it under evaluation.nemo_evaluator_config.target.api_endpoint (or a task's)")
	}
	url, _ := stringOf(valueAt(ep, "url"))
	t.protocol = "chat_completions"
	if strings.HasSuffix(strings.TrimRight(url, "/"), "/completions") && !strings.HasSuffix(strings.TrimRight(url, "/"), "/chat/completions") {
		t.protocol = "completions"
	}
	out := obj(fld("type", ast.NewString("api")), fld("url", valueAt(ep, "url")), fld("model", valueAt(ep, "model_id")),
		fld("protocol", ast.NewString(t.protocol)))
	if key := valueAt(ep, "api_key_name"); key != nil && !isNull(key) {
		name, _ := stringOf(key)
		if !envNameRE.MatchString(name) {
			t.refuse(key, []any{"target", "api_endpoint", "api_key_name"}, "expected the name of the environment variable that holds the key (NGC_API_KEY), found %q", name)
		} else {
			out.Elts = append(out.Elts, fld("api_key", stringAt("${"+name+"}", key.Pos())))
		}
	}
	return out
}

// managedServer is the deployment as a server nel starts.
func (t *v1) managedServer(kind string) ast.Expr {
	d, _ := t.get("deployment").(*ast.StructLit)
	at := []any{"deployment"}
	t.known(d, at, "type", "image", "checkpoint_path", "hf_model_handle", "served_model_name", "port",
		"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "gpu_memory_utilization",
		"extra_args", "env_vars", "endpoints", "distributed_executor_backend", "data_parallel_size_local", "command")
	var nodes ast.Expr
	if t.str("execution.type") == "slurm" {
		nodes = t.get("execution.num_nodes")
	}
	out, ok := t.serverFields(d, at, kind, "gpu", nodes)
	if !ok || nodes != nil && !t.instances(out, t.get("execution.num_instances"), nodes, []any{"execution", "num_instances"}, nil) {
		return out
	}
	t.serverCommand(d, out)
	args := t.serverArgs(d, at, kind)
	if len(args.Elts) > 0 {
		out.Elts = append(out.Elts, fld("extra_args", args))
	}
	if env := t.envMap(getIn(d, "env_vars"), append(at, "env_vars")); env != nil {
		out.Elts = append(out.Elts, fld("extra_env", env))
	}
	t.deploymentMounts(out)
	return out
}

// serverFields are the fields of a server nel starts that a deployment
// section d (at) gives as they are: what it serves, its image, port and
// parallelism, on node pool pool (under execution: slurm) over nodes.
// ok is false when d names no model.
func (t *v1) serverFields(d *ast.StructLit, at []any, kind, pool string, nodes ast.Expr) (out *ast.StructLit, ok bool) {
	out = obj(fld("type", ast.NewString(kind)))
	model := getIn(d, "hf_model_handle")
	if ckpt := getIn(d, "checkpoint_path"); model == nil && ckpt != nil {
		// The launcher mounts the checkpoint at /checkpoint and serves that.
		model = stringAt("/checkpoint", ckpt.Pos())
		out.Elts = append(out.Elts, fld("container_mounts", &ast.ListLit{Elts: []ast.Expr{concat(ckpt, ":/checkpoint")}}))
	}
	if kind == "nim" && model == nil {
		model = getIn(d, "served_model_name")
	}
	if model == nil {
		t.refuse(d, append(at, "hf_model_handle"), "missing: a deployment serves hf_model_handle or checkpoint_path")
		return out, false
	}
	out.Elts = append(out.Elts, fld("model", model))
	for _, k := range []string{"served_model_name", "image", "port", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"} {
		appendField(out, k, getIn(d, k))
	}
	appendField(out, "health_path", getIn(d, "endpoints.health"))
	appendField(out, "startup_timeout", t.get("execution.endpoint_readiness_timeout"))
	if t.str("execution.type") == "slurm" {
		out.Elts = append(out.Elts, fld("node_pool", ast.NewString(pool)))
		appendField(out, "num_nodes", nodes)
	}
	return out, true
}

// genericServer is deployment: generic (any image and command serving the
// OpenAI API) as a process service run in that image.
func (t *v1) genericServer() ast.Expr {
	d, _ := t.get("deployment").(*ast.StructLit)
	at := []any{"deployment"}
	t.known(d, at, "type", "image", "command", "port", "served_model_name", "extra_args", "env_vars", "checkpoint_path", "endpoints")
	cmd := getIn(d, "command")
	line, _ := stringOf(cmd)
	if extra, _ := stringOf(getIn(d, "extra_args")); extra != "" {
		line += " " + extra
	}
	if strings.ContainsAny(line, "|&;<>$`(){}") {
		t.refuse(cmd, append(at, "command"), "not supported yet: a shell command line (nel runs the server's words without a shell): write one command and its arguments")
		return obj()
	}
	words, err := splitWords(line)
	if err != nil || len(words) == 0 {
		t.refuse(cmd, append(at, "command"), "expected the server's command and its arguments")
		return obj()
	}
	argv := &ast.ListLit{}
	for _, w := range words {
		argv.Elts = append(argv.Elts, stringAt(w, cmd.Pos()))
	}
	out := obj(fld("type", ast.NewString("process")), fld("command", argv), fld("model", getIn(d, "served_model_name")))
	for _, k := range []string{"port", "image"} {
		appendField(out, k, getIn(d, k))
	}
	appendField(out, "health_path", getIn(d, "endpoints.health"))
	appendField(out, "startup_timeout", t.get("execution.endpoint_readiness_timeout"))
	if t.str("execution.type") == "slurm" {
		out.Elts = append(out.Elts, fld("node_pool", ast.NewString("gpu")))
	}
	if ckpt := getIn(d, "checkpoint_path"); ckpt != nil {
		out.Elts = append(out.Elts, fld("container_mounts", &ast.ListLit{Elts: []ast.Expr{concat(ckpt, ":/checkpoint")}}))
	}
	appendField(out, "extra_env", t.envMap(getIn(d, "env_vars"), append(at, "env_vars")))
	t.deploymentMounts(out)
	return out
}

// deploymentMounts adds execution.mounts.deployment ({host: container}) to
// the server's container_mounts (host:container), after the checkpoint's.
func (t *v1) deploymentMounts(out *ast.StructLit) {
	m, ok := t.get("execution.mounts.deployment").(*ast.StructLit)
	if !ok || len(m.Elts) == 0 {
		return
	}
	list, _ := valueAt(out, "container_mounts").(*ast.ListLit)
	if list == nil {
		list = &ast.ListLit{}
		out.Elts = append(out.Elts, fld("container_mounts", list))
	}
	for f := range fields(m) {
		inside, _ := stringOf(f.Value)
		list.Elts = append(list.Elts, stringAt(labelOf(f)+":"+inside, f.Value.Pos()))
	}
}

// serverArgs are the server's extra arguments: extra_args split as a shell
// splits them, and vLLM's GPU memory share, which nel's command leaves to
// vLLM's default.
func (t *v1) serverArgs(d *ast.StructLit, at []any, kind string) *ast.ListLit {
	args := &ast.ListLit{}
	if v := getIn(d, "gpu_memory_utilization"); v != nil && kind == "vllm" {
		if b, ok := v.(*ast.BasicLit); ok {
			args.Elts = append(args.Elts, stringAt("--gpu-memory-utilization="+b.Value, v.Pos()))
		}
	}
	t.parallelArgs(d, kind, args)
	if v := getIn(d, "extra_args"); v != nil {
		s, _ := stringOf(v)
		words, err := splitWords(s)
		if err != nil {
			t.refuse(v, append(slices.Clip(at), "extra_args"), "%v", err)
		}
		for _, w := range words {
			args.Elts = append(args.Elts, stringAt(w, v.Pos()))
		}
	}
	return args
}

// splitWords splits s into words as a POSIX shell would (quotes and
// backslashes, no expansions), which is how the launcher's command line
// takes extra_args: outside quotes a backslash keeps the next character
// (and a backslash-newline joins lines), inside double quotes only before
// $ ` " \ or a newline, and inside single quotes never.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'' && c == quote, quote == '"' && c == quote:
			quote = 0
		case c == '\\' && quote != '\'':
			if i+1 == len(s) {
				return nil, fmt.Errorf("a backslash ends %q", s)
			}
			next := s[i+1]
			i++
			switch {
			case next == '\n' && quote == 0:
				continue // a line continuation: nothing, not even a word
			case next == '\n':
				// inside double quotes, removed too
			case quote == '"' && !strings.ContainsRune("$`\"\\", rune(next)):
				cur.WriteByte(c)
				cur.WriteByte(next)
			default:
				cur.WriteByte(next)
			}
			in = true
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// envMap is a launcher env_vars map as nel's: host:VAR and runtime:VAR
// become the reference ${VAR}, resolved on the node (a secret passed by
// name), lit:TEXT the text. The launcher refuses a value with no prefix,
// and so does nel, with the same suggestion.
func (t *v1) envMap(x ast.Expr, at []any) ast.Expr {
	st, ok := x.(*ast.StructLit)
	if !ok || len(st.Elts) == 0 {
		return nil
	}
	out := obj()
	for f := range fields(st) {
		name := labelOf(f)
		raw, _ := stringOf(f.Value)
		var v string
		switch {
		case strings.HasPrefix(raw, "lit:"):
			v = strings.ReplaceAll(strings.TrimPrefix(raw, "lit:"), "${", "$${")
		case strings.HasPrefix(raw, "host:"), strings.HasPrefix(raw, "runtime:"):
			_, ref, _ := strings.Cut(raw, ":")
			if !envNameRE.MatchString(ref) {
				t.refuse(f.Value, append(slices.Clip(at), name), "expected a variable name after %s, found %q", raw[:strings.Index(raw, ":")+1], ref)
				continue
			}
			v = "${" + ref + "}"
		case envRE.MatchString(raw):
			// ${oc.env:VAR}, rewritten by interpolate: the launcher
			// refuses it here, since it would put the value in the config.
			t.refuse(f.Value, append(slices.Clip(at), name), "${oc.env:…} is not allowed in env var fields (it would write the variable's value into the config): write %q", "host:"+envRE.FindStringSubmatch(raw)[1])
			continue
		default:
			hint := "lit:" + raw
			if envNameRE.MatchString(strings.TrimPrefix(raw, "$")) {
				hint = "host:" + strings.TrimPrefix(raw, "$")
			}
			t.refuse(f.Value, append(slices.Clip(at), name), "env var value %q must have an explicit prefix (host:, lit: or runtime:), as the launcher requires: write %q", raw, hint)
			continue
		}
		out.Elts = append(out.Elts, fld(name, stringAt(v, f.Value.Pos())))
	}
	return out
}

// obj is a mapping of fields.
func obj(fs ...*ast.Field) *ast.StructLit {
	st := &ast.StructLit{}
	for _, f := range fs {
		if f != nil {
			st.Elts = append(st.Elts, f)
		}
	}
	return st
}

// fld is a field; nil when v is (obj leaves it out, and the schema's
// default or its "missing" applies).
func fld(name string, v ast.Expr) *ast.Field {
	if v == nil {
		return nil
	}
	return &ast.Field{Label: ast.NewStringLabel(name), Value: v}
}

// appendField adds the field name: v to st unless v is nil.
func appendField(st *ast.StructLit, name string, v ast.Expr) {
	if f := fld(name, v); f != nil {
		st.Elts = append(st.Elts, f)
	}
}

// concat is the scalar x's text followed by suffix, at x's position.
func concat(x ast.Expr, suffix string) ast.Expr {
	s, ok := stringOf(x)
	if !ok {
		if b, isLit := x.(*ast.BasicLit); isLit {
			s = b.Value
		}
	}
	return stringAt(s+suffix, x.Pos())
}

// intOf reads an integer literal.
func intOf(x ast.Expr) (int, bool) {
	b, ok := x.(*ast.BasicLit)
	if !ok || b.Kind != token.INT {
		return 0, false
	}
	n, err := strconv.Atoi(b.Value)
	return n, err == nil
}
