package compiler

import (
	"strings"
	"testing"
)

// TestToolCallingAnswers: the tool_calling solver on a benchmark its own
// scorer scores loads and compiles, but for what it cannot mean: an
// artifact answer no verifier reads, a container sandbox without the
// image its sessions run in (refused at the field), and sandboxes or
// benchmarks nel-run cannot give it (not supported yet, at the field).
func TestToolCallingAnswers(t *testing.T) {
	const head = "services: {m: {type: \"api\", url: \"https://h/v1/chat/completions\", model: \"m\"}, g: {type: \"gym\", url: \"http://g:8000\"}}\n"
	cases := []struct {
		name, src string
		invalid   string // the load error, "" when it loads
		refused   string // compile's refusals, one a line
	}{
		{"gsm8k, both tools", head + `benchmarks: [{name: "gsm8k", solver: {type: "tool_calling", service: "m", resource_service: "g", sandbox_tools: true}, sandbox: {type: "docker", image: "python:3.12"}}]`, "", ""},
		{"byob records, gym tools only", head + `benchmarks: [{name: "mine", byob: {dataset: "q.jsonl", prompt: "{q}", target: "a"}, solver: {type: "tool_calling", service: "m", resource_service: "g"}}]`, "", ""},
		{"artifact", head + `benchmarks: [{name: "gsm8k",
	solver: {type: "tool_calling", service: "m", resource_service: "g", response_mode: "sandbox_artifact"}}]`,
			`r.cue:3:85: benchmarks[0].solver.response_mode: response_mode sandbox_artifact needs a verifier that reads the sandbox (harbor:// tasks, byob.verifier); gsm8k scores the final message, and in this mode the answer is empty (NeMo Evaluator scores "" and every sample is wrong): leave response_mode at last_message`, ""},
		{"docker without image", head + `benchmarks: [{name: "gsm8k", solver: {type: "tool_calling", service: "m", sandbox_tools: true},
	sandbox: {type: "docker"}}]`,
			`r.cue:3:2: benchmarks[0].sandbox.image: the sandbox tools of gsm8k run in a docker session of the sandbox's image, and it has none (a task names its own image; this benchmark's items do not): set image`, ""},
		{"named apptainer without image", head + `sandboxes: sif: {type: "apptainer"}
benchmarks: [{name: "gsm8k", solver: {type: "tool_calling", service: "m", sandbox_tools: true}, sandbox: "sif"}]`,
			`r.cue:2:12: sandboxes.sif.image: the sandbox tools of gsm8k run in an apptainer session of the sandbox's image, and it has none`, ""},
		{"completions service", `services: m: {type: "api", url: "https://h/v1/completions", model: "m", protocol: "completions"}
benchmarks: [{name: "gsm8k", sandbox: {type: "local"}, solver: {type: "tool_calling", service: "m", sandbox_tools: true}}]`,
			`r.cue:2:96: benchmarks[0].solver.service: a tool_calling solver speaks chat_completions (messages, tools, tool_calls), and service "m" is protocol completions`, ""},
		// (A missing field is placed at its sandbox.)
		// Without sandbox tools the sandbox only scores (humaneval's
		// programs): no session, so no image asked for.
		{"docker without image, no sandbox tools", head + `benchmarks: [{name: "gsm8k", solver: {type: "tool_calling", service: "m", resource_service: "g"}, sandbox: {type: "docker"}}]`, "", ""},
		// A slurm pool's servers and an ecs_fargate task keep the tools'
		// session (sandbox-serve's /session): nothing is refused.
		{"slurm sandbox pool", head + `sandboxes: pool: {type: "slurm", image: "python:3.12", node_pool: "cpu"}
benchmarks: [{name: "gsm8k", solver: {type: "tool_calling", service: "m", sandbox_tools: true}, sandbox: "pool"}]
cluster: {type: "slurm", node_pools: {eval: {partition: "cpu", nodes: 1}, cpu: {partition: "cpu", nodes: 1}}}`, "", ""},
		{"gym benchmark", head + `benchmarks: [{name: "gym://g:8000",
	solver: {type: "tool_calling", service: "m", resource_service: "g"}}]`, "",
			`r.cue:3:17: benchmarks[0].solver.type: not supported yet: solver type tool_calling on a gym:// benchmark (nel-run scores a gym:// item by the server's /verify of one response it asked for; run the Gym environment's tools as resource_service of a benchmark nel scores)`},
	}
	dir := t.TempDir()
	t.Chdir(dir)
	writeFiles(t, dir, map[string]string{"q.jsonl": `{"q": "1+1?", "a": "2"}` + "\n"})
	l := newTestLoader(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := l.Load("r.cue", []byte(c.src), nil)
			switch {
			case c.invalid != "":
				if err == nil || !strings.HasPrefix(err.Error(), c.invalid) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("load: %v\nwant one error starting\n%s", err, c.invalid)
				}
				return
			case err != nil:
				t.Fatalf("load: %v", err)
			}
			var got []string
			for _, e := range Unsupported(s) {
				got = append(got, e.Error())
			}
			if g := strings.Join(got, "\n"); g != c.refused {
				t.Errorf("refusals:\n%s\nwant\n%s", g, c.refused)
			}
		})
	}
}

// TestToolCallingHash: on an ordinary benchmark, the loop's settings, its
// tools (the sandbox's image, the resource server) and its system prompt
// are methodology: each changes the recipe and benchmark hashes. Where
// the model is served does not.
func TestToolCallingHash(t *testing.T) {
	const base = `services: {m: {type: "api", url: "https://h/v1/chat/completions", model: "m"}, g: {type: "gym", url: "http://g:8000"}}
benchmarks: [{name: "gsm8k", solver: {type: "tool_calling", service: "m", resource_service: "g", sandbox_tools: true, max_turns: 10, system_prompt: "Use the tools."}, sandbox: {type: "docker", image: "python:3.12"}}]
`
	hashes := func(src string) Hashes { return hashesOf(t, loadRecipe(t, src)) }
	h0 := hashes(base)
	for _, c := range []struct {
		name, old, new string
		same           bool
	}{
		{"max_turns", "max_turns: 10", "max_turns: 11", false},
		{"system_prompt", `"Use the tools."`, `"Use bash."`, false},
		{"resource server", `"http://g:8000"`, `"http://other:8000"`, false},
		{"sandbox tools", "sandbox_tools: true", "sandbox_tools: false", false},
		{"sandbox image", `"python:3.12"`, `"python:3.13"`, false},
		{"model endpoint", `"https://h/v1/chat/completions"`, `"https://elsewhere/v1/chat/completions"`, true},
	} {
		src := strings.Replace(base, c.old, c.new, 1)
		if src == base {
			t.Fatalf("%s: %q is not in the recipe", c.name, c.old)
		}
		h := hashes(src)
		b, b0 := h.Benchmarks["gsm8k"], h0.Benchmarks["gsm8k"]
		if b == "" || (h.Recipe == h0.Recipe) != c.same || (b == b0) != c.same {
			t.Errorf("%s: recipe hash same %v, benchmark hash %q same %v; want both %v", c.name, h.Recipe == h0.Recipe, b, b == b0, c.same)
		}
	}
}

// NeMo Evaluator's own benchmarks that nel lacks pass benchmarkNames for
// any solver but simple (nemoEnvironments, left to the solver's refusal):
// tool_calling and gym_delegation must refuse them at compile, or nel-run
// finds no such built-in on the node after the model has loaded.
func TestNeMoNameWithoutBuiltin(t *testing.T) {
	const head = "services: {m: {type: \"api\", url: \"https://h/v1/chat/completions\", model: \"m\"}, g: {type: \"gym\", url: \"http://g:8000\"}}\n"
	l := newTestLoader(t)
	for _, c := range []struct{ name, solver string }{
		{"healthbench", `{type: "tool_calling", service: "m", resource_service: "g"}`},
		{"nmp_harbor", `{type: "tool_calling", service: "m", sandbox_tools: true}, sandbox: {type: "local"}`},
		{"healthbench", `{type: "gym_delegation", service: "m", gym_service: "g"}`},
	} {
		src := head + `benchmarks: [{name: "` + c.name + `", solver: ` + c.solver + `}]`
		s, err := l.Load("r.cue", []byte(src), nil)
		if err != nil {
			t.Fatalf("%s, %s: load: %v", c.name, c.solver, err)
		}
		got := Unsupported(s)
		if len(got) != 1 || !strings.Contains(got[0].Error(), "benchmarks[0].name: not supported yet: NeMo Evaluator's benchmark "+c.name+", which nel has no built-in of") {
			t.Errorf("%s, %s: refusals %v", c.name, c.solver, got)
		}
	}
	// A built-in of the same kind compiles.
	s, err := l.Load("r.cue", []byte(head+`benchmarks: [{name: "gsm8k", solver: {type: "tool_calling", service: "m", resource_service: "g"}}]`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Unsupported(s); len(got) != 0 {
		t.Errorf("gsm8k: refusals %v", got)
	}
}
