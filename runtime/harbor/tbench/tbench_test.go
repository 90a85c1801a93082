package tbench

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/plan"
)

// writeTree writes files (slash paths relative to dir) with mode 0644, or
// 0755 for those ending in .sh.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// compose is Terminal-Bench v1's usual docker-compose.yaml: one client
// service built from the task's folder, with the harness's defaults.
const composeYAML = `services:
  client:
    build:
      dockerfile: Dockerfile
    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
    command: [ "sh", "-c", "sleep infinity" ]
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
    volumes:
      - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
      - ${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}
`

// v1Task is a Terminal-Bench v1 task in the repository's layout.
func v1Task() map[string]string {
	return map[string]string{
		"task.yaml": `instruction: |-
  Write "hello" to /app/out.txt.
  Nothing else.
author_name: Ada
author_email: ada@example.com
difficulty: hard
category: system-administration
tags:
  - files
  - "quoted: tag"
parser_name: pytest
max_agent_timeout_sec: 900.0
max_test_timeout_sec: 120
run_tests_in_same_shell: false
`,
		"docker-compose.yaml": composeYAML,
		"Dockerfile":          "FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt /app/\nCOPY tests /opt/tests\n",
		"run-tests.sh":        "#!/bin/bash\nbash $TEST_DIR/check.sh", // no final newline
		"tests/check.sh":      "grep -q hello /app/out.txt\n",
		"solution.sh":         "#!/bin/bash\necho hello > /app/out.txt\n",
		"data.txt":            "some data\n",
		"lib/helper.py":       "print(1)\n",
	}
}

func TestConvert(t *testing.T) {
	src := filepath.Join(t.TempDir(), "hello-file")
	writeTree(t, src, v1Task())
	ds := t.TempDir()
	dst := filepath.Join(ds, "hello-file")
	if err := Convert(src, dst); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, filepath.Join(dst, "instruction.md")), "Write \"hello\" to /app/out.txt.\nNothing else.\n"; got != want {
		t.Errorf("instruction.md = %q, want %q", got, want)
	}
	wantTest := "#!/bin/bash\nbash /tests/check.sh\n" + "\n_EXIT_CODE=$?\nif [ $_EXIT_CODE -eq 0 ]; then\n    echo 1 > /logs/verifier/reward.txt\nelse\n    echo 0 > /logs/verifier/reward.txt\nfi\nexit $_EXIT_CODE\n"
	if got := read(t, filepath.Join(dst, "tests", "test.sh")); got != wantTest {
		t.Errorf("tests/test.sh = %q, want %q", got, wantTest)
	}
	for _, exe := range []string{"tests/test.sh", "solution/solve.sh"} {
		if fi, err := os.Stat(filepath.Join(dst, exe)); err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s: %v, mode %v: want an executable file", exe, err, fi)
		}
	}
	if got := read(t, filepath.Join(dst, "tests", "check.sh")); got != "grep -q hello /app/out.txt\n" {
		t.Errorf("tests/check.sh = %q", got)
	}
	wantDocker := "FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt /app/\nCOPY tests /opt/tests\n\n# Mapped from docker-compose.yaml\nENV TEST_DIR=/tests\n"
	if got := read(t, filepath.Join(dst, "environment", "Dockerfile")); got != wantDocker {
		t.Errorf("environment/Dockerfile = %q, want %q", got, wantDocker)
	}
	// The Dockerfile COPYs tests: they are in its build context too. Every
	// file the conversion did not handle is there; the v1 files are not.
	for _, f := range []string{"environment/tests/check.sh", "environment/data.txt", "environment/lib/helper.py"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, f := range []string{"environment/task.yaml", "environment/run-tests.sh", "environment/docker-compose.yaml", "environment/solution.sh", "task.yaml", "environment/solution"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err == nil {
			t.Errorf("%s: should not be there", f)
		}
	}

	// nel's own Harbor loader reads what the conversion wrote.
	loaded, err := harbor.Load(context.Background(), "tb", ds)
	if err != nil {
		t.Fatal(err)
	}
	c := loaded.Tasks[0].Config
	if c.AgentTimeout != 900*time.Second || c.VerifierTimeout != 120*time.Second {
		t.Errorf("timeouts: agent %v, verifier %v; want 15m0s and 2m0s from max_agent_timeout_sec and max_test_timeout_sec", c.AgentTimeout, c.VerifierTimeout)
	}
	if c.Category() != "system-administration" || c.Metadata["difficulty"] != "hard" || c.Metadata["author_email"] != "ada@example.com" {
		t.Errorf("metadata %v", c.Metadata)
	}
	if tags, _ := c.Metadata["tags"].([]any); len(tags) != 2 || tags[1] != "quoted: tag" {
		t.Errorf("tags %v", c.Metadata["tags"])
	}
	if c.VerifierEnv["TEST_DIR"] != "/tests" {
		t.Errorf("verifier env %v: want TEST_DIR=/tests", c.VerifierEnv)
	}
}

// A task.yaml that says no more than its instruction gets Harbor's
// adapter's defaults.
func TestConvertDefaults(t *testing.T) {
	files := v1Task()
	files["task.yaml"] = "instruction: Do it.\n"
	src := filepath.Join(t.TempDir(), "minimal")
	writeTree(t, src, files)
	ds := t.TempDir()
	if err := Convert(src, filepath.Join(ds, "minimal")); err != nil {
		t.Fatal(err)
	}
	loaded, err := harbor.Load(context.Background(), "tb", ds)
	if err != nil {
		t.Fatal(err)
	}
	c := loaded.Tasks[0].Config
	if c.AgentTimeout != 360*time.Second || c.VerifierTimeout != 60*time.Second {
		t.Errorf("timeouts: agent %v, verifier %v; want 6m0s and 1m0s", c.AgentTimeout, c.VerifierTimeout)
	}
	if c.Category() != "software_engineering" || c.Metadata["difficulty"] != "unknown" || c.Metadata["author_name"] != "unknown" {
		t.Errorf("metadata %v", c.Metadata)
	}
	if got := loaded.Tasks[0].Instruction; got != "Do it." {
		t.Errorf("instruction %q", got)
	}
}

// test.sh writes the status of run-tests.sh's last command as the reward
// (a run-tests.sh that calls exit itself writes none, as in Harbor): run
// it with /logs/verifier moved to a temporary folder.
func TestRewardSuffix(t *testing.T) {
	for _, tc := range []struct {
		body, want string
	}{{"true", "1"}, {"sh -c 'exit 3'", "0"}, {"false", "0"}} {
		files := v1Task()
		files["run-tests.sh"] = "#!/bin/bash\n" + tc.body + "\n"
		src := filepath.Join(t.TempDir(), "task")
		writeTree(t, src, files)
		dst := filepath.Join(t.TempDir(), "task")
		if err := Convert(src, dst); err != nil {
			t.Fatal(err)
		}
		logs := t.TempDir()
		script := strings.ReplaceAll(read(t, filepath.Join(dst, "tests", "test.sh")), "/logs/verifier", logs)
		if out, err := exec.Command("bash", "-c", script).CombinedOutput(); err != nil && tc.want == "1" {
			t.Errorf("%s: %v", out, err)
		}
		if got := strings.TrimSpace(read(t, filepath.Join(logs, "reward.txt"))); got != tc.want {
			t.Errorf("run-tests.sh %q: reward %q, want %q", tc.body, got, tc.want)
		}
	}
}

// What the compose file says of the one container goes into the
// Dockerfile; a build context other than the task's folder is the
// environment.
func TestConvertCompose(t *testing.T) {
	files := v1Task()
	delete(files, "Dockerfile")
	files["docker-compose.yaml"] = `services:
  client:
    build: ./image
    platform: linux/amd64
    working_dir: /app
    expose: [8080]
    entrypoint: ["/bin/sh", "-c"]
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
      - MODE=fast
`
	files["image/Dockerfile"] = "FROM python:3.12\nCOPY solution.sh /sol.sh\n"
	files["image/req.txt"] = "numpy\n"
	src := filepath.Join(t.TempDir(), "svc")
	writeTree(t, src, files)
	dst := filepath.Join(t.TempDir(), "svc")
	if err := Convert(src, dst); err != nil {
		t.Fatal(err)
	}
	want := "FROM --platform=linux/amd64 python:3.12\nCOPY solution.sh /sol.sh\n\n# Mapped from docker-compose.yaml\nENV TEST_DIR=/tests\nENV MODE=fast\nWORKDIR /app\nEXPOSE 8080\nENTRYPOINT [\"/bin/sh\",\"-c\"]\n"
	if got := read(t, filepath.Join(dst, "environment", "Dockerfile")); got != want {
		t.Errorf("Dockerfile = %q, want %q", got, want)
	}
	for _, f := range []string{"environment/req.txt", "environment/solution.sh"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "environment", "image")); err == nil {
		t.Error("environment/image: the build context's folder is the environment, not copied into it")
	}
}

// What nel cannot run, or Harbor's adapter does not take, is an error
// naming the task and the file.
func TestConvertRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(map[string]string)
		want string
	}{
		{"two-services", func(f map[string]string) {
			f["docker-compose.yaml"] = composeYAML + "  db:\n    image: postgres:16\n"
		}, "task two-services: docker-compose.yaml: not supported yet: a task of several containers or compose settings (2 services)"},
		{"net", func(f map[string]string) { f["docker-compose.yaml"] = composeYAML + "networks:\n  x: {}\n" }, "(top-level networks)"},
		{"vol", func(f map[string]string) {
			f["docker-compose.yaml"] = strings.Replace(composeYAML, "volumes:\n", "volumes:\n      - /data:/data\n", 1)
		}, "(volume /data:/data)"},
		{"soly", func(f map[string]string) { f["solution.yaml"] = "- command: ls\n" }, "task soly: solution.yaml: not supported"},
		{"noinstr", func(f map[string]string) { f["task.yaml"] = "difficulty: easy\n" }, "task noinstr: task.yaml: no instruction"},
		{"notests", func(f map[string]string) { delete(f, "run-tests.sh") }, "run-tests.sh: no such file"},
		{"badyaml", func(f map[string]string) { f["task.yaml"] = "instruction: [unclosed\n" }, "task badyaml: task.yaml: yaml:"},
	} {
		files := v1Task()
		tc.edit(files)
		src := filepath.Join(t.TempDir(), tc.name)
		writeTree(t, src, files)
		err := Convert(src, filepath.Join(t.TempDir(), tc.name))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestConvertAll(t *testing.T) {
	repo := t.TempDir()
	writeTree(t, filepath.Join(repo, "original-tasks", "b-task"), v1Task())
	writeTree(t, filepath.Join(repo, "original-tasks", "a-task"), v1Task())
	two := v1Task()
	two["docker-compose.yaml"] = composeYAML + "  db:\n    image: postgres:16\n"
	writeTree(t, filepath.Join(repo, "original-tasks", "c-two"), two)
	writeTree(t, filepath.Join(repo, "original-tasks", "notatask"), map[string]string{"README": "x"})

	dst := t.TempDir()
	res, err := ConvertAll(context.Background(), repo, dst, plan.HarborGit{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Converted, ",") != "a-task,b-task" || len(res.Skipped) != 1 || res.Skipped["c-two"] == nil {
		t.Errorf("converted %v, skipped %v", res.Converted, res.Skipped)
	}
	if _, err := os.Stat(filepath.Join(dst, "c-two")); err == nil {
		t.Error("a task that did not convert left a folder")
	}

	// A subset, split into solvable and unsolvable tasks (the AA split).
	sub := t.TempDir()
	only, err := ConvertAll(context.Background(), repo, sub, plan.HarborGit{Tasks: []string{"b-task", "a-task"}, Unsolvable: []string{"b-task"}})
	if err != nil || strings.Join(only.Converted, ",") != "a-task,b-task" {
		t.Errorf("only a-task and b-task: %v, %v", only, err)
	}
	if loaded, err := harbor.Load(context.Background(), "sub", sub); err != nil || loaded.Tasks[0].Config.Category() != "solvable" || loaded.Tasks[1].Config.Category() != "unsolvable" {
		t.Errorf("categories: %v", err)
	}
	_, err = ConvertAll(context.Background(), repo, t.TempDir(), plan.HarborGit{Tasks: []string{"b-task", "gone", "also-gone"}})
	if err == nil || !strings.Contains(err.Error(), "2 of the benchmark's tasks are not in the repository at this revision: gone, also-gone") {
		t.Errorf("missing tasks: %v", err)
	}
	_, err = ConvertAll(context.Background(), t.TempDir(), t.TempDir(), plan.HarborGit{})
	if err == nil || !strings.Contains(err.Error(), "no Terminal-Bench v1 task") {
		t.Errorf("an empty repository: %v", err)
	}
	// An empty list (a plan's "tasks": []) selects no task: an error,
	// not an index out of range.
	_, err = ConvertAll(context.Background(), repo, t.TempDir(), plan.HarborGit{Tasks: []string{}})
	if err == nil || !strings.Contains(err.Error(), "no task to convert") {
		t.Errorf("an empty task list: %v", err)
	}
}

func TestLookup(t *testing.T) {
	for name, n := range map[string][2]int{"terminal-bench-hard": {47, 0}, "terminal-bench-hard-aa-split": {44, 4}} {
		b, ok := Lookup(name)
		if !ok || len(b.Tasks) != n[0] || len(b.Unsolvable) != n[1] {
			t.Errorf("%s: %d tasks, %d unsolvable; want %v", name, len(b.Tasks), len(b.Unsolvable), n)
		}
		for _, u := range b.Unsolvable {
			if !slices.Contains(b.Tasks, u) {
				t.Errorf("%s: unsolvable %s is not one of its tasks", name, u)
			}
		}
	}
	if b, ok := Lookup("terminal-bench-v1"); !ok || b.Tasks != nil {
		t.Errorf("terminal-bench-v1: %+v %v: want every task", b, ok)
	}
	if _, ok := Lookup("nmp_harbor"); ok {
		t.Error("nmp_harbor is no Terminal-Bench v1 benchmark")
	}
}

// Compose's environment in both forms: a variable with no value passes
// through from compose's shell and has no ENV line; a value Docker would
// split or expand is quoted; a line break cannot be written at all.
func TestConvertComposeEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, env, want, err string
	}{
		{"map", "    environment:\n      MODE: fast\n      PASSED:\n      GREETING: hello world\n      PRICE: cost $5\n",
			"ENV GREETING=\"hello world\"\nENV MODE=fast\nENV PRICE=\"cost \\$5\"\n", ""},
		{"list", "    environment:\n      - PASSED\n      - EMPTY=\n      - Q=say \"hi\" \\ bye\n",
			"ENV EMPTY=\"\"\nENV Q=\"say \\\"hi\\\" \\\\ bye\"\n", ""},
		{"line break", "    environment:\n      NOTE: \"a\\nb\"\n", "", "environment NOTE: a value with a line break"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := v1Task()
			delete(files, "Dockerfile")
			files["docker-compose.yaml"] = "services:\n  client:\n    build: ./image\n" + tc.env
			files["image/Dockerfile"] = "FROM python:3.12\n"
			src := filepath.Join(t.TempDir(), "svc")
			writeTree(t, src, files)
			dst := filepath.Join(t.TempDir(), "svc")
			err := Convert(src, dst)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "docker-compose.yaml") {
					t.Fatalf("err = %v, want one naming docker-compose.yaml and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := "FROM python:3.12\n\n# Mapped from docker-compose.yaml\nENV TEST_DIR=/tests\n" + tc.want
			if got := read(t, filepath.Join(dst, "environment", "Dockerfile")); got != want {
				t.Errorf("Dockerfile = %q, want %q", got, want)
			}
		})
	}
}

// TOML has no "+Inf" or "NaN": its special floats are inf, -inf and nan.
func TestTomlFloat(t *testing.T) {
	for v, want := range map[float64]string{
		1800: "1800.0", 0.5: "0.5", 1e21: "1e+21", math.Inf(1): "inf", math.Inf(-1): "-inf", math.NaN(): "nan",
	} {
		if got := tomlFloat(v); got != want {
			t.Errorf("tomlFloat(%v) = %q, want %q", v, got, want)
		}
	}
}
