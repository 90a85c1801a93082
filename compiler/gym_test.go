package compiler

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGymServiceSupport: a running Gym server (url) is a service nel
// takes, and so is one it starts from server_cmd or from one of its own
// benchmarks (benchmark, served by nel-run serve); what nel cannot start,
// or a server given both ways, is refused at the field that asks.
func TestGymServiceSupport(t *testing.T) {
	l := newTestLoader(t)
	const head = "benchmarks: [{name: \"gsm8k\", solver: {type: \"simple\", service: \"m\"}}]\nservices: m: {type: \"api\", url: \"http://127.0.0.1:8000/v1\", model: \"m\"}\n"
	for _, c := range []struct{ src, want string }{
		{`services: g: {type: "gym", url: "http://gym:8000"}`, ""},
		{`services: g: {type: "gym", server_cmd: "python s.py"}`, ""},
		{`services: g: {type: "gym"}`,
			"r.cue:3:21: services.g.type: not supported yet: a gym service without url or server_cmd (nel starts a Gym server from its server_cmd, or uses the running one at url)"},
		{`services: g: {type: "gym", benchmark: "gsm8k"}`, ""},
		{`services: g: {type: "gym", benchmark: "gsm8k", image: "gym:1"}`,
			"r.cue:3:55: services.g.image: not supported yet: image together with benchmark on a gym service (nel-run serves the benchmark itself: leave image out)"},
		{`services: g: {type: "gym", server_cmd: "python s.py", params: {n: 1}}`,
			"r.cue:3:55: services.g.params: not supported yet: params of a gym service that serves no benchmark of nel's (params are those of its benchmark: give benchmark, without url or server_cmd)"},
		{`services: g: {type: "gym", url: "http://gym:8000", benchmark: "gsm8k"}`,
			"r.cue:3:63: services.g.benchmark: not supported yet: benchmark together with url on a gym service (url names a running server, which nel does not start: leave one of them out)"},
		{`services: g: {type: "gym", url: "http://gym:8000", server_cmd: "python s.py"}`,
			"r.cue:3:64: services.g.server_cmd: not supported yet: server_cmd together with url on a gym service (url names a running server, which nel does not start: leave one of them out)"},
		{`services: g: {type: "gym", server_cmd: "python s.py", image: "gym:1"}` + "\ncluster: type: \"local\"",
			"r.cue:3:62: services.g.image: not supported yet: container images on a local cluster (run it with cluster.type slurm, or drop image)"},
	} {
		s, err := l.Load("r.cue", []byte(head+c.src+"\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if errs := Unsupported(s); len(errs) > 0 {
			got = errs.Error()
		}
		if got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.src, got, c.want)
		}
	}
}

// TestGymResourceServicePlan: a tool_calling solver's resource_service,
// a running Gym server, reaches the plan as the service nel-run's gym
// tools call (by its url).
func TestGymResourceServicePlan(t *testing.T) {
	recipe := harborDir(t, `, resource_service: "g"`)
	src, err := os.ReadFile(recipe)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "services: m:", "services: g: {type: \"gym\", url: \"http://gym:8000\"}\nservices: m:", 1)
	if err := os.WriteFile(recipe, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, h, err := loadWithEnv(t, recipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := Unsupported(s); len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	g, ok := p.Service("g")
	if !ok || g.Type != "gym" || g.URL != "http://gym:8000" || g.Managed {
		t.Errorf("service g in the plan: %+v (found %v), want an external gym service at http://gym:8000", g, ok)
	}
	if rs := p.Benchmarks[0].Solver.ResourceService; rs != "g" {
		t.Errorf("resource_service %q, want g", rs)
	}
}

// TestGymServerPlan: a gym service with server_cmd is a managed server in
// the plan: bash runs the command, told its port by env (no PORT exported
// to the job), health-waited on /health; and a gym://cmd: benchmark gets
// such a service of its own, on the first port from 9100 that the
// recipe's services leave free, named in the benchmark's gym_server.
func TestGymServerPlan(t *testing.T) {
	l := newTestLoader(t)
	src := `services: m: {type: "api", url: "http://127.0.0.1:8000/v1", model: "m"}
services: g: {type: "gym", server_cmd: "python s.py --port $PORT", port: 9100}
benchmarks: [{name: "gym://cmd:python other.py", solver: {type: "simple", service: "m"}}]
`
	s, err := l.Load("r.cue", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, s)
	g, _ := p.Service("g")
	want := []string{"env", "PORT=9100", "bash", "-c", "python s.py --port $PORT", "nel-g"}
	if !g.Managed || g.URLEnv != "NEL_SERVICE_G_URL" || g.HealthPath != "/health" || g.Port != 9100 || !slices.Equal(g.Command, want) || len(g.Env) != 0 {
		t.Errorf("service g: %+v, want a managed server running %q", g, want)
	}
	c, ok := p.Service("gym_cmd_0")
	want = []string{"env", "PORT=9101", "bash", "-c", "python other.py", "nel-gym_cmd_0"}
	if !ok || !c.Managed || c.Port != 9101 || c.StartupTimeout != 60 || !slices.Equal(c.Command, want) {
		t.Errorf("service gym_cmd_0: %+v (found %v), want a managed server running %q", c, ok, want)
	}
	if gs := p.Benchmarks[0].GymServer; gs != "gym_cmd_0" {
		t.Errorf("gym_server %q, want gym_cmd_0", gs)
	}
	if _, ok := s.Recipe.Services["gym_cmd_0"]; ok {
		t.Errorf("the loaded recipe got the service: the hashes of a later call would differ")
	}
}

// A gym://cmd: benchmark's key is the environment's command line; the
// SLURM job is named for its kind, not for the command and its flags.
func TestGymCmdJobName(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "gym_cmd_slurm.slurm.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "\n#SBATCH --job-name=nel-gym_cmd\n") {
		t.Errorf("gym_cmd_slurm's job name is not nel-gym_cmd:\n%s", script[:min(len(script), 600)])
	}
}
