package compiler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/serve"
	"github.com/nel-eval/nel/runtime/shellquote"
	"github.com/nel-eval/nel/templates"
)

// CompileOptions are the inputs of Compile besides the recipe.
type CompileOptions struct {
	Target       string // "slurm" (default), "make" or "k8s"
	NelVersion   string
	NelRun       string // path of nel-run on the nodes
	NelRunSHA256 string // its sha256 (hex)
	Reproduce    string // the command line that compiles this again
	K8s          K8sOptions
}

// Compile emits the job for a validated recipe: an sbatch script, a
// Makefile, or Kubernetes objects (k8s.go). The output depends only on its inputs: the same recipe,
// options and nel version give the same bytes.
func Compile(s *Source, opts CompileOptions) ([]byte, error) {
	h, _, err := ComputeHashes(s)
	if err != nil {
		return nil, err
	}
	s = withGymCmdServers(s) // after the hashes, which cover the names only
	p, err := buildPlan(s, h, opts.NelVersion, opts.Target)
	if err != nil {
		return nil, err
	}
	if opts.Target == "k8s" {
		return compileK8s(s, p, opts)
	}
	if opts.Target == "" || opts.Target == "slurm" {
		if err := guardServers(s, p); err != nil {
			return nil, err
		}
	}
	j, err := newJob(s, p, opts)
	if err != nil {
		return nil, err
	}
	t, err := templates.Parse(nil)
	if err != nil {
		return nil, err
	}
	name := "sbatch"
	switch opts.Target {
	case "", "slurm":
	case "make":
		name = "makefile"
		if err := harnessOffSLURM(s, "a Makefile (-t make)"); err != nil {
			return nil, err
		}
		if err := checkMakeSafe(s, j); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown target %q: expected slurm, make or k8s", opts.Target)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, j); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// job is the template's view of a plan: every value that reaches a shell
// line is already quoted (shellquote.Quote) or known to be plain.
type job struct {
	NelVersion, Recipe, RecipeHash, PlanHash, Reproduce string
	OutputDir, NelRun, NelRunSHA256                     string
	PlanJSON, PlanSHA256, PlanDelim                     string
	Run, Output                                         scriptDir // the run folder under the script's variable, and under "<output>" for comments
	Groups                                              []sbatchGroup
	Het, Array, AutoResume                              bool
	MaxRetries                                          int
	Secrets                                             []secret
	Levels                                              [][]server // sbatch: servers in start order
	Servers                                             []server   // make: the managed services
	Sandboxes                                           []sandboxPool
	Benchmarks                                          []plan.Benchmark
	Harness                                             map[string]harnessStep // the harness benchmarks' steps, by key
	Shards, EvalGroup, EvalNodes                        int
	EvalPool                                            string
}

type sbatchGroup struct {
	Pool  string
	Lines []string
}

type secret struct{ Name, Where string }

type server struct {
	Name, Type, Image, Var, Log     string
	URLEnv, NodeListVar, HealthPath string
	// BasePath follows host:port in URLEnv's value (serve.BasePath).
	BasePath                string
	Port, Timeout, NumNodes int
	SrunFlags, Pyxis, Cmd   string   // pre-quoted
	Env                     []string // complete shell statements
	// WaitFlags are wait-ready's flags beyond the usual (pre-quoted).
	WaitFlags string
	// Dynamo is set for a dynamo service, which the "dynamo" template
	// starts instead of Cmd.
	Dynamo *dynamoServer
	// HostEnv and KeyEnv carry the server's address and the job's key
	// for it (serverkey.go); KeyEnv is empty for a server without a key.
	HostEnv, KeyEnv string
	// ServerKey is how the server gets the key: a variable assignment
	// before srun, or a flag after its command (pre-quoted).
	ServerKeyAssign, ServerKeyFlag string
	// Note says what the server cannot do of binding and keys.
	Note  string
	Bound bool // listens on HostEnv only
	Setup bool // Cmd is a bash -c script of setup_commands or pre_cmd
	// Serves: Cmd is nel-run serve of the benchmark a gym service serves.
	Serves bool
	// EveryNode runs Cmd on each of NumNodes nodes (everynode.go).
	EveryNode bool
	Het       bool // its clients may be on other nodes
	// Instances > 1 starts that many copies of Cmd, NumNodes nodes each
	// (TotalNodes in all), on InstancePort behind a balancer on Port
	// (instances.go): BalancerConfig writes its config, BalancerSrun runs
	// it after srun's flags (both pre-quoted).
	Instances, InstancePort, TotalNodes int
	BalancerConfig, BalancerSrun        string
}

// sandboxPool is a slurm sandbox: a sandbox server (nel-run sandbox-serve)
// on each node of its node pool, whose addresses the shards get in
// EndpointsEnv.
type sandboxPool struct {
	Name, Var, Log, Image, Pool         string
	EndpointsEnv, TokenEnv, NodeListVar string
	Port, Nodes, Slots, Timeout         int
	SrunFlags, Pyxis, Env               string // pre-quoted
	Engine                              string // the servers' engine; "" for local
	Argv                                []string
}

// isSandboxPool says whether sandbox sb is a pool of sandbox servers on a
// node pool of the job: a slurm sandbox, or an apptainer sandbox with
// node_pool (NeMo Evaluator runs its containers on those nodes).
func isSandboxPool(sb *Sandbox) bool {
	return sb.Type == "slurm" || sb.Type == "apptainer" && sb.NodePool != ""
}

// sandboxEndpointsEnv is runtime/sandbox.EndpointsEnv (the variable the
// shards read the pool's servers from), spelled here so that nel does not
// link the sandbox engines; a test keeps the two equal.
func sandboxEndpointsEnv(name string) string {
	return "NEL_SANDBOX_" + templates.EnvName(name) + "_ENDPOINTS"
}

// sandboxTokenEnv is runtime/sandbox.PoolTokenEnv: the variable holding the
// token the job makes for a pool, which its servers require of every
// request and the shards send.
func sandboxTokenEnv(name string) string {
	return "NEL_SANDBOX_" + templates.EnvName(name) + "_TOKEN"
}

// sandboxBasePort is the first port of the sandbox servers: the recipe has
// no field for it, so the n-th slurm sandbox (by name) listens on the n-th
// port from here that no managed service uses.
const sandboxBasePort = 18800

// sandboxReadyTimeout bounds the wait for a sandbox pool, image pull
// included.
const sandboxReadyTimeout = 600

var hexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func newJob(s *Source, p *plan.Plan, opts CompileOptions) (*job, error) {
	r := s.Recipe
	if !hexRE.MatchString(opts.NelRunSHA256) {
		return nil, fmt.Errorf("nel-run sha256 %q: expected 64 lowercase hex digits", opts.NelRunSHA256)
	}
	pj, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	sum := sha256.Sum256(append(slices.Clone(pj), '\n'))
	out := rundir.Dir("$NEL_OUT") // the scripts' variable for output.dir
	if opts.Target == "make" {
		out = "$(NEL_OUT)"
	}
	j := &job{
		NelVersion:   opts.NelVersion,
		Recipe:       s.Path,
		RecipeHash:   p.RecipeHash,
		PlanHash:     p.PlanHash,
		Reproduce:    opts.Reproduce,
		OutputDir:    p.OutputDir,
		NelRun:       opts.NelRun,
		NelRunSHA256: opts.NelRunSHA256,
		PlanJSON:     string(pj),
		PlanSHA256:   hex.EncodeToString(sum[:]),
		PlanDelim:    templates.HeredocDelimiter(string(pj), "NEL_PLAN_EOF"),
		Run:          scriptDir{out, p.PlanHash},
		Output:       scriptDir{rundir.Dir("<output>"), p.PlanHash},
		Benchmarks:   p.Benchmarks,
		Shards:       p.Shards,
		EvalNodes:    1,
	}
	j.Secrets = jobSecrets(r, p)
	if opts.Target == "make" {
		for _, sv := range p.Services {
			if sv.Managed {
				j.Servers = append(j.Servers, server{Name: sv.Name})
			}
		}
		return j, nil
	}
	if r.Cluster.Type != "slurm" {
		// A recipe written for a local run still compiles to SLURM: one
		// node of the site's default partition with the schema's defaults.
		r = shallowCopy(r)
		r.Cluster = s.defaultSlurm
		s = &Source{Path: s.Path, Files: s.Files, Dir: s.Dir, Recipe: r, Value: s.Value}
	}
	j.AutoResume = r.Cluster.AutoResume
	j.MaxRetries = r.Cluster.MaxRetries
	if err := j.layout(s, p); err != nil {
		return nil, err
	}
	j.harnessSteps(s, p)
	return j, nil
}

// jobSecrets are the variables the job takes from the environment it is
// submitted in (by name, never by value): the keys, environment values and
// url references of the plan's services, one each, sorted by name.
func jobSecrets(r *Recipe, p *plan.Plan) []secret {
	var secrets []secret
	for _, sv := range p.Services {
		if sv.APIKey != nil && sv.APIKey.Default == nil && !sv.Managed { // a managed server's is the job's own
			secrets = append(secrets, secret{Name: sv.APIKey.Name, Where: "services." + sv.Name + ".api_key"})
		}
		for _, e := range sv.Env {
			if e.From != nil && e.From.Default == nil {
				secrets = append(secrets, secret{Name: e.From.Name, Where: "services." + sv.Name + ".extra_env." + e.Name})
			}
		}
		for _, name := range envRefsIn(sv.URL) {
			if name != "" && !strings.Contains(sv.URL, "${"+name+":-") {
				secrets = append(secrets, secret{Name: name, Where: "services." + sv.Name + ".url"})
			}
		}
		for _, role := range []string{"prefill", "decode"} {
			w := r.Services[sv.Name].role(role)
			if w == nil {
				continue
			}
			for _, k := range sortedKeys(w.ExtraEnv) {
				if ref, ok := parseWholeEnvRef(w.ExtraEnv[k]); ok {
					secrets = append(secrets, secret{Name: ref.Name, Where: "services." + sv.Name + "." + role + ".extra_env." + k})
				}
			}
		}
		if rs := r.Services[sv.Name]; refsInWords(rs) {
			for _, f := range []struct{ field, v string }{{"model", rs.Model}, {"image", rs.Image}} {
				for _, name := range envRefsIn(f.v) {
					secrets = append(secrets, secret{Name: name, Where: "services." + sv.Name + "." + f.field})
				}
			}
		}
	}
	// One check per variable, however many fields name it.
	slices.SortStableFunc(secrets, func(a, b secret) int { return strings.Compare(a.Name, b.Name) })
	secrets = slices.CompactFunc(secrets, func(a, b secret) bool { return a.Name == b.Name })
	return secrets
}

// layout decides the SLURM shape: which node pools become het-job
// components, where servers and shards run, and the #SBATCH lines.
func (j *job) layout(s *Source, p *plan.Plan) error {
	pools := j.choosePools(s, p)
	jobName := "nel-" + safeDir(p.Benchmarks[0].Key)
	if strings.HasPrefix(p.Benchmarks[0].Key, "gym://cmd:") {
		// The key is the environment's whole command line: squeue and
		// sacct would show it, flags and all, as the job's name.
		jobName = "nel-gym_cmd"
	}
	if len(p.Benchmarks) > 1 {
		jobName = "nel-suite"
	}
	for gi, name := range pools {
		g, err := j.sbatchLines(s, p, gi, name, jobName)
		if err != nil {
			return err
		}
		j.Groups = append(j.Groups, g)
	}
	j.servers(s, p, pools)
	return j.sandboxPools(s, p, pools)
}

// choosePools returns the node pools the job allocates, in the recipe's
// order: the shards' pool, the pools of managed services and those of
// sandboxes. It sets how the job is shaped: a heterogeneous job when there
// is more than one, else a job array when there are several shards.
func (j *job) choosePools(s *Source, p *plan.Plan) []string {
	r := s.Recipe
	cl := r.Cluster
	order := poolOrder(s.Value)
	if len(order) == 0 {
		order = sortedKeys(cl.NodePools)
	}
	j.EvalPool = EvalPool(s)
	used := map[string]bool{j.EvalPool: true}
	for _, sv := range p.Services {
		if rs := r.Services[sv.Name]; rs.Type == "dynamo" {
			for _, role := range dynamoRoles(rs, j.EvalPool) {
				used[role.Pool] = true
			}
		} else if sv.Managed {
			used[j.poolOf(rs.NodePool)] = true
		}
	}
	for _, name := range sortedKeys(r.Sandboxes) {
		if sb := r.Sandboxes[name]; sb.NodePool != "" {
			used[sb.NodePool] = true
		}
	}
	var pools []string
	for _, name := range order {
		if used[name] {
			pools = append(pools, name)
		}
	}
	j.Het = len(pools) > 1
	j.Array = !j.Het && p.Shards > 1
	j.EvalGroup = slices.Index(pools, j.EvalPool)
	j.EvalNodes = cl.NodePools[j.EvalPool].Nodes
	return pools
}

// poolOf is the pool a service runs on: its node_pool, else the shards'.
func (j *job) poolOf(nodePool string) string {
	if nodePool == "" {
		return j.EvalPool
	}
	return nodePool
}

// sbatchLines returns the #SBATCH lines of pool name, component gi of the
// job; the first component also carries the job's own options.
func (j *job) sbatchLines(s *Source, p *plan.Plan, gi int, name, jobName string) (sbatchGroup, error) {
	r := s.Recipe
	cl := r.Cluster
	np := cl.NodePools[name]
	b := &sbatchBuilder{file: s.Path}
	nodes := np.Nodes
	for _, sv := range p.Services {
		if sv.Managed && j.poolOf(r.Services[sv.Name].NodePool) == name {
			nodes = max(nodes, r.Services[sv.Name].NumNodes*r.Services[sv.Name].instanceCount())
		}
	}
	if gi == 0 {
		b.add("job-name", jobName)
		out := "%x-%j.out"
		if j.Array {
			out = "%x-%A_%a.out"
		}
		b.add("output", out)
		b.add("time", cl.Walltime)
		b.add("no-requeue", true)
		if cl.Account != "" {
			b.add("account", cl.Account)
		}
		if cl.SbatchComment != "" {
			b.add("comment", cl.SbatchComment)
		}
		if j.Array {
			b.add("array", fmt.Sprintf("0-%d", p.Shards-1))
		}
	}
	part := np.Partition
	if part == "" {
		part = cl.Partition
	}
	if part != "" {
		b.add("partition", part)
	}
	if j.Het && gi > 0 {
		b.add("time", cl.Walltime)
	}
	b.add("nodes", nodes)
	b.add("ntasks-per-node", np.NtasksPerNode)
	if np.Gres != "" {
		b.add("gres", np.Gres)
	}
	if np.GpusPerNode != nil {
		b.add("gpus-per-node", *np.GpusPerNode)
	}
	for _, k := range sortedKeys(np.SbatchExtraFlags) {
		b.add(k, np.SbatchExtraFlags[k])
	}
	if gi == 0 {
		for _, k := range sortedKeys(cl.SbatchExtraFlags) {
			b.add(k, cl.SbatchExtraFlags[k])
		}
	}
	return sbatchGroup{Pool: name, Lines: b.lines}, b.err
}

// sbatchBuilder collects #SBATCH options, keeping the first error: a
// value an #SBATCH line cannot hold.
type sbatchBuilder struct {
	file  string
	lines []string
	err   error
}

// add writes --flag=v: a bool as a bare --flag when true, a string
// encoded for sbatch's tokenizer, nil not at all.
func (b *sbatchBuilder) add(flag string, v any) {
	switch v := v.(type) {
	case nil:
	case bool:
		if v {
			b.lines = append(b.lines, "--"+flag)
		}
	case string:
		q, err := templates.SbatchValue(v)
		if err != nil {
			if b.err == nil {
				b.err = Errors{{File: b.file, Path: "cluster", Msg: fmt.Sprintf("--%s: %v", flag, err)}}
			}
			return
		}
		b.lines = append(b.lines, "--"+flag+"="+q)
	default:
		b.lines = append(b.lines, fmt.Sprintf("--%s=%v", flag, v))
	}
}

// servers lays out the managed services' servers, level by level so that
// a service starts after those it depends on are ready.
func (j *job) servers(s *Source, p *plan.Plan, pools []string) {
	r := s.Recipe
	level := map[string]int{}
	var depth func(name string) int
	depth = func(name string) int {
		if d, ok := level[name]; ok {
			return d
		}
		d := 0
		for _, dep := range r.Services[name].DependsOn {
			if r.Services[dep].Managed() {
				d = max(d, depth(dep)+1)
			}
		}
		level[name] = d
		return d
	}
	for _, sv := range p.Services {
		if !sv.Managed {
			continue
		}
		d := depth(sv.Name)
		for len(j.Levels) <= d {
			j.Levels = append(j.Levels, nil)
		}
		j.Levels[d] = append(j.Levels[d], j.server(s, p, sv, pools))
	}
}

// server is how the job starts managed service sv: on its pool's
// component, with its environment and, in an image, under Pyxis.
func (j *job) server(s *Source, p *plan.Plan, sv plan.Service, pools []string) server {
	cl := s.Recipe.Cluster
	rs := s.Recipe.Services[sv.Name]
	gi := slices.Index(pools, j.poolOf(rs.NodePool))
	srv := server{
		Name: sv.Name, Type: sv.Type, Image: rs.Image,
		Var:        templates.EnvName(sv.Name),
		Log:        j.Run.ServerLog(safeDir(sv.Name)),
		URLEnv:     sv.URLEnv,
		BasePath:   serve.BasePath(sv.Type),
		HealthPath: sv.HealthPath,
		Port:       sv.Port,
		Timeout:    int(sv.StartupTimeout),
		NumNodes:   rs.NumNodes,
		Cmd:        serverCmd(sv),
		Het:        j.Het,
	}
	srv.access(sv, rs)
	srv.NodeListVar = "SLURM_JOB_NODELIST"
	flags := []string{"--overlap", "--mem=0", "--nodes=1", "--ntasks=1"}
	if (rs.Type == "process" || rs.Type == "gym") && rs.Image == "" && p.RecipeDir != "." && sv.Serves == nil {
		// (nel-run serve, which serves a gym service's benchmark, resolves
		// the plan's paths against recipe_dir itself, as a shard does.)
		// A process service runs in the recipe's directory, as under nel
		// run (paths.go); in an image, Pyxis starts it in the image's.
		flags = append(flags, "--chdir="+shellquote.Quote(p.RecipeDir))
	}
	if j.Het {
		srv.NodeListVar = "SLURM_JOB_NODELIST_HET_GROUP_" + strconv.Itoa(gi)
		flags = append(flags, "--het-group="+strconv.Itoa(gi))
	}
	if rs.onEveryNode() {
		srv.EveryNode = true
		flags = everyNodeFlags(flags, rs.NumNodes)
	}
	srv.SrunFlags = strings.Join(flags, " ")
	var names []string
	srv.Env, names = serverEnv(cl, sv)
	if sv.Serves != nil {
		// Its command runs "$NEL_RUN" serve (gymCommand) in a step's
		// shell, which sees only what the job exports, and writes its
		// endpoint under $NEL_OUT.
		srv.Env = append(srv.Env, "export NEL_RUN NEL_OUT")
	}
	if srv.EveryNode {
		names = append(names, everyNodeEnv...)
	}
	if rs.Type == "dynamo" {
		srv.Dynamo = j.dynamoLayout(s, sv, pools, names)
		srv.WaitFlags = fmt.Sprintf(`"${nel_dyn_pids_%s[@]}" --dynamo-workers %d,%d`, srv.Var, srv.Dynamo.Prefill, srv.Dynamo.Decode)
	}
	if sv.Type == "gym" {
		// NeMo's managed Gym server is up at /health or /openapi.json.
		srv.WaitFlags = `--or-url "http://$` + srv.HostEnv + ":" + strconv.Itoa(sv.Port) + `"/openapi.json`
	}
	if a := access(sv.Type); a.keyEnv != "" {
		names = append(names, a.keyEnv)
	}
	if rs.Image != "" {
		srv.Pyxis = pyxisFlags(cl, rs, names, p.OutputDir)
	}
	if rs.instanced() {
		j.instanceLayout(&srv, rs)
	}
	return srv
}

// access sets how the job gives server srv its address and key
// (serverkey.go): guardServers made sv's api_key the job's key by name.
func (srv *server) access(sv plan.Service, rs *Service) {
	a := access(sv.Type)
	srv.Note = a.note
	if sv.Type == "dynamo" {
		return
	}
	srv.HostEnv = serverHostEnv(sv.Name)
	srv.Bound = a.binds(rs)
	srv.Setup = rs.PreCmd != "" || len(rs.SetupCommands) > 0 || rs.ServerCmd != "" || sv.Serves != nil
	srv.Serves = sv.Serves != nil
	if srv.Serves {
		// nel-run serve listens on $HostEnv (gymCommand).
		srv.Bound, srv.Note = true, "nel-run serve serves its benchmark; a Gym server takes no API key: any user who can reach this node's address can use it."
	}
	if sv.APIKey != nil && a.keyed {
		srv.KeyEnv = sv.APIKey.Name
		if a.keyEnv != "" {
			srv.ServerKeyAssign = a.keyEnv + `="$` + srv.KeyEnv + `" `
		}
		if a.keyFlag != "" && rs.PreCmd == "" {
			srv.ServerKeyFlag = " " + a.keyFlag + ` "$` + srv.KeyEnv + `"`
		}
	}
	if rs.PreCmd != "" {
		srv.Note = "Its pre_cmd starts it: listening on $" + srv.HostEnv + " only is up to that script"
		if srv.KeyEnv != "" {
			srv.Note += ", and so is checking the key in $" + srv.KeyEnv
		}
		srv.Note += "."
	}
}

// serverEnv returns the shell statements that export sv's environment,
// and the names they export. The cluster's container_env applies to every
// server; a server's own extra_env wins.
func serverEnv(cl Cluster, sv plan.Service) (exports, names []string) {
	for _, e := range serverEnvVars(cl, sv) {
		names = append(names, e.Name)
		exports = append(exports, exportEnv(e))
	}
	return exports, names
}

// serverEnvVars is sv's environment: its extra_env, then the cluster's
// container_env for the names extra_env does not set.
func serverEnvVars(cl Cluster, sv plan.Service) []plan.EnvVar {
	env := slices.Clone(sv.Env)
	for _, k := range sortedKeys(cl.ContainerEnv) {
		if slices.ContainsFunc(env, func(e plan.EnvVar) bool { return e.Name == k }) {
			continue
		}
		e := plan.EnvVar{Name: k, Value: cl.ContainerEnv[k]}
		if ref, ok := parseWholeEnvRef(e.Value); ok {
			e = plan.EnvVar{Name: k, From: &plan.EnvRef{Name: ref.Name, Default: ref.Default}}
		}
		env = append(env, e)
	}
	return env
}

// sandboxPools lays out the slurm sandboxes: one sandbox server per node of
// the sandbox's node pool (its own het-job component; rules.go makes sure
// it is not the shards' pool), in the sandbox's image when it has one,
// running the very nel-run the job checked, mounted read-only.
func (j *job) sandboxPools(s *Source, p *plan.Plan, pools []string) error {
	r := s.Recipe
	cl := r.Cluster
	usedPorts := map[int]bool{}
	for _, sv := range p.Services {
		if sv.Managed {
			usedPorts[sv.Port] = true
		}
	}
	port := sandboxBasePort
	for _, name := range sortedKeys(r.Sandboxes) {
		sb := r.Sandboxes[name]
		if !isSandboxPool(sb) {
			continue
		}
		if strings.ContainsAny(j.NelRun, ",:") {
			return Errors{{File: s.Path, Path: "sandboxes." + name, Msg: fmt.Sprintf("the nel-run path %q contains ',' or ':', which Pyxis --container-mounts cannot carry; install nel-run elsewhere (nel compile --nel-run)", j.NelRun)}}
		}
		for usedPorts[port] {
			port++
		}
		usedPorts[port] = true
		gi := slices.Index(pools, sb.NodePool)
		nodes := max(cl.NodePools[sb.NodePool].Nodes, 1)
		sp := sandboxPool{
			Name: name, Var: templates.EnvName(name), Log: j.Run.SandboxLog(safeDir(name)), Image: sb.Image, Pool: sb.NodePool,
			EndpointsEnv: sandboxEndpointsEnv(name), TokenEnv: sandboxTokenEnv(name), NodeListVar: "SLURM_JOB_NODELIST",
			Port: port, Nodes: nodes, Slots: sb.SlotsPerNode, Timeout: sandboxReadyTimeout,
		}
		flags := []string{"--overlap", "--mem=0"}
		if j.Het {
			sp.NodeListVar = "SLURM_JOB_NODELIST_HET_GROUP_" + strconv.Itoa(gi)
			flags = append(flags, "--het-group="+strconv.Itoa(gi))
		}
		flags = append(flags, "--nodes="+strconv.Itoa(nodes), "--ntasks-per-node=1")
		sp.SrunFlags = strings.Join(flags, " ")
		seconds := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "s" }
		sp.Argv = []string{"sandbox-serve", "--name", name, "--listen", ":" + strconv.Itoa(port),
			"--slots", strconv.Itoa(sb.SlotsPerNode), "--memory", sb.Memory,
			"--cpus", strconv.FormatFloat(sb.Cpus, 'f', -1, 64), "--timeout", seconds(sb.Timeout),
			"--token-env", sp.TokenEnv}
		switch {
		case sb.Type == "apptainer":
			// The server runs on the node itself and starts an apptainer
			// container per job or session (a task's own image, else the
			// sandbox's), its images cached where every node sees them.
			sp.Engine = "apptainer"
			sp.Env = "APPTAINER_CACHEDIR=" + shellquote.Quote(sb.SifCacheDir) + " "
			sp.Argv = append(sp.Argv, "--engine", "apptainer")
			if sb.Image != "" {
				sp.Argv = append(sp.Argv, "--image", sb.Image)
			}
		case sb.Image != "":
			// Only nel-run goes into the container: the cluster's mounts
			// (data, models, home) stay out of reach of untrusted code.
			sp.Pyxis = "--container-image=" + shellquote.Quote(sb.Image) +
				` --container-mounts="$NEL_RUN:$NEL_RUN:ro" --no-container-mount-home `
		}
		j.Sandboxes = append(j.Sandboxes, sp)
	}
	return nil
}

// pyxisFlags are the srun flags that run a server in its container image.
func pyxisFlags(cl Cluster, s *Service, envNames []string, out string) string {
	mounts := slices.Clone(cl.ContainerMounts)
	mounts = append(mounts, s.ContainerMounts...)
	var f []string
	image := shellquote.Quote(s.Image)
	if refsInWords(s) {
		image = shellWord(s.Image)
	}
	f = append(f, "--container-image="+image)
	if len(mounts) > 0 {
		f = append(f, "--container-mounts="+shellquote.Quote(strings.Join(mounts, ",")))
	}
	if cl.MountHome {
		f = append(f, "--container-mount-home")
	} else {
		f = append(f, "--no-container-mount-home")
	}
	if len(envNames) > 0 {
		f = append(f, "--container-env="+strings.Join(envNames, ","))
	}
	return strings.Join(f, " ") + " "
}

var makeSafeRE = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)

// checkMakeSafe refuses values make cannot carry in target names.
func checkMakeSafe(s *Source, j *job) error {
	if !makeSafeRE.MatchString(j.OutputDir) {
		return Errors{{File: s.Path, Path: "output.dir", Msg: fmt.Sprintf("-t make needs an output directory of letters, digits and ._/+- (make cannot quote target names), found %q", j.OutputDir)}}
	}
	for _, name := range sortedKeys(s.Recipe.Services) {
		if t := s.Recipe.Services[name].Type; t == "dynamo" || t == "nim" {
			return Errors{{File: s.Path, Path: "services." + name + ".type", Msg: "a " + t + " service runs in containers on SLURM nodes: compile with -t slurm"}}
		}
	}
	for _, name := range sortedKeys(s.Recipe.Sandboxes) {
		if sb := s.Recipe.Sandboxes[name]; isSandboxPool(sb) {
			return Errors{{File: s.Path, Path: "sandboxes." + name + ".type", Msg: article(sb.Type) + " sandbox on a node pool is a pool of servers in a SLURM job: compile with -t slurm"}}
		}
	}
	return nil
}

func shallowCopy(r *Recipe) *Recipe {
	c := *r
	return &c
}
