package compiler

import (
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// Auxiliary deployments (the launcher's auxiliary_deployments, SLURM only):
// a second server the job starts beside the model, a judge most often, on
// nodes of its own, whose address the launcher writes into the tasks'
// configs where they say auxiliary_deployments.NAME.chat_url (or another
// endpoint's NAME_url) and auxiliary_deployments.NAME.model_id.
//
// In nel each is a service NAME of its own node pool NAME (num_nodes
// nodes: the job becomes a heterogeneous one, the model's nodes one
// component and the judge's another, where the launcher splits one
// allocation). The url becomes http://${NEL_SERVICE_NAME_HOST}:PORT/PATH,
// which the container harness fills in on the node (harness_emit.go), and
// the model_id the served name. nel keys every server it starts (README:
// Security on shared clusters), so the mapping that holds the url gets
// api_key: NEL_SERVICE_NAME_API_KEY, the variable that carries the key,
// which is how eval-factory judges take theirs (by name).

// auxLayer reads a defaults entry deployment/OPTION@auxiliary_deployments.NAME:
// the deployment option placed under auxiliary_deployments.NAME (Hydra's
// @package), the only other key the launcher's configs place a group at.
func auxLayer(path, entry string, pos token.Pos, at []any) (*ast.StructLit, string, error) {
	src, pkg, _ := strings.Cut(entry, "@")
	group, option, ok := strings.Cut(src, "/")
	name, isAux := strings.CutPrefix(pkg, "auxiliary_deployments.")
	if !ok || group != "deployment" || !isAux || !envNameRE.MatchString(name) {
		return nil, "", errAt(pos, path, at, "not supported: %s places a config group at another key (Hydra's @package); nel reads deployment/OPTION@auxiliary_deployments.NAME only", entry)
	}
	layer, file, err := groupFile(path, group, option, pos, at)
	if err != nil {
		return nil, "", err
	}
	// groupFile places the option at its group's key; @package moves it.
	inner, _ := getIn(layer, group).(*ast.StructLit)
	if inner == nil {
		inner = obj()
	}
	return obj(fld("auxiliary_deployments", obj(fld(name, inner)))), file, nil
}

// auxDeployment is one auxiliary deployment nel starts.
type auxDeployment struct {
	name    string
	service *ast.StructLit
	pool    *ast.StructLit
	// refs are the texts a task's config may name, and what each becomes.
	refs map[string]string
	// urlRef is the prefix of the url refs, to add the api_key beside them.
	urlRef string
}

// auxDeployments are the config's auxiliary deployments (type none ones
// skipped, as the launcher skips them).
func (t *v1) auxDeployments() []auxDeployment {
	aux, ok := t.get("auxiliary_deployments").(*ast.StructLit)
	if !ok || len(aux.Elts) == 0 {
		return nil
	}
	if t.str("execution.type") != "slurm" {
		t.refuse(aux, []any{"auxiliary_deployments"}, "not supported: auxiliary deployments under execution: %s (the launcher starts them on SLURM only)", t.str("execution.type"))
		return nil
	}
	var out []auxDeployment
	for f := range fields(aux) {
		name := labelOf(f)
		d, _ := f.Value.(*ast.StructLit)
		at := []any{"auxiliary_deployments", name}
		if d == nil {
			t.refuse(f.Value, at, "expected a deployment (type, hf_model_handle, served_model_name, port, …)")
			continue
		}
		if typ, _ := stringOf(getIn(d, "type")); typ != "none" {
			if a, ok := t.auxDeployment(name, d, at); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

func (t *v1) auxDeployment(name string, d *ast.StructLit, at []any) (auxDeployment, bool) {
	t.known(d, at, "type", "image", "checkpoint_path", "hf_model_handle", "served_model_name", "port",
		"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "gpu_memory_utilization",
		"extra_args", "env_vars", "endpoints", "num_nodes", "num_instances", "env_prefix")
	kind, _ := stringOf(getIn(d, "type"))
	if kind != "vllm" && kind != "sglang" {
		t.refuse(getIn(d, "type"), append(at, "type"), "not supported yet: an auxiliary %s deployment (nel starts vllm and sglang ones)", kind)
		return auxDeployment{}, false
	}
	if name == v1Service {
		t.refuse(d, at, "nel names the model's service %q: give the auxiliary deployment another name", v1Service)
		return auxDeployment{}, false
	}
	nodes := getIn(d, "num_nodes")
	if nodes == nil {
		nodes = ast.NewLit(token.INT, "1")
	}
	svc, ok := t.serverFields(d, at, kind, name, nodes)
	if !ok || !t.instances(svc, getIn(d, "num_instances"), nodes, append(at, "num_instances"), t.auxBalancerPort(name)) {
		return auxDeployment{}, false
	}
	if args := t.serverArgs(d, at, kind); len(args.Elts) > 0 {
		svc.Elts = append(svc.Elts, fld("extra_args", args))
	}
	// The top-level env_vars reach an auxiliary deployment too, its own winning.
	env := deepMerge(structOr(t.get("env_vars")), structOr(getIn(d, "env_vars")))
	if len(env.Elts) > 0 {
		appendField(svc, "extra_env", t.envMap(env, append(at, "env_vars")))
	}
	pool := obj(fld("nodes", nodes))
	for _, k := range []string{"ntasks_per_node", "gres"} {
		appendField(pool, k, t.get("execution."+k))
	}
	return auxDeployment{name: name, service: svc, pool: pool, refs: t.auxRefs(name, d), urlRef: "auxiliary_deployments." + name + "."}, true
}

// auxRefs are the texts the launcher replaces in a task's config for
// auxiliary deployment name: its model_id, and a url for each endpoint
// but health.
func (t *v1) auxRefs(name string, d *ast.StructLit) map[string]string {
	prefix := "auxiliary_deployments." + name + "."
	served, _ := stringOf(getIn(d, "served_model_name"))
	port := "8000"
	if p, ok := getIn(d, "port").(*ast.BasicLit); ok {
		port = p.Value
	}
	if bp := t.auxBalancerPort(name); bp != nil {
		port = bp.Value // clients call its balancer
	}
	refs := map[string]string{prefix + "model_id": served}
	if eps, ok := getIn(d, "endpoints").(*ast.StructLit); ok {
		for f := range fields(eps) {
			ep := labelOf(f)
			if p, ok := stringOf(f.Value); ok && ep != "health" {
				refs[prefix+ep+"_url"] = "http://$${" + serverHostEnv(name) + "}:" + port + p
			}
		}
	}
	return refs
}

// withAux puts the auxiliary deployments' references into the tasks'
// configs: a url reference becomes the server's address (filled in on the
// node), with the key's variable beside it; a model_id the served name.
func (t *v1) withAux(benchmarks ast.Expr, aux []auxDeployment) ast.Expr {
	if len(aux) == 0 {
		return benchmarks
	}
	keyed := map[*ast.StructLit]string{} // mappings holding a url, and whose key
	// Tasks share the mappings of the global config they were merged
	// from: each gets copies, which the later steps edit on their own.
	var walk func(x ast.Expr) ast.Expr
	walk = func(x ast.Expr) ast.Expr {
		switch n := x.(type) {
		case *ast.StructLit:
			cp := &ast.StructLit{Lbrace: n.Lbrace, Rbrace: n.Rbrace}
			for _, d := range n.Elts {
				f, ok := d.(*ast.Field)
				if !ok {
					cp.Elts = append(cp.Elts, d)
					continue
				}
				g := *f
				if s, ok := stringOf(f.Value); ok {
					g.Value = t.auxText(s, f.Value, aux, cp, keyed)
				} else {
					g.Value = walk(f.Value)
				}
				cp.Elts = append(cp.Elts, &g)
			}
			return cp
		case *ast.ListLit:
			cp := &ast.ListLit{Lbrack: n.Lbrack, Rbrack: n.Rbrack}
			for _, e := range n.Elts {
				cp.Elts = append(cp.Elts, walk(e))
			}
			return cp
		}
		return x
	}
	benchmarks = walk(benchmarks)
	for st, name := range keyed {
		if fieldOf(st, "api_key") == nil {
			st.Elts = append(st.Elts, fld("api_key", ast.NewString(serverKeyEnv(name))))
		}
	}
	return benchmarks
}

// auxText is string s (the value x of a field of st) with the references
// of aux replaced; a url reference marks st as needing aux's key.
func (t *v1) auxText(s string, x ast.Expr, aux []auxDeployment, st *ast.StructLit, keyed map[*ast.StructLit]string) ast.Expr {
	out := s
	for _, a := range aux {
		if !strings.Contains(out, a.urlRef) {
			continue
		}
		for _, ref := range sortedKeys(a.refs) {
			if strings.Contains(out, ref) && strings.HasSuffix(ref, "_url") {
				keyed[st] = a.name
			}
			out = strings.ReplaceAll(out, ref, a.refs[ref])
		}
	}
	if out == s {
		return x
	}
	return stringAt(out, x.Pos())
}
