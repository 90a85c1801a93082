package compiler

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// A service with instances: N starts N copies of its server, each on
// num_nodes nodes of its own (the job's nodes in order: copy g on nodes
// g×num_nodes to (g+1)×num_nodes−1), and an HAProxy load balancer on the
// first copy's first node, as NeMo Evaluator's launcher does for
// execution.num_instances. The service's address is the balancer's (its
// node, the balancer's port), so everything that calls the service
// (benchmarks, judges, harnesses) is unchanged. The balancer sends a
// request to the copy with the fewest open ones among those whose
// health_path answers 200 (the launcher's HAProxy config: leastconn,
// option httpchk).
//
// The job writes the balancer's config on the node: the copies'
// addresses are known only there. Everything else in it comes from the
// recipe, checked here (ports are ints, health_path a plain path): the
// addresses come from getent ahostsv4, and the config is written with
// printf, never by the shell expanding recipe text.
//
// Instances are deployment: the hashes of the recipe and its benchmarks
// (methodology) do not change with them; the plan hash does.

// Balancer is the load balancer in front of a service's instances.
type Balancer struct {
	Image string `json:"image"`
	Port  int    `json:"port"`
}

// The launcher's defaults (execution.proxy in its slurm/default config).
const (
	defaultBalancerImage = "haproxy:latest"
	defaultBalancerPort  = 5009
)

// balancerConfigPath is where the balancer's image reads its config.
const balancerConfigPath = "/usr/local/etc/haproxy/haproxy.cfg"

// instanced reports whether s runs several instances behind a balancer.
func (s *Service) instanced() bool { return s.Instances > 1 }

// instanceCount is how many copies of s's server run (1 without instances).
func (s *Service) instanceCount() int { return max(s.Instances, 1) }

// totalNodes is how many nodes s's servers take, its instances'
// together (a process service, without num_nodes, takes one).
func (s *Service) totalNodes() int { return max(s.NumNodes, 1) * s.instanceCount() }

// balancer is s's balancer, the launcher's defaults where unset.
func (s *Service) balancer() Balancer {
	b := Balancer{Image: defaultBalancerImage, Port: defaultBalancerPort}
	if s.Balancer != nil {
		if s.Balancer.Image != "" {
			b.Image = s.Balancer.Image
		}
		if s.Balancer.Port != 0 {
			b.Port = s.Balancer.Port
		}
	}
	return b
}

// healthCheckRE is what a health_path may be to go into the balancer's
// config as it is: one word HAProxy reads without quoting.
var healthCheckRE = regexp.MustCompile(`^/[A-Za-z0-9._~/-]*$`)

// instances checks the services' instances and balancer.
func (c *ruleChecker) instances() {
	for _, name := range sortedKeys(c.r.Services) {
		s := c.r.Services[name]
		switch {
		case s.Balancer != nil && !s.instanced():
			c.at("balancer is the load balancer in front of several instances: set instances > 1, or drop balancer", "services", name, "balancer")
		case !s.instanced():
		case s.balancer().Port == s.Port:
			c.at(fmt.Sprintf("the balancer listens on port %d on the first instance's node, where the server listens on it too: give balancer.port another port", s.Port), "services", name, "balancer", "port")
		case !healthCheckRE.MatchString(s.HealthPath):
			c.at(fmt.Sprintf("the load balancer checks health_path in its config, which takes letters, digits and ._~/- only, found %q", s.HealthPath), "services", name, "health_path")
		}
	}
}

// instancesUnsupported names what nel cannot do of service name's
// instances, on cluster type cluster and compile target target.
func instancesUnsupported(no func(string, ...any), name string, sv *Service, cluster, target string) {
	if !sv.instanced() {
		return
	}
	switch {
	case target == "k8s":
		no("instances on Kubernetes (a Deployment's replicas behind a Service do this there)", "services", name, "instances")
	case target == "make":
		no("instances in a Makefile (it runs on one machine: compile with -t slurm)", "services", name, "instances")
	case cluster != "slurm":
		no("instances on a "+cluster+" cluster (they run on SLURM nodes, behind a load balancer in a container)", "services", name, "instances")
	case sv.Type == "dynamo" || sv.Type == "process":
		no("instances of a "+sv.Type+" service (vllm, sglang, trt_llm and nim servers run as instances)", "services", name, "instances")
	case sv.onEveryNode():
		no("instances with every_node (each instance's pre_cmd would need its own MASTER_IP and ALL_NODE_IPS)", "services", name, "instances")
	}
}

// instanceLayout fills in how the job starts srv's instances (the
// "instances" template): srv.Port becomes the balancer's, which the job
// waits on and gives to clients, besides each instance's.
func (j *job) instanceLayout(srv *server, rs *Service) {
	b := rs.balancer()
	srv.Instances, srv.InstancePort, srv.Port = rs.Instances, srv.Port, b.Port
	srv.TotalNodes = rs.totalNodes()
	srv.NumNodes = max(rs.NumNodes, 1)
	cfg := j.Run.Balancer(safeDir(srv.Name))
	srv.BalancerConfig = balancerConfigScript(cfg, srv.Var, srv.HostEnv, b.Port, srv.InstancePort, srv.HealthPath)
	srv.BalancerSrun = "--container-image=" + shellquote.Quote(b.Image) + ` --container-mounts="` + cfg + ":" + balancerConfigPath + `:ro" --no-container-mount-home haproxy -f ` + balancerConfigPath
	// The job waits on every instance (and its process) besides the balancer.
	srv.WaitFlags = `"${nel_wait_` + srv.Var + `[@]}"`
}

// balancerConfigScript is the shell text that writes the HAProxy config
// for the instances whose addresses are in the array nel_ips_VAR, each
// serving on instancePort with health path health (healthCheckRE's), to
// path (text for double quotes, as scriptDir gives it): the balancer
// listens on $hostEnv (the first instance's node) at port. The fixed part
// is a quoted here-document; the addresses and ports go in by printf.
func balancerConfigScript(path, v, hostEnv string, port, instancePort int, health string) string {
	var b strings.Builder
	b.WriteString("{\n  cat <<'NEL_HAPROXY_CFG'\n")
	for _, line := range []string{
		"global",
		"    log stdout format raw local0",
		"    maxconn 4096",
		"",
		"defaults",
		"    log global",
		"    mode http",
		"    option httplog",
		"    timeout connect 10s",
		"    timeout client 100000s",
		"    timeout server 100000s",
		"",
		"backend nel_instances",
		"    option httpchk GET " + health,
		"    http-check expect status 200",
		"    option http-server-close",
		"    balance leastconn",
	} {
		b.WriteString(line + "\n")
	}
	b.WriteString("NEL_HAPROXY_CFG\n")
	b.WriteString(`  for nel_i in "${!nel_ips_` + v + `[@]}"; do` + "\n")
	b.WriteString(`    printf '    server instance%d %s:%d check\n' "$nel_i" "${nel_ips_` + v + `[nel_i]}" ` + strconv.Itoa(instancePort) + "\n")
	b.WriteString("  done\n")
	b.WriteString(`  printf '\nfrontend nel_balancer\n    bind %s:%d\n    default_backend nel_instances\n' "$` + hostEnv + `" ` + strconv.Itoa(port) + "\n")
	b.WriteString(`} > "` + path + `" || nel_fail "cannot write ` + path + `"`)
	return b.String()
}

// balancerImageFields are the images of the balancers in front of
// services' instances, the default one included, for a lock to pin as
// "services.NAME.balancer.image" (an error about a default one points at
// instances, which asks for it).
func balancerImageFields(r *Recipe) []ImageField {
	var out []ImageField
	for _, name := range sortedKeys(r.Services) {
		s := r.Services[name]
		if !s.instanced() {
			continue
		}
		path := []any{"services", name, "instances"}
		if s.Balancer != nil && s.Balancer.Image != "" {
			path = []any{"services", name, "balancer", "image"}
		}
		out = append(out, ImageField{Field: "services." + name + ".balancer.image", Ref: s.balancer().Image, path: path,
			set: func(v string) {
				if s.Balancer == nil {
					s.Balancer = &Balancer{}
				}
				s.Balancer.Image = v
			}})
	}
	return out
}
