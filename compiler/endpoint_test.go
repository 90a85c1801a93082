package compiler

import (
	"strings"
	"testing"
)

// TestUseEndpoint: pointing a service at a running endpoint keeps the
// recipe hash (model id and methodology are the same) and changes the plan
// hash (it covers endpoints).
func TestUseEndpoint(t *testing.T) {
	recipe := `
services: sim: {type: "process", command: ["srv"], port: 8123, model: "nel-sim"}
services: v: {type: "vllm", model: "org/v", served_model_name: "served", port: 8000, node_pool: "gpu"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "sim"}}, {name: "mmlu", solver: {type: "simple", service: "v"}}]
cluster: {type: "slurm", walltime: "01:00:00", node_pools: gpu: {partition: "g", nodes: 1, ntasks_per_node: 1, gres: "gpu:1"}}
`
	s, err := loadLocked(t, recipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	h0, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(SolverServices(s), ","); got != "sim,v" {
		t.Errorf("SolverServices = %q", got)
	}
	if err := UseEndpoint(s, "sim", "http://127.0.0.1:9/v1", ""); err != nil {
		t.Fatal(err)
	}
	if err := UseEndpoint(s, "v", "https://h.example/v1", "MY_KEY"); err != nil {
		t.Fatal(err)
	}
	h1, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	if h1.Recipe != h0.Recipe {
		t.Errorf("recipe hash changed: %s → %s", h0.Recipe, h1.Recipe)
	}
	if h1.Plan == h0.Plan {
		t.Error("plan hash must cover the endpoint")
	}
	sim, v := s.Recipe.Services["sim"], s.Recipe.Services["v"]
	if sim.Type != "api" || sim.URL != "http://127.0.0.1:9/v1" || sim.Model != "nel-sim" || len(sim.Command) != 0 {
		t.Errorf("sim = %+v", sim)
	}
	// A managed server answers to its served name: that is the id kept.
	if v.Model != "served" || v.APIKey != "${MY_KEY}" {
		t.Errorf("v = model %q key %q", v.Model, v.APIKey)
	}
	for _, bad := range []struct{ name, url, key string }{
		{"nope", "http://h/v1", ""}, {"sim", "ftp://h", ""}, {"sim", "http://h/v1", "bad-name"},
	} {
		if err := UseEndpoint(s, bad.name, bad.url, bad.key); err == nil {
			t.Errorf("UseEndpoint(%q, %q, %q): no error", bad.name, bad.url, bad.key)
		}
	}
}
