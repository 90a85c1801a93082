package compiler

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/judge"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/templates"
)

// checkRules applies the cross-field rules that CUE cannot say well:
// references between sections, GPU fit, dependency cycles, formats with
// messages people can act on. Each rule has its own test in rules_test.go.
func checkRules(s *Source) Errors {
	c := &ruleChecker{s: s, r: s.Recipe}
	c.serviceNames()
	c.dependsOn()
	c.benchmarks()
	c.benchmarkNames()
	c.localData()
	c.harborData()
	c.instructionTemplates()
	c.byobRules()
	c.cluster()
	c.dynamoAndNim()
	c.dynamoPorts()
	c.everyNode()
	c.instances()
	c.slurmSandboxes()
	c.outputExport()
	s.Warnings = append(s.Warnings, c.warns...).sorted()
	return c.errs
}

type ruleChecker struct {
	s     *Source
	r     *Recipe
	errs  Errors
	warns Errors // what the commands print as warnings, positioned too
}

// selectors turns a path given as field names and list indices into CUE
// selectors.
func selectors(path []any) []cue.Selector {
	sels := make([]cue.Selector, len(path))
	for i, p := range path {
		switch p := p.(type) {
		case int:
			sels[i] = cue.Index(p)
		case string:
			sels[i] = cue.Str(p)
		}
	}
	return sels
}

// at records an error at a path given as field names and list indices.
func (c *ruleChecker) at(msg string, path ...any) {
	c.errs = append(c.errs, c.positioned(msg, path))
}

// warnAt records a warning at a path, as at does an error.
func (c *ruleChecker) warnAt(msg string, path ...any) {
	c.warns = append(c.warns, c.positioned(msg, path))
}

func (c *ruleChecker) positioned(msg string, path []any) Error {
	sels := selectors(path)
	// A value an -O override wrote is named by the override, not by the
	// nearest position in the file (which would be its parent's).
	if o, ok := overrideFor(c.s.Overrides, sels); ok {
		return Error{File: "-O " + o.Text, Path: displayPath(sels), Msg: msg}
	}
	files := c.s.fileSet()
	pos := posOf(files, c.s.Value, sels)
	return Error{File: files.of(pos), Line: pos.Line(), Column: pos.Column(), Path: displayPath(sels), Msg: msg}
}

var reservedServiceNames = []string{"default", "none"}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (c *ruleChecker) serviceNames() {
	seen := map[string]string{}
	for _, name := range sortedKeys(c.r.Services) {
		switch {
		case slices.Contains(reservedServiceNames, name):
			c.at(fmt.Sprintf("service name %q is reserved; choose another name", name), "services", name)
		case !nameRE.MatchString(name):
			c.at("expected a service name of letters, digits, '_', '.' and '-' (starting with a letter or digit), found "+strconv.Quote(name), "services", name)
		default:
			// Names become shell variables and file names; two that map to
			// the same one would silently share them.
			key := templates.EnvName(name)
			if other, ok := seen[key]; ok {
				c.at(fmt.Sprintf("service names %q and %q differ only in punctuation; they would share variables in the job script", other, name), "services", name)
			}
			seen[key] = name
		}
	}
	for _, name := range sortedKeys(c.r.Sandboxes) {
		if !nameRE.MatchString(name) {
			c.at("expected a sandbox name of letters, digits, '_', '.' and '-', found "+strconv.Quote(name), "sandboxes", name)
		}
	}
}

// modelServiceTypes can answer a solver's prompts.
var modelServiceTypes = []string{"api", "vllm", "sglang", "trt_llm", "process", "nim", "docker_model", "dynamo"}

func (c *ruleChecker) dependsOn() {
	// Existence and self-reference first, then a DFS for cycles.
	for _, name := range sortedKeys(c.r.Services) {
		for i, d := range c.r.Services[name].DependsOn {
			switch {
			case d == name:
				c.at("a service cannot depend on itself", "services", name, "depends_on", i)
			case c.r.Services[d] == nil:
				c.at(fmt.Sprintf("expected the name of a service, found %q%s", d, knownList(sortedKeys(c.r.Services))), "services", name, "depends_on", i)
			}
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(n string) bool
	visit = func(n string) bool {
		state[n] = visiting
		stack = append(stack, n)
		for _, d := range c.r.Services[n].DependsOn {
			if c.r.Services[d] == nil || d == n {
				continue
			}
			switch state[d] {
			case visiting:
				i := slices.Index(stack, d)
				cycle := append(slices.Clone(stack[i:]), d)
				c.at("depends_on forms a cycle: "+strings.Join(cycle, " → "), "services", n, "depends_on")
				return false
			case unvisited:
				if !visit(d) {
					return false
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return true
	}
	for _, name := range sortedKeys(c.r.Services) {
		if state[name] == unvisited {
			stack = stack[:0]
			if !visit(name) {
				return // one cycle report is enough
			}
		}
	}
}

func (c *ruleChecker) serviceRef(name string, kinds []string, what string, path ...any) {
	svc := c.r.Services[name]
	if svc == nil {
		c.at(fmt.Sprintf("expected the name of a service, found %q%s", name, knownList(sortedKeys(c.r.Services))), path...)
		return
	}
	if kinds != nil && !slices.Contains(kinds, svc.Type) {
		c.at(fmt.Sprintf("service %q is of type %s, but %s needs %s", name, svc.Type, what, strings.Join(kinds, " or ")), path...)
	}
}

func (c *ruleChecker) benchmarks() {
	for i, b := range c.r.Benchmarks {
		sv := b.Solver
		if sv.Type != "oracle" && sv.Type != "custom" || sv.Service != "" {
			c.serviceRef(sv.Service, modelServiceTypes, article(sv.Type)+" solver", "benchmarks", i, "solver", "service")
		}
		if sv.ResourceService != "" {
			c.serviceRef(sv.ResourceService, []string{"gym"}, "resource_service", "benchmarks", i, "solver", "resource_service")
		}
		if sv.GymService != "" {
			c.serviceRef(sv.GymService, []string{"gym"}, "gym_service", "benchmarks", i, "solver", "gym_service")
		}
		if sv.Type == "tool_calling" && sv.ResourceService == "" && !sv.SandboxTools {
			c.at("a tool_calling solver needs resource_service or sandbox_tools: true", "benchmarks", i, "solver")
		}
		if b.Verifier != "" {
			c.serviceRef(b.Verifier, nil, "verifier", "benchmarks", i, "verifier")
		}
		if b.SystemPrompt != nil && sv.SystemPrompt != nil {
			c.at("system_prompt is set both on the benchmark and on its solver; set it in one place", "benchmarks", i, "solver", "system_prompt")
		}
		if b.Generation != nil && sv.Generation != nil {
			c.at("generation is set both on the benchmark and on its solver; set it in one place", "benchmarks", i, "solver", "generation")
		}
		c.sandboxRef(i, b, sv)
		c.toolCallingAnswers(i, b)
		c.scoring(i, b)
		c.failurePolicy(i, b)
		if c.r.Cluster.Shards != nil && b.MaxProblems != nil && *c.r.Cluster.Shards > *b.MaxProblems {
			c.at(fmt.Sprintf("cluster.shards is %d but this benchmark has at most %d problems: some shards would have nothing to do", *c.r.Cluster.Shards, *b.MaxProblems), "benchmarks", i, "max_problems")
		}
	}
}

// failurePolicy: skip_failed means every infrastructure failure is
// skipped (max_error_rate 1), so a lower max_error_rate beside it says two
// things; a request may not outlast its sample.
func (c *ruleChecker) failurePolicy(i int, b *Benchmark) {
	if b.SkipFailed && b.MaxErrorRate != nil && *b.MaxErrorRate < 1 {
		c.at(fmt.Sprintf("max_error_rate %g contradicts skip_failed: true, which skips every infrastructure failure (max_error_rate 1); keep one of them", *b.MaxErrorRate), "benchmarks", i, "max_error_rate")
	}
	if b.RequestTimeout != nil && *b.RequestTimeout > b.Timeout {
		c.at(fmt.Sprintf("request_timeout %gs is longer than the sample's timeout %gs, which bounds every request of the sample", *b.RequestTimeout, b.Timeout), "benchmarks", i, "request_timeout")
	}
}

func (c *ruleChecker) sandboxRef(i int, b *Benchmark, sv Solver) {
	hasSandbox, dangling := false, false
	switch sb := b.Sandbox.(type) {
	case string:
		if c.r.Sandboxes[sb] == nil {
			dangling = true
			c.at(fmt.Sprintf("expected the name of a sandbox, found %q%s", sb, knownList(sortedKeys(c.r.Sandboxes))), "benchmarks", i, "sandbox")
		} else {
			hasSandbox = c.r.Sandboxes[sb].Type != "none"
		}
	case map[string]any:
		hasSandbox = sb["type"] != "none"
	}
	needs := sv.Type == "harbor" || sv.Type == "agent" || sv.Type == "openclaw" || sv.Type == "tool_calling" && sv.SandboxTools
	if needs && !hasSandbox {
		c.at(article(sv.Type)+" solver needs a sandbox", "benchmarks", i, "sandbox")
	}
	// A benchmark scored by running the model's code (humaneval) cannot
	// be scored without one; nel-run would refuse it at shard start.
	if def, ok := bench.Lookup(b.Name); ok && def.NeedsSandbox && !hasSandbox && !dangling {
		c.at(fmt.Sprintf("%s runs the model's code and needs a sandbox, e.g. sandbox: {type: \"local\"}", b.Name), "benchmarks", i, "sandbox")
	}
}

func (c *ruleChecker) scoring(i int, b *Benchmark) {
	names := map[string]int{}
	for j, m := range b.Scoring.Metrics {
		if k, dup := names[m.Name]; dup {
			c.at(fmt.Sprintf("metric name %q is already used by metrics[%d]", m.Name, k), "benchmarks", i, "scoring", "metrics", j, "name")
		}
		names[m.Name] = j
		mpath := []any{"benchmarks", i, "scoring", "metrics", j}
		switch m.Type {
		case "judge":
			c.serviceRef(m.Service, modelServiceTypes, "a judge", append(mpath, "service")...)
			if m.Service == b.Solver.Service && !m.AllowSelfJudge {
				c.at(fmt.Sprintf("judge service %q is the solver's own service; use a separate service, or set allow_self_judge: true", m.Service), append(mpath, "service")...)
			}
			if m.Rubric != nil && m.RubricFile != nil {
				c.at("set rubric or rubric_file, not both", append(mpath, "rubric_file")...)
			}
			c.rubric(i, m, mpath)
		case "reward_model":
			c.serviceRef(m.Service, nil, "a reward model", append(mpath, "service")...)
		case "pairwise_judge":
			c.serviceRef(m.JudgeService, nil, "a pairwise judge", append(mpath, "judge_service")...)
			c.serviceRef(m.BaselineService, nil, "a pairwise judge", append(mpath, "baseline_service")...)
		case "ensemble_judge":
			for k, s := range m.Services {
				c.serviceRef(s, nil, "an ensemble judge", append(mpath, "services", k)...)
			}
		}
	}
	p := b.Scoring.Primary
	switch {
	case p != nil && names[*p] == 0 && (len(b.Scoring.Metrics) == 0 || b.Scoring.Metrics[0].Name != *p):
		var metrics []string
		for _, m := range b.Scoring.Metrics {
			metrics = append(metrics, m.Name)
		}
		msg := fmt.Sprintf("primary must name one of the metrics, found %q", *p)
		if best := closest(*p, metrics); best != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", best)
		}
		c.at(msg, "benchmarks", i, "scoring", "primary")
	case p == nil && len(b.Scoring.Metrics) > 1:
		c.at("with more than one metric, set primary to the one the headline reports", "benchmarks", i, "scoring", "metrics")
	}
}

// walltimeRE accepts the forms sbatch --time takes that we can add up:
// MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
var walltimeRE = regexp.MustCompile(`^(\d+)$|^(\d+):(\d{1,2})$|^(\d+):(\d{1,2}):(\d{1,2})$|^(\d+)-(\d{1,2})(:(\d{1,2})(:(\d{1,2}))?)?$`)

// MaxWalltimeDays bounds a walltime. SLURM itself takes more, but a job
// of over a year is a slip, and the bound keeps the sum below from
// overflowing.
const MaxWalltimeDays = 365

// ParseWalltime returns a SLURM time limit in seconds.
func ParseWalltime(s string) (int, error) {
	m := walltimeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("expected a SLURM time such as HH:MM:SS or D-HH:MM:SS, found %q", s)
	}
	// Each part is at most the bound in its own unit (seconds, the
	// smallest), so the sum cannot overflow.
	tooLong := false
	n := func(x string) int {
		v, err := strconv.Atoi(x)
		if err != nil || v > MaxWalltimeDays*86400 {
			tooLong = x != ""
			return 0
		}
		return v
	}
	var secs int
	switch {
	case m[1] != "":
		secs = n(m[1]) * 60
	case m[2] != "":
		secs = n(m[2])*60 + n(m[3])
	case m[4] != "":
		secs = n(m[4])*3600 + n(m[5])*60 + n(m[6])
	default:
		secs = n(m[7])*86400 + n(m[8])*3600 + n(m[10])*60 + n(m[12])
	}
	if tooLong || secs > MaxWalltimeDays*86400 {
		return 0, fmt.Errorf("expected a time limit of at most %d days (%d-00:00:00), found %q", MaxWalltimeDays, MaxWalltimeDays, s)
	}
	if secs == 0 {
		return 0, fmt.Errorf("expected a time limit above zero, found %q", s)
	}
	return secs, nil
}

// maxGPUsPerNode is the schema's bound on gpus_per_node (#Count), for a
// count written inside gres.
const maxGPUsPerNode = 100000

var gresGPURE = regexp.MustCompile(`(?:^|,)gpu(?::[^:,]+)?:(\d+)(?:,|$)`)

// gpusPerNode says how many GPUs a pool's nodes have, from gres (gpu:N or
// gpu:type:N) or gpus_per_node; ok is false when the pool says nothing.
func gpusPerNode(p *NodePool) (int, bool) {
	if m := gresGPURE.FindStringSubmatch(p.Gres); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			n = math.MaxInt // refused by cluster(), which checks maxGPUsPerNode
		}
		return n, true
	}
	if p.GpusPerNode != nil {
		return *p.GpusPerNode, true
	}
	return 0, false
}

func (c *ruleChecker) cluster() {
	cl := c.r.Cluster
	if cl.Type != "slurm" {
		return
	}
	if _, err := ParseWalltime(cl.Walltime); err != nil {
		c.at(err.Error(), "cluster", "walltime")
	}
	if cl.MaxWalltime != "" {
		if _, err := ParseWalltime(cl.MaxWalltime); err != nil {
			c.at(err.Error(), "cluster", "max_walltime")
		}
	}
	if len(cl.NodePools) == 0 {
		c.at("expected at least one node pool", "cluster", "node_pools")
		return
	}
	for _, name := range sortedKeys(cl.NodePools) {
		p := cl.NodePools[name]
		if n, ok := gpusPerNode(p); ok && p.Gres != "" && n > maxGPUsPerNode {
			c.at(fmt.Sprintf("expected at most %d GPUs per node (as gpus_per_node), found %q", maxGPUsPerNode, p.Gres), "cluster", "node_pools", name, "gres")
		}
		if p.Partition == "" && cl.Partition == "" {
			continue // the site's default partition
		}
		if p.Gres != "" && strings.Contains(p.Gres, "gpu") && gresGPURE.FindStringSubmatch(p.Gres) == nil {
			c.at(fmt.Sprintf("expected gres as gpu:N or gpu:TYPE:N, found %q", p.Gres), "cluster", "node_pools", name, "gres")
		}
	}
	pool := func(ref string, path ...any) *NodePool {
		if ref == "" {
			return nil
		}
		p := cl.NodePools[ref]
		if p == nil {
			c.at(fmt.Sprintf("expected the name of a node pool, found %q%s", ref, knownList(sortedKeys(cl.NodePools))), path...)
		}
		return p
	}
	pool(cl.EvalPool, "cluster", "eval_pool")
	c.unusedPools()
	multiNode := map[string]string{}
	for _, name := range sortedKeys(c.r.Services) {
		s := c.r.Services[name]
		p := pool(s.NodePool, "services", name, "node_pool")
		if p == nil || !s.Managed() || s.Type == "dynamo" {
			continue // dynamo's workers: dynamoAndNim
		}
		// A process service has no num_nodes (or parallelism): one node.
		nodes, all := max(s.NumNodes, 1), s.totalNodes()
		if nodes > p.Nodes {
			c.at(fmt.Sprintf("num_nodes is %d but node pool %q has %d node(s)", s.NumNodes, s.NodePool, p.Nodes), "services", name, "num_nodes")
		} else if all > p.Nodes {
			c.at(fmt.Sprintf("%d instances of %d node(s) each need %d nodes but node pool %q has %d", s.Instances, nodes, all, s.NodePool, p.Nodes), "services", name, "instances")
		}
		if all > 1 {
			if other, ok := multiNode[s.NodePool]; ok {
				c.at(fmt.Sprintf("services %q and %q are both multi-node in node pool %q; use separate node pools", other, name, s.NodePool), "services", name, "node_pool")
			}
			multiNode[s.NodePool] = name
		}
		gpus, known := gpusPerNode(p)
		need := s.TensorParallelSize * s.PipelineParallelSize * s.DataParallelSize
		perNode := (need + nodes - 1) / nodes
		if known && s.Type != "process" && perNode > gpus {
			c.at(fmt.Sprintf("needs %d GPUs per node (tensor_parallel_size %d × pipeline_parallel_size %d × data_parallel_size %d over %d node(s)) but node pool %q has %d",
				perNode, s.TensorParallelSize, s.PipelineParallelSize, s.DataParallelSize, s.NumNodes, s.NodePool, gpus), "services", name, "tensor_parallel_size")
		}
	}
	for _, name := range sortedKeys(c.r.Sandboxes) {
		sb := c.r.Sandboxes[name]
		pool(sb.NodePool, "sandboxes", name, "node_pool")
		if sb.Type == "apptainer" && sb.NodePool != "" && sb.SifCacheDir == "" {
			c.at("an apptainer sandbox on a node pool needs sif_cache_dir (a directory every node sees)", "sandboxes", name, "sif_cache_dir")
		}
	}
}

// slurmSandboxes checks what a slurm sandbox needs: a SLURM cluster and a
// node pool of its own, where the job script starts its sandbox servers
// (the shards' pool would put untrusted code beside them, and a job array
// cannot share one pool between its tasks), and a name, through which the
// shards find the servers.
func (c *ruleChecker) slurmSandboxes() {
	cl := c.r.Cluster
	evalPool := EvalPool(c.s)
	seen := map[string]string{}
	for _, name := range sortedKeys(c.r.Sandboxes) {
		sb := c.r.Sandboxes[name]
		if !isSandboxPool(sb) {
			continue
		}
		switch {
		case sb.Type == "apptainer" && cl.Type != "slurm":
			c.at(fmt.Sprintf("an apptainer sandbox with node_pool runs its containers on a node pool of a SLURM job, but cluster.type is %s; drop node_pool (apptainer then runs beside the shards) or use cluster.type slurm", cl.Type), "sandboxes", name, "node_pool")
		case cl.Type != "slurm":
			c.at(fmt.Sprintf("a slurm sandbox runs on a node pool of a SLURM job, but cluster.type is %s; use a local, docker or apptainer sandbox, or cluster.type slurm", cl.Type), "sandboxes", name, "type")
		case sb.NodePool == "":
			c.at("a slurm sandbox needs node_pool, the node pool its sandbox servers run on"+knownList(sortedKeys(cl.NodePools)), "sandboxes", name, "node_pool")
		case sb.NodePool == evalPool && cl.NodePools[evalPool] != nil:
			c.at(fmt.Sprintf("node pool %q is where the shards run (cluster.eval_pool, or the first node pool when it is unset); %s sandbox needs a node pool of its own", sb.NodePool, map[bool]string{true: "an apptainer", false: "a slurm"}[sb.Type == "apptainer"]), "sandboxes", name, "node_pool")
		}
		// The name becomes shell variables and NEL_SANDBOX_<NAME>_ENDPOINTS.
		key := templates.EnvName(name)
		if other, ok := seen[key]; ok {
			c.at(fmt.Sprintf("sandbox pool names %q and %q differ only in punctuation; they would share variables in the job script", other, name), "sandboxes", name)
		}
		seen[key] = name
	}
	for i, b := range c.r.Benchmarks {
		if m, ok := b.Sandbox.(map[string]any); ok && m["type"] == "slurm" {
			c.at("a slurm sandbox is a pool of servers the benchmarks share: declare it under sandboxes and refer to it by name", "benchmarks", i, "sandbox", "type")
		}
	}
}

// namedPools are the node pools a service or a sandbox names.
func namedPools(r *Recipe) map[string]bool {
	named := map[string]bool{}
	for _, sv := range r.Services {
		if sv.NodePool != "" {
			named[sv.NodePool] = true
		}
		for _, p := range dynamoRolePools(sv) {
			named[p] = true
		}
	}
	for _, sb := range r.Sandboxes {
		if sb.NodePool != "" {
			named[sb.NodePool] = true
		}
	}
	return named
}

// EvalPool is the node pool the shards run on: cluster.eval_pool; else the
// first declared pool that no service or sandbox names (declared beside
// the servers' pools, it is meant for the shards); else the first declared
// pool. "" when the recipe declares none.
func EvalPool(s *Source) string {
	cl := s.Recipe.Cluster
	if cl.EvalPool != "" {
		return cl.EvalPool
	}
	order := poolOrder(s.Value)
	if len(order) == 0 {
		order = sortedKeys(cl.NodePools)
	}
	named := namedPools(s.Recipe)
	for _, name := range order {
		if !named[name] {
			return name
		}
	}
	if len(order) > 0 {
		return order[0]
	}
	return ""
}

// unusedPools refuses a node pool nothing runs on (not the shards' pool,
// named by no service or sandbox): the job would silently leave it out,
// and the recipe would not say what runs.
func (c *ruleChecker) unusedPools() {
	eval, named := EvalPool(c.s), namedPools(c.r)
	if c.r.Cluster.NodePools[eval] == nil {
		return // a dangling eval_pool, said on its own
	}
	for _, name := range sortedKeys(c.r.Cluster.NodePools) {
		switch {
		case name == eval || named[name]:
		case c.r.Cluster.EvalPool != "":
			c.at(fmt.Sprintf("node pool %q is declared but nothing runs on it: no service or sandbox names it, and the shards run on cluster.eval_pool %q; name it in a node_pool, or remove it", name, eval), "cluster", "node_pools", name)
		default:
			c.at(fmt.Sprintf("node pool %q is declared but nothing runs on it: no service or sandbox names it, and the shards run on %q, the first pool none names; set cluster.eval_pool, name it in a node_pool, or remove it", name, eval), "cluster", "node_pools", name)
		}
	}
}

func knownList(names []string) string {
	if len(names) == 0 {
		return " (none are declared)"
	}
	if len(names) > 12 {
		names = append(names[:12:12], "…")
	}
	return " (declared: " + strings.Join(names, ", ") + ")"
}

// envRefRE matches ${VAR} and ${VAR:-default}, as the schema's #EnvRef does.
var envRefRE = plan.EnvRefRE

// rubric checks a judge's rubric template (it must place {{response}}) and
// reads rubric_file, relative to the recipe, into m.RubricText: the file is
// read now, at compile time, so that the plan carries its content and the
// hashes cover it (a job never reads it from the cluster's filesystem).
func (c *ruleChecker) rubric(i int, m *Metric, mpath []any) {
	if m.Rubric != nil {
		if err := judge.CheckRubric(*m.Rubric); err != nil {
			c.at(err.Error(), append(mpath, "rubric")...)
		}
		return
	}
	if m.RubricFile == nil {
		return
	}
	p := *m.RubricFile
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.s.Dir, p)
	}
	b, err := os.ReadFile(p)
	switch {
	case err != nil:
		c.at(fmt.Sprintf("rubric_file %q cannot be read (%v); it is resolved relative to the recipe", *m.RubricFile, err), append(mpath, "rubric_file")...)
	case judge.CheckRubric(string(b)) != nil:
		c.at(fmt.Sprintf("rubric_file %q: %v", *m.RubricFile, judge.CheckRubric(string(b))), append(mpath, "rubric_file")...)
	default:
		m.RubricText = string(b)
		// Recorded for nel publish, which carries it with the recipe; the
		// hashes cover RubricText, not the path.
		c.localFile(i, "", *m.RubricFile, "rubric_file", append(mpath, "rubric_file")...)
	}
}
