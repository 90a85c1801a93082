package compiler

import (
	"strconv"
	"strings"
)

// A service with every_node runs its pre_cmd on each of its num_nodes
// nodes, one task a node, instead of nel's own multi-node start (a Ray
// head and workers). That is how NeMo Evaluator's launcher runs every
// deployment command: one srun over the deployment's nodes, the script
// told its rank (PROC_ID, from SLURM_PROCID), the first node's address
// (MASTER_IP) and every node's (ALL_NODE_IPS), so that a command can
// start, say, vLLM's own multi-node data parallelism (a head on rank 0,
// headless engines on the others). The job waits on the first node's
// port, where the script must serve the API.

// everyNodeEnv are the variables the job gives such a script, besides
// SLURM_PROCID, which srun sets in each task.
var everyNodeEnv = []string{"MASTER_IP", "ALL_NODE_IPS"}

// everyNode checks the services' every_node.
func (c *ruleChecker) everyNode() {
	for _, name := range sortedKeys(c.r.Services) {
		if s := c.r.Services[name]; s.EveryNode {
			c.everyNodeOf(name, s)
		}
	}
}

func (c *ruleChecker) everyNodeOf(name string, s *Service) {
	switch {
	case s.PreCmd == "":
		c.at("every_node runs the service's pre_cmd on each node: set pre_cmd (the script that starts the server there)", "services", name, "every_node")
	case s.NumNodes < 2:
		c.at("every_node needs num_nodes > 1 (on one node pre_cmd runs there anyway)", "services", name, "every_node")
	case c.r.Cluster.Type != "slurm":
		c.at("every_node needs cluster.type slurm: it runs pre_cmd on each node of a SLURM job (here it would run once)", "services", name, "every_node")
	case s.Type == "dynamo":
		c.at("every_node on a dynamo service (nel starts its workers itself)", "services", name, "every_node")
	}
}

// onEveryNode reports whether s's pre_cmd runs on each of its nodes (the
// rules refuse every_node without pre_cmd or on one node).
func (s *Service) onEveryNode() bool { return s.EveryNode && s.PreCmd != "" && s.NumNodes > 1 }

// everyNodeScript is pre_cmd with the launcher's rank variables set first,
// as the launcher's `export PROC_ID=${SLURM_PROCID:-0} NODES_PER_INSTANCE=N`
// does before a deployment command.
func everyNodeScript(s *Service) string {
	return `export PROC_ID="${SLURM_PROCID:-0}" NODES_PER_INSTANCE=` + strconv.Itoa(s.NumNodes) + "\n" + s.PreCmd
}

// everyNodeFlags are the srun flags that run one task on each of the
// service's nodes, in place of --nodes=1 --ntasks=1.
func everyNodeFlags(flags []string, nodes int) []string {
	out := make([]string, 0, len(flags)+1)
	for _, f := range flags {
		switch {
		case strings.HasPrefix(f, "--nodes="):
			out = append(out, "--nodes="+strconv.Itoa(nodes))
		case strings.HasPrefix(f, "--ntasks="):
			out = append(out, "--ntasks="+strconv.Itoa(nodes), "--ntasks-per-node=1")
		default:
			out = append(out, f)
		}
	}
	return out
}
