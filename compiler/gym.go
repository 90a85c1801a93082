package compiler

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/gymenv"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shellquote"
)

// A gym service without url is NeMo's managed Gym resource server: nel
// starts its server_cmd as it starts a process service (under nel run a
// child of nel, in a SLURM job a background step on the job's node),
// waits until it answers, gives its clients its address in the service's
// URL variable, and stops it when the run ends. NeMo runs server_cmd with
// a shell (bash -c) and tells it its port in $PORT; nel does the same, so
// that a command written for NeMo starts unchanged.

// gymCommand is the argv that starts managed gym service name: its
// server_cmd under bash, told its port in $PORT by env (so that the job
// exports no PORT to the other steps).
func gymCommand(name string, s *Service) []string {
	if s.Benchmark != "" {
		// nel-run serves the benchmark that the plan holds for the
		// service. The job's own plan and nel-run are named by the
		// variables the job sets ($NEL_PLAN, $NEL_RUN; under nel run
		// nel-run is on the PATH), so the plan need not name itself.
		// It listens on the address its clients are given (the job's
		// node's; under nel run, which sets none, loopback), and writes
		// that endpoint to a file of the output folder, where a Gym
		// client outside the job finds it (gym://$(cat FILE)).
		script := `exec "${NEL_RUN:-nel-run}" serve --plan "$NEL_PLAN" --service ` + shellquote.Quote(name) +
			` --host "${` + serverHostEnv(name) + `:-127.0.0.1}" --port ` + strconv.Itoa(s.Port) +
			` ${NEL_OUT:+--endpoint-file "$NEL_OUT"/` + shellquote.Quote(servedEndpointFile(name)) + `}`
		return []string{"bash", "-c", script, "nel-" + name}
	}
	return []string{"env", "PORT=" + strconv.Itoa(s.Port), "bash", "-c", s.ServerCmd, "nel-" + name}
}

// planGym fills what a managed gym service adds to its plan entry: a
// health check on /health (what nel serve and NeMo's own evaluator
// servers answer).
func planGym(ps *plan.Service, s *Service) {
	ps.HealthPath = "/health"
	if s.Benchmark != "" {
		ps.Serves = servedBenchmark(ps.Name, s)
	}
}

// servedBenchmark is the plan entry of the benchmark a gym service
// serves: its name and params, scored by its default metrics, as a
// recipe's benchmark of that name with no other settings would be. The
// model is called by the server's client, not by it: the service itself
// stands in as the solver's service, which a shard's runner needs.
func servedBenchmark(name string, s *Service) *plan.Benchmark {
	b := &plan.Benchmark{
		Key: s.Benchmark, Name: s.Benchmark, Dir: safeDir(s.Benchmark), Params: s.Params, Repeats: 1,
		Solver:  plan.Solver{Type: "simple", Service: name},
		Scoring: plan.Scoring{IncludeDefaults: true, Metrics: []plan.Metric{}},
	}
	if len(b.Params) == 0 {
		b.Params = nil
	}
	return b
}

// gymUnsupported refuses what a gym service asks that nel cannot do. A
// running server (url) is used as it is; one nel starts needs its
// server_cmd.
func gymUnsupported(no func(feature string, path ...any), r *Recipe, target, name string, sv *Service) {
	switch {
	case sv.URL != "":
		for _, f := range []struct {
			set bool
			key string
		}{{sv.ServerCmd != "", "server_cmd"}, {sv.Image != "", "image"}, {sv.Benchmark != "", "benchmark"}} {
			if f.set {
				no(f.key+" together with url on a gym service (url names a running server, which nel does not start: leave one of them out)", "services", name, f.key)
			}
		}
	case sv.ServerCmd == "" && sv.Benchmark != "" && sv.Image != "":
		no("image together with benchmark on a gym service (nel-run serves the benchmark itself: leave image out)", "services", name, "image")
	case sv.ServerCmd == "" && sv.Benchmark != "" && target == "k8s":
		// A pod has no $NEL_PLAN or $NEL_RUN for gymCommand's script.
		no("a gym service's benchmark on Kubernetes (run it with nel run or on SLURM, or give a running server's url)", "services", name, "benchmark")
	case sv.ServerCmd == "" && sv.Benchmark != "":
		// nel-run serve serves it (gymCommand, servedBenchmark).
	case sv.ServerCmd == "":
		no("a gym service without url or server_cmd (nel starts a Gym server from its server_cmd, or uses the running one at url)", "services", name, "type")
	case sv.Benchmark != "":
		no("benchmark together with server_cmd on a gym service (server_cmd starts the server: leave benchmark out)", "services", name, "benchmark")
	case r.Cluster.Type == "local" && sv.Image != "" && target != "k8s":
		no(localImages, "services", name, "image")
	}
	if len(sv.Params) > 0 && (sv.Benchmark == "" || sv.URL != "" || sv.ServerCmd != "") {
		no("params of a gym service that serves no benchmark of nel's (params are those of its benchmark: give benchmark, without url or server_cmd)", "services", name, "params")
	}
	if len(sv.Interceptors) > 0 || sv.Proxy != nil {
		no("proxy", "services", name, "proxy")
	}
}

// gymCmdServers names, by benchmark index, the managed gym services that
// the recipe's gym://cmd: benchmarks start: gym_cmd_<i>, made unique
// among the recipe's own service names.
func gymCmdServers(r *Recipe) map[int]string {
	out := map[int]string{}
	for i, b := range r.Benchmarks {
		if n, err := gymenv.ParseName(b.Name); err == nil && n.Cmd != "" {
			name := "gym_cmd_" + strconv.Itoa(i)
			for r.Services[name] != nil {
				name += "_"
			}
			out[i] = name
		}
	}
	return out
}

// withGymCmdServers is s with the gym services of its gym://cmd:
// benchmarks added, as if the recipe had declared them: NeMo starts
// such a server for the benchmark (on a free port it gives the command
// in $PORT) and stops it after, which is what a managed gym service is.
// The port is fixed here, since a job's script waits on it: the first
// from 9100 on that no service of the recipe has. The recipe's own
// services are not changed, nor are its hashes: the benchmark's name,
// which they cover, says the command.
func withGymCmdServers(s *Source) *Source {
	servers := gymCmdServers(s.Recipe)
	if len(servers) == 0 || s.gymCmd != nil {
		return s
	}
	c := *s
	c.gymCmd = servers
	c.Recipe = shallowCopy(s.Recipe)
	c.Recipe.Services = maps.Clone(s.Recipe.Services)
	if c.Recipe.Services == nil {
		c.Recipe.Services = map[string]*Service{}
	}
	used := map[int]bool{}
	for _, sv := range s.Recipe.Services {
		used[sv.Port] = true
	}
	port := 9100
	for _, i := range slices.Sorted(maps.Keys(servers)) {
		for used[port] {
			port++
		}
		used[port] = true
		n, _ := gymenv.ParseName(s.Recipe.Benchmarks[i].Name)
		c.Recipe.Services[servers[i]] = &Service{Type: "gym", ServerCmd: n.Cmd, Port: port, StartupTimeout: 60}
	}
	return &c
}

// gymNameUnsupported refuses a gym:// benchmark name nel cannot honour,
// saying why (gymenv.ParseName).
func gymNameUnsupported(no func(feature string, path ...any), i int, name string) {
	_, err := gymenv.ParseName(name)
	if err == nil {
		return
	}
	base, _, _ := strings.Cut(name, "?")
	feature := "gym://NAME"
	if _, berr := gymenv.ParseName(base); berr == nil {
		feature = "gym:// query parameters other than protocol=evaluator"
	} else if strings.HasPrefix(base, "gym://module:") {
		feature = "gym://module:"
	}
	why := strings.TrimPrefix(err.Error(), name+": ")
	no(feature+" ("+why+")", "benchmarks", i, "name")
}

// gymServiceRef is the managed gym service that benchmark name
// gym://SERVICE names, or "". nel's form: NeMo's gym://NAME is a built-in
// benchmark that nel serve serves, and a gym service with benchmark:
// NAME is that server, started by the job; gym://SERVICE takes its items
// and rewards from it as gym://cmd: does from its command's server.
func gymServiceRef(r *Recipe, name string) string {
	ref, ok := strings.CutPrefix(name, "gym://")
	if sv := r.Services[ref]; !ok || sv == nil || sv.Type != "gym" || !sv.Managed() {
		return ""
	}
	return ref
}

// servedMethod is what the hashes of a benchmark that takes its items and
// rewards from gym service name (gym://SERVICE) cover of it: the
// benchmark it serves, with its params (local data by content), or the
// command that starts it.
func servedMethod(s *Source, name string) map[string]any {
	sv := s.Recipe.Services[name]
	if sv.Benchmark == "" {
		return map[string]any{"server_cmd": sv.ServerCmd, "image": sv.Image}
	}
	return map[string]any{"benchmark": sv.Benchmark, "params": s.servedParams(name)}
}

// servedEndpointFile is the file, in the output folder, that the server
// of gym service name writes its http://HOST:PORT to once it listens.
func servedEndpointFile(name string) string { return "endpoint-" + safeDir(name) + ".txt" }
