package compiler

import (
	"errors"
	"strings"
	"testing"
)

// dynDisagg is a disaggregated dynamo recipe that validates: one prefill
// worker on p, two decode workers on dpool.
const dynDisagg = `services:
  d:
    type: dynamo
    model: /m
    image: img
    prefill:
      tensor_parallel_size: 8
      node_pool: p
    decode:
      tensor_parallel_size: 4
      num_workers: 2
      node_pool: dpool
benchmarks:
  - name: gsm8k
    solver: {type: simple, service: d}
cluster:
  type: slurm
  node_pools:
    p: {partition: gpu, nodes: 1, gres: "gpu:8"}
    dpool: {partition: gpu, nodes: 2, gres: "gpu:4"}
`

// TestDynamoAndNimRules: each rule's error, at its position, alone.
func TestDynamoAndNimRules(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(dynDisagg, old) {
			t.Fatalf("%q is not in the recipe", old)
		}
		return strings.Replace(dynDisagg, old, new, 1)
	}
	tests := []struct {
		name, src string
		want      string // "" when valid
	}{
		{"valid", dynDisagg, ""},
		{"prefill without decode", edit("    decode:\n      tensor_parallel_size: 4\n      num_workers: 2\n      node_pool: dpool\n", ""),
			`r.yaml:6:5: services.d.prefill: prefill is set but decode is not: a disaggregated dynamo service needs both (remove prefill for an aggregated one)`},
		{"missing role pool", edit("      node_pool: dpool\n", "      node_pool: nope\n"),
			`r.yaml:12:18: services.d.decode.node_pool: expected the name of a node pool, found "nope" (declared: dpool, p)`},
		{"role TP past gres", edit("tensor_parallel_size: 4", "tensor_parallel_size: 8"),
			`r.yaml:10:29: services.d.decode.tensor_parallel_size: needs 8 GPUs per node (tensor_parallel_size 8 × pipeline_parallel_size 1 × data_parallel_size 1 over 1 node(s)) but node pool "dpool" has 4`},
		// Two nodes per worker halve the GPUs each node needs.
		{"multi-node role fits", edit("tensor_parallel_size: 4\n      num_workers: 2", "tensor_parallel_size: 8\n      num_nodes: 2"), ""},
		{"workers past the pool", edit("num_workers: 2", "num_workers: 3"),
			`r.yaml:11:20: services.d.decode.num_workers: dynamo workers need 3 node(s) of node pool "dpool" (num_workers × num_nodes, every role on it together), but it has 2`},
		{"both roles on one pool count together", strings.Replace(edit("      node_pool: p\n", "      node_pool: dpool\n"), "tensor_parallel_size: 8", "tensor_parallel_size: 4", 1),
			`r.yaml:6:5: services.d.prefill.num_workers: dynamo workers need 3 node(s) of node pool "dpool" (num_workers × num_nodes, every role on it together), but it has 2`},
		// dpool is named by a role only: not unused. spare is.
		{"unused pool beside role pools", edit("  type: slurm\n", "  type: slurm\n  eval_pool: p\n") + "    spare: {nodes: 1}\n",
			`r.yaml:22:5: cluster.node_pools.spare: node pool "spare" is declared but nothing runs on it`},
		{"aggregated TP past gres", "services:\n  d: {type: dynamo, model: /m, image: img, tensor_parallel_size: 16, node_pool: p}\n" + dynDisagg[strings.Index(dynDisagg, "benchmarks:"):],
			`r.yaml:2:66: services.d.tensor_parallel_size: needs 16 GPUs per node`},
		// Both would listen on port 8001 of p's first node.
		{"a server on a dynamo port", dynDisagg[:strings.Index(dynDisagg, "benchmarks:")] + "  v: {type: vllm, model: m, port: 8001, node_pool: p}\n" + dynDisagg[strings.Index(dynDisagg, "benchmarks:"):],
			`r.yaml:13:35: services.v.port: port 8001 on node pool "p" is service "d"'s (a dynamo service takes its port, port + 1 and + 2, and NATS's 4222 and 8222 and etcd's 2379); use another port or node pool`},
		{"a server on another pool", dynDisagg[:strings.Index(dynDisagg, "benchmarks:")] + "  v: {type: vllm, model: m, port: 8001, node_pool: x}\n" + dynDisagg[strings.Index(dynDisagg, "benchmarks:"):] + "    x: {nodes: 1}\n", ""},
		{"nim without image", "services:\n  n: {type: nim, model: meta/llama}\nbenchmarks:\n  - name: gsm8k\n    solver: {type: simple, service: n}\n",
			`r.yaml:2:3: services.n: a nim service runs its container image (nvcr.io/nim/…): image is required`},
	}
	l := newTestLoader(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Load("r.yaml", []byte(tt.src), nil)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error:\n%v", err)
				}
				return
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("err = %v, want compiler.Errors", err)
			}
			if len(es) != 1 || !strings.HasPrefix(es[0].Error(), tt.want) {
				t.Errorf("errors:\n%v\nwant exactly one, starting %q", err, tt.want)
			}
		})
	}
}
