package compiler

import (
	"fmt"
	"strings"

	"github.com/nel-eval/nel/runtime/bench"
)

// The tool_calling solver on an ordinary benchmark (a built-in such as
// gsm8k, a byob dataset whose records are no tasks): as in NeMo Evaluator,
// the item's prompt starts the loop, the tools are the resource server's
// and/or the sandbox's, and the benchmark's own scorer scores the final
// assistant message (runtime/shard/agent.go). Tasks (harbor://,
// byob.verifier) have their own rules (harbor.go, byob_tasks.go).

// answersScored says whether benchmark b is run by the tool_calling solver
// and scored by its own scorer: no tasks, no peer harness.
func answersScored(b *Benchmark) bool {
	if b.Solver.Type != "tool_calling" || itemTasks(b) || gitTasks(b.Name) {
		return false
	}
	if _, ok := harborOf(b.Name); ok {
		return false
	}
	_, _, _, isHarness := harnessOf(b)
	return !isHarness
}

// toolCallingAnswers checks what a tool_calling benchmark scored by its
// scorer must say: an answer the scorer can read, and an image for a
// container sandbox's sessions.
func (c *ruleChecker) toolCallingAnswers(i int, b *Benchmark) {
	if sv := c.r.Services[b.Solver.Service]; b.Solver.Type == "tool_calling" && sv != nil && sv.Protocol != "" && sv.Protocol != "chat_completions" {
		// The loop sends messages and tools and reads tool_calls back:
		// OpenAI's chat completions, as NeMo's solver calls it whatever
		// the service says.
		c.at(fmt.Sprintf("a tool_calling solver speaks chat_completions (messages, tools, tool_calls), and service %q is protocol %s", b.Solver.Service, sv.Protocol), "benchmarks", i, "solver", "service")
	}
	if !answersScored(b) || !knownName(b) {
		return // benchmarkNames says what is wrong with the name
	}
	if b.Solver.ResponseMode == "sandbox_artifact" {
		// NeMo's solver answers "" in this mode and leaves the sandbox's
		// state to a task's capture_cmd and verifier; an ordinary
		// benchmark's verify() scores the empty answer.
		c.at("response_mode sandbox_artifact needs a verifier that reads the sandbox (harbor:// tasks, byob.verifier); "+b.Name+" scores the final message, and in this mode the answer is empty (NeMo Evaluator scores \"\" and every sample is wrong): leave response_mode at last_message", "benchmarks", i, "solver", "response_mode")
	}
	sb := resolveSandbox(c.r, b)
	if !b.Solver.SandboxTools || sb == nil || (sb.Type != "docker" && sb.Type != "apptainer") || sb.Image != "" {
		return
	}
	c.at(fmt.Sprintf("the sandbox tools of %s run in %s session of the sandbox's image, and it has none (a task names its own image; this benchmark's items do not): set image", b.Name, article(sb.Type)), sandboxPath(b, i, "image")...)
}

// toolCallingUnsupported refuses what a tool_calling benchmark scored by
// its scorer asks for that nel-run cannot give.
func toolCallingUnsupported(no func(string, ...any), r *Recipe, i int, b *Benchmark) {
	if !answersScored(b) {
		return
	}
	if strings.HasPrefix(b.Name, "gym://") {
		no("solver type tool_calling on a gym:// benchmark (nel-run scores a gym:// item by the server's /verify of one response it asked for; run the Gym environment's tools as resource_service of a benchmark nel scores)", "benchmarks", i, "solver", "type")
		return
	}
}

// knownName says whether b's name is one nel runs: its own (byob), a URI,
// a built-in.
func knownName(b *Benchmark) bool {
	if b.BYOB != nil || strings.Contains(b.Name, "://") {
		return true
	}
	_, ok := bench.Lookup(b.Name)
	return ok
}
