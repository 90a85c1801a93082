package harbor

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
)

// smoke is the 5-task dataset written for nel's tests (and the example
// recipe examples/agentic/harbor_local.cue).
var smoke = filepath.Join("..", "..", "examples", "agentic", "harbor_datasets", "nel-smoke")

func loadSmoke(t *testing.T, dir string) *Dataset {
	t.Helper()
	ds, err := Load(context.Background(), "nel-smoke", dir)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestDatasetDir(t *testing.T) {
	if got := DatasetDir("recipes", "", "tb2"); got != filepath.Join("recipes", "harbor_datasets", "tb2") {
		t.Errorf("default: %s", got)
	}
	if got := DatasetDir("recipes", "/data/harbor", "tb2"); got != "/data/harbor/tb2" {
		t.Errorf("HARBOR_DATASETS_DIR set: %s", got)
	}
}

// TestLoadSmoke checks what Load reads of each task, against the files as
// written by hand.
func TestLoadSmoke(t *testing.T) {
	ds := loadSmoke(t, smoke)
	var names []string
	for _, task := range ds.Tasks {
		names = append(names, task.Name)
	}
	want := []string{"count-lines", "edit-json", "fix-off-by-one", "sort-names", "write-greeting"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tasks %v, want %v", names, want)
	}
	fix := ds.Tasks[2]
	if !strings.HasPrefix(fix.Instruction, "The function `total`") || strings.Contains(fix.Instruction, "canary") {
		t.Errorf("the canary comment is not stripped: %q", fix.Instruction)
	}
	c := fix.Config
	if c.AgentTimeout != 300*time.Second || c.VerifierTimeout != 60*time.Second || c.MemoryMB != 512 ||
		c.StorageMB != 1024 || c.CPUs != 1 || c.NetworkMode != "no-network" || c.Category() != "debugging" {
		t.Errorf("fix-off-by-one's config: %+v", c)
	}
	// The legacy forms: memory = '1G', an integer timeout.
	greet := ds.Tasks[4].Config
	if greet.MemoryMB != 1024 || greet.StorageMB != 2048 || greet.VerifierTimeout != 30*time.Second {
		t.Errorf("write-greeting's config: %+v", greet)
	}
	if env := ds.Tasks[0].Config.VerifierEnv; !reflect.DeepEqual(env, map[string]string{"LC_ALL": "C"}) {
		t.Errorf("count-lines' verifier env: %v", env)
	}
	// No [agent] table: the benchmark's timeout applies.
	if a := ds.Tasks[1].Config.AgentTimeout; a != 0 {
		t.Errorf("edit-json's agent timeout %v, want 0 (unset)", a)
	}
	if got := fix.App(); got != filepath.Join(smoke, "fix-off-by-one", "environment") {
		t.Errorf("App() = %s", got)
	}
}

// TestItems checks the items: one per task, content IDs, the task's
// category and instruction as the one user message.
func TestItems(t *testing.T) {
	ds := loadSmoke(t, smoke)
	items := ds.Items()
	if len(items) != 5 {
		t.Fatalf("%d items", len(items))
	}
	seen := map[string]bool{}
	for i, it := range items {
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(it.ID) || seen[it.ID] {
			t.Errorf("item %d: id %q is not a fresh content id", i, it.ID)
		}
		seen[it.ID] = true
		task, ok := ds.Task(it)
		if !ok || task.Name != ds.Tasks[i].Name {
			t.Errorf("item %d: Task() = %v, %v", i, task, ok)
			continue
		}
		if len(it.Messages) != 1 || it.Messages[0].Role != "user" || it.Messages[0].Content != task.Instruction {
			t.Errorf("item %d: messages %+v", i, it.Messages)
		}
		if it.Category != task.Config.Category() || it.Origin != "nel-smoke/"+task.Name {
			t.Errorf("item %d: category %q origin %q", i, it.Category, it.Origin)
		}
	}
	if items[1].Category != "configuration" {
		t.Errorf("edit-json's category %q", items[1].Category)
	}
}

// TestDigestCoversEveryFile edits one test file of one task in a copy of
// the dataset: the dataset's digest and that task's item ID change, the
// other items keep theirs; moved elsewhere unchanged, nothing changes.
func TestDigestCoversEveryFile(t *testing.T) {
	before := loadSmoke(t, smoke)
	dir := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.CopyFS(dir, os.DirFS(smoke)); err != nil {
		t.Fatal(err)
	}
	moved := loadSmoke(t, dir)
	if moved.Digest != before.Digest || !reflect.DeepEqual(ids(moved), ids(before)) {
		t.Errorf("the same tasks at another path hash differently")
	}
	if !strings.HasPrefix(before.Digest, "sha256:") || len(before.Digest) != 71 {
		t.Errorf("digest %q", before.Digest)
	}
	f := filepath.Join(dir, "sort-names", "tests", "expected.txt")
	if err := os.WriteFile(f, []byte("alice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	after := loadSmoke(t, dir)
	if after.Digest == before.Digest {
		t.Errorf("a changed tests/ file left the dataset digest unchanged")
	}
	a, b := ids(after), ids(before)
	for i := range a {
		changed := a[i] != b[i]
		if changed != (i == 3) {
			t.Errorf("item %d (%s): id changed %v, want only sort-names' to change", i, after.Tasks[i].Name, changed)
		}
	}
}

func ids(ds *Dataset) []string {
	var out []string
	for _, it := range ds.Items() {
		out = append(out, it.ID)
	}
	return out
}

// writeTask writes a task folder with the given files (relative paths).
func writeTask(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadRefuses checks that what nel cannot do, or a task that is not
// whole, is an error naming the task and the reason.
func TestLoadRefuses(t *testing.T) {
	base := map[string]string{"instruction.md": "Do it.", "tests/test.sh": "echo 1 > /logs/verifier/reward.txt"}
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no tests", map[string]string{"instruction.md": "x"}, "task t: its verifier tests/test.sh"},
		{"steps", map[string]string{"task.toml": "[[steps]]\nname = \"a\"\n"}, "task.toml: steps: not supported yet: multi-step tasks"},
		{"separate verifier", map[string]string{"task.toml": "[verifier]\nenvironment_mode = \"separate\"\n"}, "verifier.environment_mode: not supported yet"},
		{"compose", map[string]string{"environment/docker-compose.yaml": "services: {}\n"}, "docker-compose.yaml: not supported yet"},
		{"bad timeout", map[string]string{"task.toml": "[verifier]\ntimeout_sec = -1\n"}, "verifier.timeout_sec: expected seconds above 0"},
		{"bad memory", map[string]string{"task.toml": "[environment]\nmemory = \"lots\"\n"}, `environment.memory: expected a size such as "4G", found "LOTS"`},
		{"toml syntax", map[string]string{"task.toml": "[agent]\ntimeout_sec = \n"}, "task.toml: line 2: expected a value"},
		{"a date", map[string]string{"task.toml": "[task]\ncreated = 2025-01-02\n"}, "line 2: dates and times are not read"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		files := map[string]string{}
		for k, v := range base {
			files[k] = v
		}
		for k, v := range c.files {
			files[k] = v
		}
		if c.name == "no tests" {
			delete(files, "tests/test.sh")
		}
		writeTask(t, filepath.Join(dir, "t"), files)
		_, err := Load(context.Background(), "d", dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "harbor dataset d: task t: ") {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
	// A symbolic link could point out of the sandbox /app is copied to.
	dir := t.TempDir()
	writeTask(t, filepath.Join(dir, "t"), base)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "t", "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(context.Background(), "d", dir); err == nil || !strings.Contains(err.Error(), "link is a symbolic link") {
		t.Errorf("a symlink in a task: error %v", err)
	}
	// A folder without instruction.md is not a task; a dataset of none is
	// an error.
	empty := t.TempDir()
	writeTask(t, filepath.Join(empty, "notes"), map[string]string{"README": "x"})
	if _, err := Load(context.Background(), "d", empty); err == nil || !strings.Contains(err.Error(), "holds no task") {
		t.Errorf("a dataset of no task: error %v", err)
	}
	if _, err := Load(context.Background(), "d", filepath.Join(empty, "missing")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing dataset: error %v", err)
	}
}

// TestLoadPinned: the plan's folder resolves against the recipe's, and
// tasks whose content changed since compile are refused.
func TestLoadPinned(t *testing.T) {
	want := loadSmoke(t, smoke)
	root := t.TempDir()
	copyTo := filepath.Join(root, "harbor_datasets", "nel-smoke")
	if err := os.CopyFS(copyTo, os.DirFS(smoke)); err != nil {
		t.Fatal(err)
	}
	pin := plan.HarborTasks{Dataset: "nel-smoke", Dir: "harbor_datasets/nel-smoke", Digest: want.Digest, Tasks: 5}
	ds, err := LoadPinned(context.Background(), root, pin)
	if err != nil || len(ds.Tasks) != 5 {
		t.Fatalf("LoadPinned: %v", err)
	}
	abs := pin
	abs.Dir = filepath.ToSlash(copyTo)
	if _, err := LoadPinned(context.Background(), "/elsewhere", abs); err != nil {
		t.Errorf("an absolute folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(copyTo, "count-lines", "instruction.md"), []byte("Count the words."), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadPinned(context.Background(), root, pin)
	if err == nil || !strings.Contains(err.Error(), "are not those nel compile hashed ("+want.Digest+")") {
		t.Errorf("edited tasks: error %v", err)
	}
}

func TestAgentBudget(t *testing.T) {
	task := &Task{Config: Config{AgentTimeout: 300 * time.Second}}
	if got := task.AgentBudget(1800 * time.Second); got != 300*time.Second {
		t.Errorf("task shorter: %v", got)
	}
	if got := task.AgentBudget(60 * time.Second); got != 60*time.Second {
		t.Errorf("sample shorter: %v", got)
	}
	if got := (&Task{}).AgentBudget(60 * time.Second); got != 60*time.Second {
		t.Errorf("no task timeout: %v", got)
	}
}
