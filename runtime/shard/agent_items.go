package shard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// itemTasks are the templates that make a byob benchmark's records tasks
// for the tool_calling solver (SWE-bench-style items: an instance id, an
// environment, a problem statement, a verifier command): the sandbox's
// image_template and byob.verifier's words, each over the record's fields.
type itemTasks struct {
	image    *bench.Template // nil: the sandbox's own image, an empty /app
	verifier []*bench.Template
}

// newItemTasks parses b's templates; nil for a benchmark whose records are
// not tasks (no byob.verifier).
func newItemTasks(b *plan.Benchmark) (*itemTasks, error) {
	if b.BYOB == nil || len(b.BYOB.Verifier) == 0 {
		return nil, nil
	}
	t := &itemTasks{}
	for i, w := range b.BYOB.Verifier {
		tp, err := bench.ParseTemplate(w)
		if err != nil {
			return nil, fmt.Errorf("benchmark %s: byob.verifier[%d]: %w", b.Key, i, err)
		}
		t.verifier = append(t.verifier, tp)
	}
	if sb := b.Sandbox; sb != nil && sb.ImageTemplate != "" {
		tp, err := bench.ParseTemplate(sb.ImageTemplate)
		if err != nil {
			return nil, fmt.Errorf("benchmark %s: sandbox.image_template: %w", b.Key, err)
		}
		t.image = tp
	}
	return t, nil
}

// itemTask is item it's task and the image its session runs in: the
// verifier's argv from the record, and its environment from image_template:
// an image for docker and apptainer, a folder (relative to the recipe's)
// copied into /app for the local sandbox. A record that lacks a field the
// templates name, or whose folder is not there, fails as the sample's
// sandbox (its environment), never as a wrong answer.
func (r *runner) itemTask(it *bench.Item) (*harbor.Task, string, error) {
	t := r.items
	task := &harbor.Task{
		Name: it.ID, Instruction: it.Prompt,
		Config: harbor.Config{VerifierTimeout: harbor.DefaultVerifierTimeout},
	}
	for i, tp := range t.verifier {
		w, err := tp.Render(it.Content)
		if err != nil {
			return nil, "", fmt.Errorf("item %s: byob.verifier[%d]: %w", it.ID, i, err)
		}
		task.Verifier = append(task.Verifier, w)
	}
	if t.image == nil {
		return task, "", nil
	}
	env, err := t.image.Render(it.Content)
	if err == nil {
		err = checkItemEnv(r.b.Sandbox.Type, env)
	}
	if err != nil {
		return nil, "", fmt.Errorf("item %s: sandbox.image_template: %w", it.ID, err)
	}
	switch r.b.Sandbox.Type {
	case "docker", "apptainer", "ecs_fargate":
		return task, containerImage(r.b.Sandbox.Type, env), nil
	}
	dir := filepath.Join(r.p.RecipeDir, filepath.FromSlash(env))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, "", fmt.Errorf("item %s: sandbox.image_template: %s is no folder of the item's files for the local sandbox", it.ID, dir)
	}
	task.AppDir = dir
	return task, "", nil
}

// imageRef is what an image_template may render to for a container
// session: an image reference, never an option (a record's "--privileged"
// would be one on docker's command line) nor more than one word.
var imageRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`)

// checkItemEnv refuses what a record's fields made of image_template that
// would leave the task's environment: an image that is not one reference,
// or, for the local sandbox, a folder outside the recipe's (whose files,
// copied into /app, the model would read).
func checkItemEnv(sandboxType, env string) error {
	switch sandboxType {
	case "docker", "apptainer", "ecs_fargate":
		if !imageRef.MatchString(env) {
			return fmt.Errorf("%q is not an image reference", env)
		}
		return nil
	}
	p := filepath.FromSlash(env)
	if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return fmt.Errorf("%q is not a folder inside the recipe's folder", env)
	}
	return nil
}

// sampleTask is the task of item it and the session it starts from: a
// Harbor task's, or a byob record's (itemTask); no task for an ordinary
// benchmark's item, whose session starts with an empty /app in the
// sandbox's own image.
func (r *runner) sampleTask(it *bench.Item) (*harbor.Task, sandbox.SessionSpec, error) {
	var spec sandbox.SessionSpec
	if r.b.Sandbox != nil {
		spec.Timeout = time.Duration(r.b.Sandbox.Timeout * float64(time.Second))
	}
	if r.scoresAnswers() {
		return nil, spec, nil
	}
	if r.items != nil {
		task, img, err := r.itemTask(it)
		if err != nil {
			return nil, spec, err
		}
		spec.App, spec.Image = task.App(), img
		return task, spec, nil
	}
	task, ok := r.harbor.Task(*it)
	if !ok {
		return nil, spec, fmt.Errorf("item %s is no task of dataset %s", it.ID, r.harbor.Name)
	}
	spec.App, spec.Tests = task.App(), task.Tests()
	if r.b.Sandbox != nil {
		img, err := taskImage(r.b.Sandbox.Type, task)
		if errors.Is(err, harbor.ErrBuild) && buildsImages(r.b.Sandbox) {
			// The docker and apptainer sandboxes build the task's
			// Dockerfile, once per task, and start /app from the image's.
			spec.Build, img, err = task.BuildContext(), "", nil
		}
		if err != nil {
			return nil, spec, err
		}
		spec.Image = img
	}
	return task, spec, nil
}

// buildsImages: a sandbox whose engine builds a task's Dockerfile on the
// shard's node (docker build; apptainer build of the converted
// Dockerfile). An apptainer pool's servers are given an image, not a
// build (the compiler refuses such a task there).
func buildsImages(sb *plan.Sandbox) bool {
	return sb.Type == "docker" || sb.Type == "apptainer" && !sb.Pool
}

// instruction parses the benchmark's instruction_template; nil when it has
// none.
func (r *runner) instruction() (*harbor.Instruction, error) {
	src := r.b.InstructionTemplate
	if src == "" {
		return nil, nil
	}
	t, err := harbor.ParseInstruction(src)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: instruction_template:%w", r.b.Key, err)
	}
	return t, nil
}

// itemInstructions is set with each task record's prompt rendered from
// the instruction_template (harbor.ItemVars); set itself when there is
// none. The items are copies: set may be shared by the shards.
func (r *runner) itemInstructions(set *bench.Set) (*bench.Set, error) {
	tmpl, err := r.instruction()
	if err != nil || tmpl == nil {
		return set, err
	}
	out := *set
	out.Items = slices.Clone(set.Items)
	for i := range out.Items {
		it := &out.Items[i]
		p, err := tmpl.Render(harbor.ItemVars(r.b.Name, it.Content, it.Prompt))
		if err != nil {
			return nil, fmt.Errorf("benchmark %s: instruction_template: %s: %w", r.b.Key, it.Origin, err)
		}
		// The user message is the record's prompt (last, after a system
		// message); the agent loop speaks chat only.
		it.Messages = slices.Clone(it.Messages)
		it.Messages[len(it.Messages)-1].Content = p
		it.Prompt = p
	}
	return &out, nil
}

// toolCallingBenchmark refuses a tool_calling benchmark nel-run cannot
// run: a gym:// one (its rewards come from the Gym server's /verify, for a
// response the shard asked for in one request), and tasks without
// sandbox tools (the agent works on their /app through them). Any other
// benchmark's items are prompts whose answers its scorer scores.
func toolCallingBenchmark(b *plan.Benchmark) error {
	switch {
	case b.GymServer != "" || strings.HasPrefix(b.Name, "gym://"):
		return fmt.Errorf("benchmark %s: not supported yet: the tool_calling solver on a gym:// benchmark", b.Key)
	case b.BYOB != nil && len(b.BYOB.Verifier) > 0 && !b.Solver.SandboxTools:
		return fmt.Errorf("benchmark %s: byob tasks need sandbox_tools: the agent works on /app through them", b.Key)
	}
	return nil
}
