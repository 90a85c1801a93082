package compiler

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shellquote"
	"github.com/nel-eval/nel/templates"
)

// dynamoRole is one role of a dynamo service as the job runs it: Workers
// independent sglang workers of Nodes nodes each on Pool. An aggregated
// service has one role, "", made of the service's own fields.
type dynamoRole struct {
	Name           string // "prefill", "decode", or "" (aggregated)
	Workers, Nodes int
	TP, PP, DP     int // 0 when unset: the worker's default
	Pool           string
	ExtraArgs      []string
	ExtraEnv       map[string]string
}

// dynamoRoles lists sv's roles, prefill first; an unset role node_pool is
// the service's, else evalPool.
func dynamoRoles(sv *Service, evalPool string) []dynamoRole {
	pool := func(p string) string {
		switch {
		case p != "":
			return p
		case sv.NodePool != "":
			return sv.NodePool
		}
		return evalPool
	}
	if !sv.Disaggregated() {
		return []dynamoRole{{Workers: 1, Nodes: max(sv.NumNodes, 1), TP: sv.TensorParallelSize,
			PP: sv.PipelineParallelSize, DP: sv.DataParallelSize, Pool: pool(""), ExtraArgs: sv.ExtraArgs}}
	}
	var roles []dynamoRole
	for _, name := range []string{"prefill", "decode"} {
		w := sv.role(name)
		roles = append(roles, dynamoRole{Name: name, Workers: max(w.NumWorkers, 1), Nodes: max(w.NumNodes, 1),
			TP: w.TensorParallelSize, PP: w.PipelineParallelSize, DP: w.DataParallelSize, Pool: pool(w.NodePool),
			ExtraArgs: w.ExtraArgs, ExtraEnv: w.ExtraEnv})
	}
	return roles
}

// gpus is how many GPUs one worker of the role spreads over its nodes.
func (r dynamoRole) gpus() int { return max(r.TP, 1) * max(r.PP, 1) * max(r.DP, 1) }

// dynamoAndNim checks what a dynamo or nim service needs beyond the
// schema: dynamo's prefill and decode both or neither (a lone role would
// leave the frontend without a partner to hand requests to), their node
// pools declared and large enough, their GPUs within a node's; a nim's
// image, which is the whole server.
func (c *ruleChecker) dynamoAndNim() {
	cl := c.r.Cluster
	evalPool := EvalPool(c.s)
	used := map[string]int{}    // nodes the dynamo roles take, per pool
	first := map[string][]any{} // the first role on a pool: where to say it is too small
	for _, name := range sortedKeys(c.r.Services) {
		sv := c.r.Services[name]
		switch {
		case sv.Type == "nim" && sv.Image == "":
			c.at("a nim service runs its container image (nvcr.io/nim/…): image is required", "services", name)
		case sv.Type != "dynamo":
		case (sv.Prefill == nil) != (sv.Decode == nil):
			set, missing := "prefill", "decode"
			if sv.Prefill == nil {
				set, missing = "decode", "prefill"
			}
			c.at(fmt.Sprintf("%s is set but %s is not: a disaggregated dynamo service needs both (remove %s for an aggregated one)", set, missing, set), "services", name, set)
			continue
		}
		if sv.Type != "dynamo" || cl.Type != "slurm" {
			continue
		}
		for _, r := range dynamoRoles(sv, evalPool) {
			path := []any{"services", name}
			if r.Name != "" {
				path = append(path, r.Name)
			}
			c.dynamoRole(r, path)
			if cl.NodePools[r.Pool] == nil {
				continue
			}
			used[r.Pool] += r.Workers * r.Nodes
			if first[r.Pool] == nil {
				first[r.Pool] = append(path, "num_workers")
			}
		}
	}
	for _, pool := range sortedKeys(used) {
		if have := cl.NodePools[pool].Nodes; used[pool] > have {
			c.at(fmt.Sprintf("dynamo workers need %d node(s) of node pool %q (num_workers × num_nodes, every role on it together), but it has %d", used[pool], pool, have), first[pool]...)
		}
	}
}

// dynamoPorts refuses a server that would share a port with a dynamo
// service's processes: nel starts every server on the first nodes of its
// pool, and dynamo's ports are fixed (NATS 4222 and 8222, etcd 2379, on
// the first role's first node) or follow the service's (the frontend on
// port, workers on port+1, a prefill worker's bootstrap on port+2).
func (c *ruleChecker) dynamoPorts() {
	if c.r.Cluster.Type != "slurm" {
		return
	}
	evalPool := EvalPool(c.s)
	taken := map[string]string{} // "pool:port" → the service using it
	for _, name := range sortedKeys(c.r.Services) {
		sv := c.r.Services[name]
		if !sv.Managed() {
			continue
		}
		uses := map[string][]int{cmp.Or(sv.NodePool, evalPool): {sv.Port}}
		if sv.Type == "dynamo" {
			roles := dynamoRoles(sv, evalPool)
			uses = map[string][]int{roles[0].Pool: {sv.Port, dynamoNATSPort, dynamoNATSMonitorPort, dynamoEtcdPort}}
			for _, r := range roles {
				uses[r.Pool] = append(uses[r.Pool], sv.Port+dynamoWorkerOffset)
				if r.Name == "prefill" {
					uses[r.Pool] = append(uses[r.Pool], sv.Port+dynamoBootstrapOffset)
				}
			}
		}
		for _, pool := range sortedKeys(uses) {
			for _, port := range uses[pool] {
				k := pool + ":" + strconv.Itoa(port)
				other, ok := taken[k]
				if ok && other != name && (sv.Type == "dynamo" || c.r.Services[other].Type == "dynamo") {
					c.at(fmt.Sprintf("port %d on node pool %q is service %q's (a dynamo service takes its port, port + 1 and + 2, and NATS's 4222 and 8222 and etcd's 2379); use another port or node pool", port, pool, other), "services", name, "port")
					return
				}
				taken[k] = name
			}
		}
	}
}

// dynamoRole checks one role's node pool and GPUs per node.
func (c *ruleChecker) dynamoRole(r dynamoRole, path []any) {
	cl := c.r.Cluster
	p := cl.NodePools[r.Pool]
	if p == nil {
		if r.Name != "" && c.r.Services[path[1].(string)].role(r.Name).NodePool != "" {
			c.at(fmt.Sprintf("expected the name of a node pool, found %q%s", r.Pool, knownList(sortedKeys(cl.NodePools))), append(path, "node_pool")...)
		}
		return // the service's own node_pool is said by cluster()
	}
	gpus, known := gpusPerNode(p)
	perNode := (r.gpus() + r.Nodes - 1) / r.Nodes
	if known && perNode > gpus {
		c.at(fmt.Sprintf("needs %d GPUs per node (tensor_parallel_size %d × pipeline_parallel_size %d × data_parallel_size %d over %d node(s)) but node pool %q has %d",
			perNode, max(r.TP, 1), max(r.PP, 1), max(r.DP, 1), r.Nodes, r.Pool, gpus), append(path, "tensor_parallel_size")...)
	}
}

// dynamoNimSupport refuses what nel cannot run yet of a dynamo or nim
// service; stop says it cannot run here at all (nothing more to say).
func (c *ruleChecker) dynamoNimSupport(no func(feature string, path ...any), name string, sv *Service) (stop bool) {
	if c.r.Cluster.Type == "local" && (sv.Type == "dynamo" || sv.Type == "nim") {
		what := "containers"
		if sv.Type == "dynamo" {
			what = "containers, NATS or etcd"
		}
		no(fmt.Sprintf("%s on a local cluster (nel run starts no %s); use cluster.type slurm", sv.Type, what), "services", name, "type")
		return true
	}
	if sv.Type == "nim" && len(sv.ExtraArgs) > 0 {
		no("extra_args on a nim service (a NIM takes its settings from NIM_* variables: use extra_env)", "services", name, "extra_args")
	}
	c.envWords(name, sv)
	for _, role := range []string{"prefill", "decode"} {
		w := sv.role(role)
		if w == nil {
			continue
		}
		c.extraEnv(w.ExtraEnv, "services", name, role, "extra_env")
		for _, k := range sortedKeys(w.ExtraEnv) {
			if ref, ok := parseWholeEnvRef(w.ExtraEnv[k]); ok && ref.Default != nil {
				no("${VAR:-default} in a dynamo role's extra_env (write ${VAR} and set it before sbatch)", "services", name, role, "extra_env", k)
			}
		}
	}
	return false
}

// dynamoRolePools are the node pools named by dynamo roles.
func dynamoRolePools(sv *Service) []string {
	var pools []string
	for _, w := range []*DynamoWorker{sv.Prefill, sv.Decode} {
		if w != nil && w.NodePool != "" {
			pools = append(pools, w.NodePool)
		}
	}
	return pools
}

// nimStart is the script that starts a NIM for LLMs inside its image.
const nimStart = "/opt/nim/start_server.sh"

// Dynamo's ports, as NeMo Evaluator's generated scripts use them: the
// frontend on the service's port, a worker's own on the next one, a
// prefill worker's KV bootstrap server on the one after; NATS and etcd on
// their defaults (NATS's monitoring port answers its health check).
const (
	dynamoNATSPort        = 4222
	dynamoNATSMonitorPort = 8222
	dynamoEtcdPort        = 2379
	dynamoWorkerOffset    = 1
	dynamoBootstrapOffset = 2
	dynamoDistInitPort    = 29500
)

// dynamoWorkerCmd quotes a worker's argv; its model (argv[4], after
// --model-path) is a shellWord, whose ${VAR} the node's shell expands.
func dynamoWorkerCmd(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = shellquote.Quote(a)
	}
	words[4] = shellWord(argv[4])
	return strings.Join(words, " ")
}

// dynamoWorkerArgv is a worker's command before its multi-node flags and
// extra_args: python3 -m dynamo.sglang with the role's parallelism.
func dynamoWorkerArgv(name string, s *Service, r dynamoRole) []string {
	itoa := strconv.Itoa
	argv := []string{"python3", "-m", "dynamo.sglang", "--model-path", s.Model, // argv[4]: dynamoWorkerCmd
		"--served-model-name", servedName(name, s),
		"--host", "0.0.0.0", "--port", itoa(s.Port + dynamoWorkerOffset)}
	for _, f := range []struct {
		flag string
		n    int
		min  int
	}{{"--tp-size", r.TP, 1}, {"--pp-size", r.PP, 2}, {"--dp-size", r.DP, 2}} {
		if f.n >= f.min { // tensor parallelism as written, the others when they parallelise
			argv = append(argv, f.flag, itoa(f.n))
		}
	}
	if r.Name != "" {
		argv = append(argv, "--disaggregation-mode", r.Name)
	}
	if r.Name == "prefill" {
		argv = append(argv, "--disaggregation-bootstrap-port", itoa(s.Port+dynamoBootstrapOffset))
	}
	return argv
}

// dynamoServer is how the job starts a dynamo service: NATS and etcd, then
// the frontend, on the first node of its first role; then every worker,
// one srun per node, placed by index into the node lists of its role.
type dynamoServer struct {
	Mode                      string
	Arrays                    []dynamoNodes
	Host                      string   // shell expression of the frontend's node
	Exports                   []string // complete statements
	NATS, Etcd                dynamoLaunch
	Frontend                  dynamoLaunch
	Workers                   []dynamoLaunch
	Prefill, Decode           int // the workers the frontend must list to be ready
	NATSMonitorPort, EtcdPort int
}

// dynamoNodes fills array Var with lines From..To of a node list.
type dynamoNodes struct {
	Var, NodeListVar string
	From, To         int
}

// dynamoLaunch is one srun of a dynamo service; every field is pre-quoted.
type dynamoLaunch struct {
	Var                                       string // the service's, for its log and pids
	Comment, Env, SrunFlags, Node, Pyxis, Cmd string
}

// dynamoLayout places sv's processes. envNames are the variables serverEnv
// exports for it, which its containers must see.
func (j *job) dynamoLayout(s *Source, sv plan.Service, pools []string, envNames []string) *dynamoServer {
	cl := s.Recipe.Cluster
	rs := s.Recipe.Services[sv.Name]
	v := templates.EnvName(sv.Name)
	d := &dynamoServer{NATSMonitorPort: dynamoNATSMonitorPort, EtcdPort: dynamoEtcdPort, Decode: 1}
	d.Exports = []string{
		"export DYN_REQUEST_PLANE=nats",
		fmt.Sprintf(`export NATS_SERVER="nats://$nel_host_%s:%d"`, v, dynamoNATSPort),
		fmt.Sprintf(`export ETCD_ENDPOINTS="http://$nel_host_%s:%d"`, v, dynamoEtcdPort),
		"export DYN_SKIP_SGLANG_LOG_FORMATTING=1",
	}
	envNames = append(slices.Clone(envNames), "DYN_REQUEST_PLANE", "NATS_SERVER", "ETCD_ENDPOINTS", "DYN_SKIP_SGLANG_LOG_FORMATTING")
	roles := dynamoRoles(rs, j.EvalPool)
	taken := map[string]int{} // nodes of a pool that earlier roles took
	var modes []string
	for ri, r := range roles {
		arr := "nel_nodes_" + v
		if r.Name != "" {
			arr += "_" + r.Name
		}
		gi := slices.Index(pools, r.Pool)
		flags := "--overlap --mem=0 --nodes=1 --ntasks=1"
		list := dynamoNodes{Var: arr, NodeListVar: "SLURM_JOB_NODELIST", From: taken[r.Pool] + 1}
		if j.Het {
			flags += " --het-group=" + strconv.Itoa(gi)
			list.NodeListVar = "SLURM_JOB_NODELIST_HET_GROUP_" + strconv.Itoa(gi)
		}
		list.To = list.From + r.Workers*r.Nodes - 1
		taken[r.Pool] = list.To
		d.Arrays = append(d.Arrays, list)
		env, names := roleEnv(r.ExtraEnv)
		pyxis, infraPyxis := "", ""
		if rs.Image != "" {
			pyxis = pyxisFlags(cl, rs, append(slices.Clone(envNames), names...), "")
			infraPyxis = pyxisFlags(cl, rs, envNames, "") // a role's own variables are not set for these
		}
		if ri == 0 {
			d.Host = "${" + arr + "[0]}"
			node := "$nel_host_" + v
			pyxis := infraPyxis
			d.NATS = dynamoLaunch{Var: v, SrunFlags: flags, Node: node, Pyxis: pyxis,
				Cmd: fmt.Sprintf("nats-server -js -m %d", dynamoNATSMonitorPort)}
			d.Etcd = dynamoLaunch{Var: v, SrunFlags: flags, Node: node, Pyxis: pyxis,
				Cmd: fmt.Sprintf(`etcd --data-dir "/tmp/nel-etcd-$SLURM_JOB_ID-%s" --listen-client-urls http://0.0.0.0:%d --advertise-client-urls "http://%s:%d"`, v, dynamoEtcdPort, node, dynamoEtcdPort)}
			d.Frontend = dynamoLaunch{Var: v, SrunFlags: flags, Node: node, Pyxis: pyxis,
				Cmd: fmt.Sprintf("python3 -m dynamo.frontend --http-port %d", rs.Port)}
		}
		base := dynamoWorkerCmd(dynamoWorkerArgv(sv.Name, rs, r))
		for w := range r.Workers {
			for k := range r.Nodes {
				l := dynamoLaunch{Var: v, Env: env, SrunFlags: flags, Node: fmt.Sprintf("${%s[%d]}", arr, w*r.Nodes+k), Pyxis: pyxis, Cmd: base}
				l.Comment = fmt.Sprintf("%s worker %d", cmp.Or(r.Name, "aggregated"), w)
				if r.Nodes > 1 {
					l.Comment += fmt.Sprintf(", node %d of %d", k, r.Nodes)
					l.Cmd += fmt.Sprintf(` --nnodes %d --node-rank %d --dist-init-addr "${%s[%d]}:%d"`, r.Nodes, k, arr, w*r.Nodes, dynamoDistInitPort)
				}
				if len(r.ExtraArgs) > 0 {
					l.Cmd += " " + shellquote.Join(r.ExtraArgs)
				}
				d.Workers = append(d.Workers, l)
			}
		}
		switch r.Name {
		case "prefill":
			d.Prefill = r.Workers
		case "decode":
			d.Decode = r.Workers
		}
		modes = append(modes, fmt.Sprintf("%d %s worker(s) × %d node(s) on node pool %s", r.Workers, cmp.Or(r.Name, "aggregated"), r.Nodes, r.Pool))
	}
	d.Mode = strings.Join(modes, ", ")
	return d
}

// roleEnv renders a role's extra_env as assignments that prefix its
// workers' srun (they apply to that srun alone), and their names.
func roleEnv(env map[string]string) (prefix string, names []string) {
	for _, k := range sortedKeys(env) {
		val := shellquote.Quote(env[k])
		if ref, ok := parseWholeEnvRef(env[k]); ok {
			val = `"$` + ref.Name + `"`
		}
		prefix += k + "=" + val + " "
		names = append(names, k)
	}
	return prefix, names
}
