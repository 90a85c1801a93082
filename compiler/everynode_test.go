package compiler

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const everyNodeRecipe = `services:
  m:
    type: vllm
    model: org/m
    num_nodes: 2
    every_node: true
    pre_cmd: 'echo "rank=$PROC_ID of=$NODES_PER_INSTANCE head=$MASTER_IP"'
benchmarks: [{name: gsm8k, solver: {type: simple, service: m}}]
cluster: {type: slurm, walltime: "01:00:00", node_pools: {gpu: {nodes: 2, ntasks_per_node: 1}}}
`

// The plan's command sets the launcher's rank variables from srun's
// SLURM_PROCID before the user's script, which then sees them.
func TestEveryNodeScriptRuns(t *testing.T) {
	_, p := guardedPlan(t, everyNodeRecipe)
	argv := p.Services[0].Command
	if len(argv) < 3 || argv[0] != "bash" || argv[1] != "-c" {
		t.Fatalf("command = %q, want bash -c SCRIPT", argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SLURM_PROCID=1", "MASTER_IP=10.0.0.7")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "rank=1 of=2 head=10.0.0.7"; got != want {
		t.Errorf("script printed %q, want %q", got, want)
	}
}

func TestEveryNodeRules(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"    pre_cmd: 'echo \"rank=$PROC_ID of=$NODES_PER_INSTANCE head=$MASTER_IP\"'\n", "",
			"r.yaml:6:17: services.m.every_node: every_node runs the service's pre_cmd on each node: set pre_cmd (the script that starts the server there)"},
		{"    num_nodes: 2\n", "",
			"r.yaml:5:17: services.m.every_node: every_node needs num_nodes > 1 (on one node pre_cmd runs there anyway)"},
		{`cluster: {type: slurm, walltime: "01:00:00", node_pools: {gpu: {nodes: 2, ntasks_per_node: 1}}}`, "cluster: {type: local}",
			"r.yaml:6:17: services.m.every_node: every_node needs cluster.type slurm: it runs pre_cmd on each node of a SLURM job (here it would run once)"},
	} {
		_, err := newTestLoader(t).Load("r.yaml", []byte(strings.Replace(everyNodeRecipe, c.from, c.to, 1)), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("without %q: error %v, want %q", strings.TrimSpace(c.from), err, c.want)
		}
	}
}
