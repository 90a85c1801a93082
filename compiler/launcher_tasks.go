package compiler

import (
	"fmt"
	"slices"
	"strings"
)

// The v1 launcher's task registry, as nel carries it (launcher/tasks.tsv,
// written from the launcher's resources/all_tasks_irs.yaml and
// mapping.toml at main-legacy eb3ddf2a): which harness runs a task, the
// eval-factory image that holds the harness (and the digest the launcher
// pinned it to), and the endpoint types the task takes. A task is named
// "task" or, where two harnesses have one of that name, "harness.task".

// launcherTask is one task of the registry.
type launcherTask struct {
	Harness   string
	Name      string
	Endpoints []string // "chat", "completions", …
	Image     string   // the harness's eval-factory image
	Digest    string   // the digest mapping.toml pins Image to
	Native    *nativeTask
}

// nativeTask is a nel built-in benchmark that measures what a registry
// task does, and how far the two agree.
type nativeTask struct {
	Benchmark string
	Note      string // what differs, said where a native run is chosen
	// Args are params.extra.args values the note accounts for (a
	// harness's prompt choice that nel's benchmark has in its own form).
	Args []string
}

// nativeTasks are the registry tasks nel has as built-in benchmarks: the
// same dataset, answer format and scorer, or as close as the note says.
// Running one natively is the config's choice (native: true), never
// nel's: the published number was measured in the container.
var nativeTasks = map[string]nativeTask{
	"nemo_skills.ns_mmlu_pro": {"mmlu_pro", "the same MMLU-Pro test set (10 choices) and zero-shot chat prompt family; " +
		"nel's prompt asks for a last line 'Answer: X' and scores it with (?i)Answer\\s*:\\s*([A-J]), " +
		"where NeMo-Skills' prompt configs (eval/aai/mcq-10choices-boxed) ask for \\boxed{X}: comparable, not identical",
		[]string{"++prompt_config=eval/aai/mcq-10choices-boxed"}},
}

// taskRegistry is the parsed registry.
type taskRegistry struct {
	byName map[string][]*launcherTask // bare name → tasks (several harnesses may share it)
}

// loadRegistry parses the registry (a few hundred lines: parsed per load,
// so that nothing is kept between loads).
func loadRegistry() (*taskRegistry, error) {
	src, err := launcherFS.ReadFile("launcher/tasks.tsv")
	if err != nil {
		return nil, fmt.Errorf("read task registry: %w", err)
	}
	images := map[string][2]string{}
	reg := &taskRegistry{byName: map[string][]*launcherTask{}}
	for i, line := range strings.Split(string(src), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		switch {
		case f[0] == "harness" && len(f) == 4:
			images[f[1]] = [2]string{f[2], f[3]}
		case f[0] == "task" && len(f) == 4:
			img, ok := images[f[1]]
			if !ok {
				return nil, fmt.Errorf("task registry line %d: harness %s has no image", i+1, f[1])
			}
			t := &launcherTask{Harness: f[1], Name: f[2], Image: img[0], Digest: img[1]}
			if f[3] != "" {
				t.Endpoints = strings.Split(f[3], ",")
			}
			if n, ok := nativeTasks[f[1]+"."+f[2]]; ok {
				t.Native = &n
			}
			reg.byName[f[2]] = append(reg.byName[f[2]], t)
		default:
			return nil, fmt.Errorf("task registry line %d: %q", i+1, line)
		}
	}
	return reg, nil
}

// lookup finds a task by "task" or "harness.task".
func (r *taskRegistry) lookup(name string) (*launcherTask, error) {
	if ts := r.byName[name]; len(ts) == 1 {
		return ts[0], nil
	} else if len(ts) > 1 {
		var qs []string
		for _, t := range ts {
			qs = append(qs, t.Harness+"."+t.Name)
		}
		return nil, fmt.Errorf("task %q is in more than one harness: name one of %s", name, strings.Join(qs, ", "))
	}
	if h, n, ok := strings.Cut(name, "."); ok {
		for _, t := range r.byName[n] {
			if t.Harness == h {
				return t, nil
			}
		}
	}
	return nil, fmt.Errorf("task %q is not in the launcher's task registry (nemo-evaluator-launcher main-legacy eb3ddf2a); run a registry task, or write the benchmark as a nel recipe", name)
}

// takes reports whether the task accepts endpoint type typ.
func (t *launcherTask) takes(typ string) bool { return slices.Contains(t.Endpoints, typ) }
