package compiler

import (
	"slices"

	"cuelang.org/go/cue/ast"
)

// The launcher's published examples (nemo-evaluator-launcher main-legacy,
// examples/) write some fields one level from where the launcher and
// nemo-evaluator read them. nel reads each where it belongs and says so in
// a warning, rather than refuse a published recipe or drop the field:
//
//   - a task's config: the launcher's older spelling of
//     nemo_evaluator_config, which its helpers still read
//     (get_eval_factory_config takes nemo_evaluator_config, else config);
//   - a task's target: the adapter settings of nemo_evaluator_config.target;
//   - config.extra in a nemo_evaluator_config: nemo-evaluator's schema has
//     extra under config.params only;
//   - env_vars in a nemo_evaluator_config: the task's env_vars.

// taskLayer is a task's own nemo_evaluator_config, with its legacy
// spelling (config) and a misplaced target read into it.
func (t *v1) taskLayer(st *ast.StructLit, at []any) ast.Expr {
	layer := getIn(st, "nemo_evaluator_config")
	if old := fieldOf(st, "config"); old != nil && !isNull(old.Value) {
		if layer != nil {
			t.refuse(old, append(slices.Clip(at), "config"), "config is the launcher's older name of nemo_evaluator_config: write one of them")
		} else if _, ok := old.Value.(*ast.StructLit); !ok {
			t.refuse(old.Value, append(slices.Clip(at), "config"), "expected a mapping (config, target), the launcher's older name of nemo_evaluator_config")
		} else {
			t.warn(old, append(slices.Clip(at), "config"), "read as nemo_evaluator_config (the launcher's older name of it; its current validation refuses config here)")
			layer = old.Value
		}
	}
	if tg := fieldOf(st, "target"); tg != nil && !isNull(tg.Value) {
		t.warn(tg, append(slices.Clip(at), "target"), "read as nemo_evaluator_config.target (the launcher reads a task's endpoint settings there only)")
		layer = deepMerge(structOr(layer), obj(fld("target", tg.Value)))
	}
	return layer
}

// moveMisplaced returns the nemo_evaluator_config layer l (written at at)
// with config.extra read as config.params.extra, and its env_vars, which
// the caller adds to the task's.
func (t *v1) moveMisplaced(l *ast.StructLit, at []any) (*ast.StructLit, ast.Expr) {
	var env ast.Expr
	if f := fieldOf(l, "env_vars"); f != nil {
		t.warn(f, append(slices.Clip(at), "env_vars"), "read as the task's env_vars (nemo-evaluator's config has no env_vars)")
		env = f.Value
	}
	cfg, _ := getIn(l, "config").(*ast.StructLit)
	extra := fieldOf(structOr(cfg), "extra")
	if env == nil && extra == nil {
		return l, nil
	}
	out := obj()
	for f := range fields(l) {
		if labelOf(f) != "env_vars" && labelOf(f) != "config" {
			out.Elts = append(out.Elts, f)
		}
	}
	if cfg != nil {
		c := obj()
		for f := range fields(cfg) {
			if f != extra {
				c.Elts = append(c.Elts, f)
			}
		}
		if extra != nil {
			t.warn(extra, append(slices.Clip(at), "config", "extra"), "read as config.params.extra (nemo-evaluator's schema has extra under params)")
			c = deepMerge(c, obj(fld("params", obj(fld("extra", extra.Value)))))
		}
		out.Elts = append(out.Elts, fld("config", c))
	}
	return out, env
}

// parallelArgs adds what nel's vLLM command line does not say of the
// launcher's parallelism: the executor backend on one node (nel's
// multi-node vllm runs over Ray, which is the only backend it takes
// there).
func (t *v1) parallelArgs(d *ast.StructLit, kind string, args *ast.ListLit) {
	nodes, _ := intOf(t.get("execution.num_nodes"))
	if v := getIn(d, "distributed_executor_backend"); v != nil {
		backend, _ := stringOf(v)
		switch {
		case kind != "vllm":
			t.refuse(v, []any{"deployment", "distributed_executor_backend"}, "not supported: distributed_executor_backend is vLLM's")
		case nodes > 1 && backend != "ray":
			t.refuse(v, []any{"deployment", "distributed_executor_backend"}, "not supported yet: %s across nodes (nel's multi-node vLLM runs over Ray)", backend)
		case nodes <= 1:
			args.Elts = append(args.Elts, stringAt("--distributed-executor-backend="+backend, v.Pos()))
		}
	}
	// The launcher's code never reads data_parallel_size_local: a command
	// of the config's own refers to it (${deployment.…}, resolved by
	// then); the server command it builds, like nel's, does not.
	if v := getIn(d, "data_parallel_size_local"); v != nil && getIn(d, "command") == nil {
		t.warn(v, []any{"deployment", "data_parallel_size_local"}, "not used: the launcher's server command does not take it, nor does nel's (only a deployment.command that refers to it would)")
	}
}

// serverCommand reads a deployment's own command, which replaces the
// server command the launcher builds from the deployment's fields: on one
// node it is the service's pre_cmd (the script that starts the server, as
// written); across nodes it is that pre_cmd run on every node (every_node:
// one task a node, with the launcher's MASTER_IP, ALL_NODE_IPS and
// PROC_ID), as the launcher runs it, and nel starts no Ray cluster.
func (t *v1) serverCommand(d *ast.StructLit, out *ast.StructLit) {
	cmd := getIn(d, "command")
	if cmd == nil {
		return
	}
	at := []any{"deployment", "command"}
	if _, ok := stringOf(cmd); !ok {
		t.refuse(cmd, at, "expected the server's command line")
		return
	}
	out.Elts = append(out.Elts, fld("pre_cmd", cmd))
	if nodes, _ := intOf(t.get("execution.num_nodes")); nodes > 1 {
		out.Elts = append(out.Elts, fld("every_node", ast.NewBool(true)))
	}
}
