package compiler

import (
	"fmt"
	"slices"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/plan"
)

// A byob benchmark whose records are tasks (byob.verifier) is run by the
// tool_calling solver as Harbor tasks are: per record a sandbox session
// from the sandbox's image_template over the record's fields (NeMo's
// {instance_id}: an image for docker and apptainer, a folder of the
// record's files for the local sandbox), the prompt from byob.prompt,
// and the verifier's argv run in the same session after the agent, its
// reward file or exit status the reward (runtime/shard/agent_items.go).

// itemTasks says whether benchmark b's records are tasks.
func itemTasks(b *Benchmark) bool {
	return b.BYOB != nil && len(b.BYOB.Verifier) > 0
}

// byobVerifier checks byob.verifier and copies it into spec; it returns
// the record fields its words and the sandbox's image_template name.
func (c *ruleChecker) byobVerifier(i int, b *Benchmark, spec *plan.BYOB) ([]string, bool) {
	y := b.BYOB
	if len(y.Verifier) == 0 {
		return nil, true
	}
	at := func(msg string, path ...any) { c.at(msg, append([]any{"benchmarks", i, "byob"}, path...)...) }
	ok := true
	if b.Solver.Type != "tool_calling" && b.Solver.Type != "openclaw" {
		at(fmt.Sprintf("byob.verifier runs after an agent, in its sandbox session: it needs solver type tool_calling or openclaw, not %s", b.Solver.Type), "verifier")
		ok = false
	}
	if y.Scorer != nil {
		at("a byob benchmark with a verifier is scored by the verifier's reward: leave scorer out", "scorer")
		ok = false
	}
	var fields []string
	for j, w := range y.Verifier {
		t, err := bench.ParseTemplate(w)
		if err != nil {
			at(err.Error(), "verifier", j)
			ok = false
			continue
		}
		fields = append(fields, t.Fields()...)
	}
	if sb := resolveSandbox(c.r, b); sb != nil && sb.ImageTemplate != "" {
		t, err := bench.ParseTemplate(sb.ImageTemplate)
		if err != nil {
			c.at(err.Error(), sandboxPath(b, i, "image_template")...)
			ok = false
		} else {
			fields = append(fields, t.Fields()...)
		}
	}
	spec.Verifier = slices.Clone(y.Verifier)
	slices.Sort(fields)
	return slices.Compact(fields), ok
}

// sandboxPath is the path of field of benchmark i's sandbox: in
// sandboxes when the benchmark names one, else its own.
func sandboxPath(b *Benchmark, i int, field string) []any {
	if name, ok := b.Sandbox.(string); ok {
		return []any{"sandboxes", name, field}
	}
	return []any{"benchmarks", i, "sandbox", field}
}

// itemTasksUnsupported refuses what benchmark i's task records need that
// nel cannot give: the same limits as Harbor tasks' (harborUnsupported).
func itemTasksUnsupported(no func(string, ...any), r *Recipe, i int, b *Benchmark) {
	if !itemTasks(b) || b.Solver.Type != "tool_calling" {
		return
	}
	if !b.Solver.SandboxTools {
		no("byob tasks without sandbox_tools (the agent works on /app through the sandbox tools; set sandbox_tools: true)", "benchmarks", i, "solver", "sandbox_tools")
	}
	if b.Solver.ResponseMode == "sandbox_artifact" {
		no("response_mode sandbox_artifact on byob tasks (the verifier reads /app itself; leave response_mode at last_message)", "benchmarks", i, "solver", "response_mode")
	}
}

// imageTemplateUnsupported refuses a sandbox's image_template where no
// record's fields fill it: anywhere but a byob benchmark's task records.
func imageTemplateUnsupported(no func(string, ...any), r *Recipe, i int, b *Benchmark) {
	sb := resolveSandbox(r, b)
	if sb != nil && sb.ImageTemplate != "" && sb.Type == "slurm" {
		// As for Harbor tasks (harborImages): its sessions run in the
		// pool's image, never a record's.
		no("image_template on a slurm sandbox pool (its server is a Pyxis container that starts no other per session: every session runs in the pool's image; use an apptainer pool, whose sessions run each record's image)", sandboxPath(b, i, "image_template")...)
		return
	}
	if sb == nil || sb.ImageTemplate == "" || (itemTasks(b) && b.Solver.Type == "tool_calling") {
		return
	}
	no("image_template outside byob tasks (it is filled from a record's fields: a byob benchmark with a verifier, run by the tool_calling solver; a Harbor task names its own image)", sandboxPath(b, i, "image_template")...)
}

// nemoHarborBenchmark says, for one of NeMo Evaluator's own Harbor-based
// benchmarks nel cannot build the tasks of, why: they are no Harbor
// registry dataset. "" for any other name (the Terminal-Bench v1 ones
// nel-run builds: harbor_git.go).
func nemoHarborBenchmark(name string) string {
	switch name {
	case "nmp_harbor":
		return "NeMo Evaluator reads nmp_harbor's tasks from an NMP checkout ($NMP_REPO/tests/agentic-use) and builds their base image from its Dockerfile.harbor: put the tasks under $HARBOR_DATASETS_DIR and name the folder harbor://DATASET; "
	}
	return ""
}
