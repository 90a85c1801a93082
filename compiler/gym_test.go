package compiler

import (
	"os"
	"strings"
	"testing"
)

// TestGymServiceSupport: a running Gym server (url) is a service nel
// takes; one nel would have to start is refused at the field that asks.
func TestGymServiceSupport(t *testing.T) {
	l := newTestLoader(t)
	const head = "benchmarks: [{name: \"gsm8k\", solver: {type: \"simple\", service: \"m\"}}]\nservices: m: {type: \"api\", url: \"http://127.0.0.1:8000/v1\", model: \"m\"}\n"
	const managed = " (a managed Gym server: nel-run starts no Gym server yet; start it (nel serve, or Gym's own) and give its url)"
	for _, c := range []struct{ src, want string }{
		{`services: g: {type: "gym", url: "http://gym:8000"}`, ""},
		{`services: g: {type: "gym", server_cmd: "python s.py"}`,
			"r.cue:3:21: services.g.type: not supported yet: a gym service without url" + managed + "\n" +
				"r.cue:3:40: services.g.server_cmd: not supported yet: server_cmd of a gym service (nel-run starts no Gym server yet; start it (nel serve, or Gym's own) and give its url)"},
		{`services: g: {type: "gym", url: "http://gym:8000", benchmark: "gsm8k"}`,
			"r.cue:3:63: services.g.benchmark: not supported yet: benchmark of a gym service (nel-run starts no Gym server yet; start it (nel serve, or Gym's own) and give its url)"},
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
