package compiler

import (
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// The launcher's num_instances: execution.num_instances copies of the
// deployment (an auxiliary deployment's own num_instances), num_nodes
// split evenly between them, behind HAProxy (execution.proxy). In nel that
// is the service's instances (instances.go), with num_nodes per instance
// and the balancer's image and port. The model's balancer listens on
// execution.proxy.config.haproxy_port; an auxiliary deployment's on 5010,
// 5011, … in the order the config lists them, as the launcher assigns.

// auxBalancerPort is the launcher's first port for the balancers of
// auxiliary deployments.
const auxBalancerPort = 5010

// instances reads the instance count n (at) of a deployment whose
// num_nodes (all instances together) is nodes, and adds to server svc its
// instances, per-instance num_nodes and a balancer on port (nil: the
// launcher's execution.proxy). ok is false where it refused.
func (t *v1) instances(svc *ast.StructLit, n, nodes ast.Expr, at []any, port ast.Expr) (ok bool) {
	count, isInt := intOf(n)
	if n == nil || (isInt && count <= 1) {
		return true
	}
	if !isInt {
		t.refuse(n, at, "expected a whole number of instances")
		return false
	}
	total := 1
	if nodes != nil {
		if total, isInt = intOf(nodes); !isInt {
			t.refuse(nodes, at, "expected a whole number of nodes")
			return false
		}
	}
	if total%count != 0 {
		// The launcher's own check: each instance gets num_nodes / num_instances nodes.
		t.refuse(n, at, "num_nodes (%d) must be divisible by num_instances (%d): each instance runs on num_nodes / num_instances nodes", total, count)
		return false
	}
	if !t.proxyKnown(svc) {
		return false
	}
	pos := n.Pos()
	setField(svc, "num_nodes", &ast.BasicLit{Kind: token.INT, ValuePos: pos, Value: strconv.Itoa(total / count)})
	svc.Elts = append(svc.Elts, fld("instances", n))
	if port == nil {
		port = t.get("execution.proxy.config.haproxy_port")
	}
	balancer := obj()
	appendField(balancer, "image", t.get("execution.proxy.image"))
	appendField(balancer, "port", port)
	svc.Elts = append(svc.Elts, fld("balancer", balancer))
	return true
}

// proxyKnown refuses what nel's balancer does not do of execution.proxy:
// another proxy type, or a health check other than the server's health
// path answering 200.
func (t *v1) proxyKnown(svc *ast.StructLit) bool {
	px, _ := t.get("execution.proxy").(*ast.StructLit)
	if px == nil {
		return true
	}
	at := []any{"execution", "proxy"}
	t.known(px, at, "type", "image", "config")
	if typ := t.str("execution.proxy.type"); typ != "" && typ != "haproxy" {
		// The launcher refuses it too.
		t.refuse(t.get("execution.proxy.type"), append(at, "type"), "expected proxy type haproxy, the only one there is, found %q", typ)
		return false
	}
	if cfg, ok := t.get("execution.proxy.config").(*ast.StructLit); ok {
		t.known(cfg, append(at, "config"), "haproxy_port", "health_check_path", "health_check_status")
	}
	if v := t.get("execution.proxy.config.health_check_status"); v != nil {
		if s, _ := intOf(v); s != 200 {
			t.refuse(v, append(at, "config", "health_check_status"), "not supported yet: a health check status other than 200")
			return false
		}
	}
	health := "/health"
	if h, ok := stringOf(getIn(svc, "health_path")); ok {
		health = h
	}
	if v := t.get("execution.proxy.config.health_check_path"); v != nil {
		if p, _ := stringOf(v); p != health {
			t.refuse(v, append(at, "config", "health_check_path"), "not supported yet: a balancer health check path (%s) other than the deployment's health endpoint (%s)", p, health)
			return false
		}
	}
	return true
}

// setField sets st's field name to v, adding it when st has none.
func setField(st *ast.StructLit, name string, v ast.Expr) {
	if f := fieldOf(st, name); f != nil {
		f.Value = v
		return
	}
	st.Elts = append(st.Elts, fld(name, v))
}

// instancesOutsideServer says what execution.num_instances does where the
// deployment is no server nel starts as instances: nothing with
// deployment none (the launcher ignores it there too), and not yet for a
// generic one.
func (t *v1) instancesOutsideServer() {
	n := t.get("execution.num_instances")
	if c, ok := intOf(n); !ok || c <= 1 {
		return
	}
	at := []any{"execution", "num_instances"}
	switch typ := t.str("deployment.type"); typ {
	case "none":
		t.warn(n, at, "num_instances does nothing with deployment none: the endpoint is target.api_endpoint.url")
	case "generic":
		t.refuse(n, at, "not supported yet: several instances of a generic deployment (nel runs vllm, sglang, trtllm and nim deployments as instances)")
	}
}

// auxBalancerPort is the port of auxiliary deployment name's balancer: the
// launcher gives 5010 to the first (in config order) with num_instances >
// 1, 5011 to the next, …; nil when name has none.
func (t *v1) auxBalancerPort(name string) *ast.BasicLit {
	aux, _ := t.get("auxiliary_deployments").(*ast.StructLit)
	port := auxBalancerPort
	for f := range fields(aux) {
		d, _ := f.Value.(*ast.StructLit)
		if typ, _ := stringOf(getIn(d, "type")); d == nil || typ == "none" {
			continue
		}
		if n, _ := intOf(getIn(d, "num_instances")); n > 1 {
			if labelOf(f) == name {
				return &ast.BasicLit{Kind: token.INT, ValuePos: getIn(d, "num_instances").Pos(), Value: strconv.Itoa(port)}
			}
			port++
		}
	}
	return nil
}
