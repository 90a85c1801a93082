// Package harbor reads Harbor-format agentic tasks (a recipe's
// harbor://DATASET) and runs their verifiers: each task is a folder with
// the prompt (instruction.md), its settings (task.toml), the files of its
// environment and the tests that write its reward.
//
// A dataset is $HARBOR_DATASETS_DIR/DATASET/ (./harbor_datasets/DATASET
// beside the recipe by default), one folder per task. Its identity is its
// content: Digest covers every file of every task, so the same tasks
// elsewhere are the same benchmark, and a task edited in place is not.
package harbor

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/provenance"
)

// EnvDatasetsDir names the variable that says where Harbor datasets lie,
// as NeMo Evaluator reads it.
const EnvDatasetsDir = "HARBOR_DATASETS_DIR"

// DefaultDatasetsDir is where datasets lie when EnvDatasetsDir is unset,
// relative to the recipe's folder.
const DefaultDatasetsDir = "harbor_datasets"

// DatasetDir is the folder of dataset name: under env (the value of
// EnvDatasetsDir) when it is set, else under DefaultDatasetsDir in
// recipeDir.
func DatasetDir(recipeDir, env, name string) string {
	if env != "" {
		return filepath.Join(env, name)
	}
	return filepath.Join(recipeDir, DefaultDatasetsDir, name)
}

// Task is one Harbor task.
type Task struct {
	// Name is the task's folder name, unique in its dataset.
	Name string
	// Dir is the task's folder on the host.
	Dir string
	// Instruction is instruction.md, trimmed, leading comment lines (the
	// canary) removed.
	Instruction string
	Config      Config
	// Digest is "sha256:…" over the task's files (FileDigest lines).
	Digest string
	// AppDir, when set, is the host folder copied into /app instead of
	// environment/: the files of a dataset item's task (ItemTask).
	AppDir string
	// Verifier, when set, is the verifier's argv instead of tests/test.sh:
	// a dataset item's own command (ItemTask), run with no /tests. It may
	// write a reward file as test.sh does; when it writes none, its exit
	// status is the reward (0: 1, else 0), as SWE-bench-style test
	// commands say pass or fail.
	Verifier []string
}

// App is the host folder copied into the sandbox's /app: the
// environment's files (sandbox.SessionSpec.App), Dockerfile included, as
// a Dockerfile's COPY . /app puts them; "" when the task has no
// environment folder (its image, [environment].docker_image, brings
// everything).
func (t *Task) App() string {
	if t.AppDir != "" {
		return t.AppDir
	}
	dir := filepath.Join(t.Dir, "environment")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// Tests is the host folder mounted at /tests for the verifier only
// (sandbox.SessionSpec.Tests).
func (t *Task) Tests() string {
	if t.Verifier != nil {
		return ""
	}
	return filepath.Join(t.Dir, "tests")
}

// Dataset is a loaded Harbor dataset.
type Dataset struct {
	Name string
	Dir  string
	// Tasks are in folder-name order.
	Tasks []Task
	// Digest is "sha256:…" over every file of every task, by its path
	// relative to the dataset's folder.
	Digest string
}

// Load reads the dataset in dir: every sub-folder that holds an
// instruction.md is a task (others are skipped, as Harbor does), and a
// task without tests/test.sh, or with a task.toml nel cannot read, is an
// error naming the file.
func Load(ctx context.Context, name, dir string) (*Dataset, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("harbor dataset %s: %w", name, err)
	}
	ds := &Dataset{Name: name, Dir: dir}
	var all []dataset.Part
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		taskDir := filepath.Join(dir, e.Name())
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, err := os.Stat(filepath.Join(taskDir, "instruction.md")); err != nil {
			continue
		}
		t, sums, err := loadTask(e.Name(), taskDir)
		if err != nil {
			return nil, fmt.Errorf("harbor dataset %s: %w", name, err)
		}
		ds.Tasks = append(ds.Tasks, *t)
		for _, s := range sums {
			all = append(all, dataset.Part{Name: e.Name() + "/" + s.Name, SHA256: s.SHA256})
		}
	}
	if len(ds.Tasks) == 0 {
		return nil, fmt.Errorf("harbor dataset %s: %s holds no task (a folder with instruction.md)", name, dir)
	}
	ds.Digest = dataset.Digest(all)
	return ds, nil
}

func loadTask(name, dir string) (*Task, []dataset.Part, error) {
	instr, err := os.ReadFile(filepath.Join(dir, "instruction.md"))
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", name, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tests", "test.sh")); err != nil {
		return nil, nil, fmt.Errorf("task %s: its verifier tests/test.sh: %w", name, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "environment", "docker-compose.yaml")); err == nil {
		return nil, nil, fmt.Errorf("task %s: environment/docker-compose.yaml: not supported yet: a task of several containers", name)
	}
	cfg, err := readConfig(filepath.Join(dir, "task.toml"))
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", name, err)
	}
	sums, err := fileSums(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", name, err)
	}
	t := &Task{Name: name, Dir: dir, Instruction: cleanInstruction(string(instr)), Config: cfg, Digest: dataset.Digest(sums)}
	return t, sums, nil
}

// cleanInstruction drops the comment lines an instruction starts with
// (Harbor datasets put a canary string there, for training-data filters,
// not for the model) and the blank around the text.
func cleanInstruction(s string) string {
	s = strings.TrimLeft(s, " \t\r\n")
	for strings.HasPrefix(s, "<!--") {
		end := strings.Index(s, "-->")
		if end < 0 {
			break
		}
		s = strings.TrimLeft(s[end+3:], " \t\r\n")
	}
	return strings.TrimSpace(s)
}

// Items are the dataset's tasks as benchmark items, in task order, with
// content IDs: a task's content is its instruction and its files' digest,
// so an edited test or environment is another item.
func (ds *Dataset) Items() []bench.Item {
	items := make([]bench.Item, len(ds.Tasks))
	for i, t := range ds.Tasks {
		items[i] = bench.Item{
			Index:    i,
			Category: t.Config.Category(),
			Messages: []bench.Message{{Role: "user", Content: t.Instruction}},
			Prompt:   t.Instruction,
			Meta:     map[string]any{"harbor_task": t.Name},
			Content:  map[string]any{"instruction": t.Instruction, "task_files": t.Digest},
			Origin:   ds.Name + "/" + t.Name,
		}
	}
	bench.AssignIDs(items)
	return items
}

// ItemsWith is Items with each prompt rendered from tmpl (an
// instruction_template) with its task's variables (Task.Vars); the items'
// ids stay those of the tasks' own content. A nil tmpl is Items.
func (ds *Dataset) ItemsWith(tmpl *Instruction) ([]bench.Item, error) {
	items := ds.Items()
	if tmpl == nil {
		return items, nil
	}
	for i := range items {
		p, err := tmpl.Render(ds.Tasks[i].Vars())
		if err != nil {
			return nil, fmt.Errorf("harbor dataset %s: task %s: %w", ds.Name, ds.Tasks[i].Name, err)
		}
		items[i].Messages = []bench.Message{{Role: "user", Content: p}}
		items[i].Prompt = p
	}
	return items, nil
}

// Task returns the task of an item Items made.
func (ds *Dataset) Task(it bench.Item) (*Task, bool) {
	name, _ := it.Meta["harbor_task"].(string)
	i := slices.IndexFunc(ds.Tasks, func(t Task) bool { return t.Name == name })
	if i < 0 {
		return nil, false
	}
	return &ds.Tasks[i], true
}

// fileSums lists every regular file under dir with its sha256, by slash
// path relative to dir, sorted. A symbolic link is refused: copied into
// the sandbox it could point out of it, and its target is not content the
// digest could cover.
func fileSums(dir string) ([]dataset.Part, error) {
	var out []dataset.Part
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link; a task's files must be regular files", filepath.ToSlash(rel))
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", filepath.ToSlash(rel))
		}
		sha, err := provenance.FileSHA256(path)
		if err != nil {
			return err
		}
		out = append(out, dataset.Part{Name: filepath.ToSlash(rel), SHA256: strings.TrimPrefix(sha, "sha256:")})
		return nil
	})
	slices.SortFunc(out, func(a, b dataset.Part) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// LoadPinned loads the tasks a plan names (t.Dir relative to recipeDir,
// unless absolute) and refuses them when their content is not what the
// compiler hashed: a task edited since nel compile would be scored under a
// benchmark hash that does not describe it.
func LoadPinned(ctx context.Context, recipeDir string, t plan.HarborTasks) (*Dataset, error) {
	dir := filepath.FromSlash(t.Dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(recipeDir, dir)
	}
	ds, err := Load(ctx, t.Dataset, dir)
	if err != nil {
		return nil, err
	}
	if t.Digest != "" && ds.Digest != t.Digest {
		return nil, fmt.Errorf("harbor dataset %s: the tasks in %s (%s) are not those nel compile hashed (%s): restore them, or compile again", t.Dataset, dir, ds.Digest, t.Digest)
	}
	return ds, nil
}

// AgentBudget is how long the agent may work on the task: the task's own
// [agent].timeout_sec when it is shorter than the benchmark's per-sample
// timeout, which bounds everything the sample does.
func (t *Task) AgentBudget(sampleTimeout time.Duration) time.Duration {
	if t.Config.AgentTimeout > 0 && t.Config.AgentTimeout < sampleTimeout {
		return t.Config.AgentTimeout
	}
	return sampleTimeout
}
