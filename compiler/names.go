package compiler

import (
	"fmt"
	"strings"

	"github.com/nel-eval/nel/runtime/bench"
)

// benchmarkNames checks what each benchmark's name says nel will run,
// before a job is submitted: a built-in name (the node would otherwise
// find out after the model has loaded), a URI in a form nel parses. Every
// solver's benchmark is named so: NeMo Evaluator resolves the name of each
// (get_environment) before it builds the solver. NeMo's own benchmarks
// that nel lacks (nemoEnvironments) are left to the refusal of the solver
// that would run them.
func (c *ruleChecker) benchmarkNames() {
	for i, b := range c.r.Benchmarks {
		if b.BYOB != nil {
			continue // a name of its own; byob.go checks it is no built-in's
		}
		at := []any{"benchmarks", i, "name"}
		if strings.Contains(b.Name, "://") {
			if msg := uriProblem(b.Name); msg != "" {
				c.at(msg, at...)
			}
			continue
		}
		if pythonBenchmark(b.Name) || b.Solver.Type != "simple" && nemoEnvironments[strings.ToLower(b.Name)] {
			continue
		}
		if _, ok := bench.Lookup(b.Name); !ok {
			c.at(unknownBenchmark(b), at...)
		}
	}
	// A gym service's benchmark is served by nel-run serve on the node:
	// an unknown one is said now, not when the server fails to start.
	for _, name := range sortedKeys(c.r.Services) {
		sv := c.r.Services[name]
		if sv.Type != "gym" || sv.Benchmark == "" || sv.URL != "" || sv.ServerCmd != "" {
			continue // gymUnsupported says why of a benchmark with url or server_cmd
		}
		if _, ok := bench.Lookup(sv.Benchmark); !ok {
			c.at(unknownBenchmark(&Benchmark{Name: sv.Benchmark, Params: sv.Params}), "services", name, "benchmark")
		}
	}
}

// pythonBenchmark says whether name is NeMo Evaluator's path/file.py[:bench]
// form, a Python benchmark file (refused as not supported in support.go).
func pythonBenchmark(name string) bool {
	file, _, _ := strings.Cut(name, ":")
	return strings.HasSuffix(file, ".py")
}

// unknownBenchmark says that b's name is no built-in benchmark, the
// closest one, and how a benchmark of one's own is declared.
func unknownBenchmark(b *Benchmark) string {
	names := bench.Names()
	msg := fmt.Sprintf("unknown benchmark %q", b.Name)
	if best := closest(b.Name, names); best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	msg += "; built in: " + strings.Join(names, ", ") + " (nel list)"
	if _, ok := b.Params["data_path"]; ok {
		// data_path gives a built-in benchmark other data (its prompt and
		// scorer stay); it does not make a benchmark of a name.
		msg += "; params.data_path replaces a built-in benchmark's data, and a benchmark of your own is declared with byob: {dataset, prompt, target, scorer} (docs/byob.md)"
	} else {
		msg += ", or declare a benchmark of your own with byob (docs/byob.md)"
	}
	if b.Solver.Type != "simple" && !nemoEnvironments[strings.ToLower(b.Name)] {
		// A name from one of NeMo's configs that its registry lacks too.
		msg += fmt.Sprintf("; NeMo Evaluator has no environment %q either (its get_environment raises KeyError \"Unknown environment\" when the job starts)", b.Name)
		if h, ok := harborPlaybooks[harborKey(b.Name)]; ok {
			msg += fmt.Sprintf("; its tasks are the Harbor dataset %s: write playbook: %s, or name: %q", h.dataset, h.playbook, h.dataset)
		}
	}
	return msg
}

// nemoEnvironments are the names NeMo Evaluator's registry resolves
// without a URI (nemo_evaluator/benchmarks, at the commit its facts
// describe): the names its configs may give any solver.
var nemoEnvironments = map[string]bool{
	"drop": true, "gpqa": true, "gsm8k": true, "healthbench": true, "humaneval": true,
	"math500": true, "mgsm": true, "mmlu": true, "mmlu_pro": true, "nmp_harbor": true,
	"pinchbench": true, "simpleqa": true, "terminal-bench-hard": true,
	"terminal-bench-hard-aa-split": true, "terminal-bench-v1": true, "triviaqa": true,
	"xstest": true,
}

// nemoNameUnsupported refuses, for a solver that runs a benchmark by its
// name (tool_calling, gym_delegation), one of NeMo Evaluator's own
// benchmarks that nel has no built-in of: benchmarkNames lets those
// through for any solver but simple, and nel-run would find no such
// benchmark on the node after the model has loaded. The Terminal-Bench
// v1 names are tasks nel builds (harbor_git.go).
func nemoNameUnsupported(no func(string, ...any), i int, b *Benchmark) {
	if b.BYOB != nil || !nemoEnvironments[strings.ToLower(b.Name)] || gitTasks(b.Name) {
		return
	}
	if _, ok := bench.Lookup(b.Name); ok {
		return
	}
	no(fmt.Sprintf("NeMo Evaluator's benchmark %s, which nel has no built-in of (%sbuilt in: %s; or declare it with byob, docs/byob.md)", b.Name, nemoHarborBenchmark(b.Name), strings.Join(bench.Names(), ", ")), "benchmarks", i, "name")
}

// harborPlaybooks are the Harbor datasets behind the agentic benchmark
// names NeMo's configs use without a registry entry (by harborKey), and
// the playbook that names each.
var harborPlaybooks = map[string]struct{ playbook, dataset string }{
	"swebench-verified":     {"swebench_verified", "harbor://swebench-verified@1.0"},
	"swebench-multilingual": {"swebench_multilingual", "harbor://swebench_multilingual@1.0"},
	"swebench-pro":          {"swebench_pro", "harbor://swebenchpro@1.0"},
	"swebenchpro":           {"swebench_pro", "harbor://swebenchpro@1.0"},
	"terminal-bench-2":      {"terminal_bench_2", "harbor://terminal-bench@2.0"},
}

// harborKey is name as harborPlaybooks is keyed: lower case, - for _.
func harborKey(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// closest is the name in known within two edits of name, "" when none is.
func closest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// uriProblem says what is wrong with a benchmark name written as a URI, ""
// when nel parses it: a scheme nel knows, and what that scheme needs after
// it. What nel parses but cannot run yet is support.go's.
func uriProblem(name string) string {
	scheme, rest, _ := strings.Cut(name, "://")
	k, _ := benchmarkSource(name)
	if k.scheme == "" {
		var forms []string
		var schemes []string
		for _, s := range Sources() {
			if s.scheme != "" && s.Field == "benchmarks[].name" {
				forms = append(forms, s.Form)
				schemes = append(schemes, s.scheme)
			}
		}
		msg := fmt.Sprintf("unknown benchmark source %q", scheme+"://")
		if best := closest(scheme, schemes); best != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", best+"://")
		}
		return msg + "; expected a built-in name (nel list) or one of " + strings.Join(forms, ", ")
	}
	switch scheme {
	case "container":
		image, task, _ := strings.Cut(rest, "#")
		if image == "" || task == "" {
			return fmt.Sprintf("expected %s (an image, then # and the harness's task), found %q", k.Form, name)
		}
	case "harbor":
		// harbor.go checks the dataset's name and reads its folder.
	default:
		if rest == "" {
			return fmt.Sprintf("expected %s, found %q", k.Form, name)
		}
	}
	return ""
}
