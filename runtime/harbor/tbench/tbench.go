// Package tbench converts Terminal-Bench v1 tasks into Harbor's task
// format, by the rules Harbor's own Terminal-Bench adapter follows (NeMo
// Evaluator's terminal-bench-v1 runs that adapter), so that nel-run runs
// them as it runs harbor:// tasks.
//
// A v1 task is a folder with task.yaml (the instruction, metadata, the
// agent's and the tests' time limits), docker-compose.yaml and its
// Dockerfile, run-tests.sh, tests/ and maybe solution.sh. Its Harbor form
// has instruction.md, task.toml, environment/ (the Dockerfile and every
// other file of the task), tests/ with test.sh (run-tests.sh writing the
// reward) and solution/solve.sh.
package tbench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Harbor's adapter's defaults for what a task.yaml leaves out.
const (
	defaultAgentTimeout = 360.0 // seconds
	defaultTestTimeout  = 60.0  // seconds
	defaultCategory     = "software_engineering"
	unknown             = "unknown"
)

// rewardSuffix ends test.sh: run-tests.sh's exit status becomes the
// reward Harbor's verifier reads (0 passes: 1; anything else: 0).
const rewardSuffix = `
_EXIT_CODE=$?
if [ $_EXIT_CODE -eq 0 ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
exit $_EXIT_CODE
`

// taskYAML is what the conversion reads of a v1 task.yaml; other fields
// (parser_name, run_tests_in_same_shell…) have no Harbor counterpart.
type taskYAML struct {
	Instruction           *string  `yaml:"instruction"`
	AuthorName            string   `yaml:"author_name"`
	AuthorEmail           string   `yaml:"author_email"`
	Difficulty            string   `yaml:"difficulty"`
	Category              string   `yaml:"category"`
	Tags                  []string `yaml:"tags"`
	EstimatedDurationSec  *float64 `yaml:"estimated_duration_sec"`
	ExpertTimeEstimateMin *float64 `yaml:"expert_time_estimate_min"`
	JuniorTimeEstimateMin *float64 `yaml:"junior_time_estimate_min"`
	MaxAgentTimeoutSec    *float64 `yaml:"max_agent_timeout_sec"`
	MaxTestTimeoutSec     *float64 `yaml:"max_test_timeout_sec"`
}

// Convert writes the Harbor form of the v1 task in src to dst, which must
// not exist. An error names the task and the file, and says what nel
// cannot run (a task of several containers) as "not supported yet".
func Convert(src, dst string) error { return convertAs(src, dst, "") }

// convertAs is Convert with the task's category set to category, unless
// "" (a benchmark's own split of its tasks).
func convertAs(src, dst, category string) error {
	name := filepath.Base(src)
	if err := convert(src, dst, category); err != nil {
		return fmt.Errorf("task %s: %w", name, err)
	}
	return nil
}

func convert(src, dst, category string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s exists already", dst)
	}
	if _, err := os.Stat(filepath.Join(src, "solution.yaml")); err == nil {
		return errors.New("solution.yaml: not supported (Harbor's adapter takes solution.sh only)")
	}
	cfg, err := readTaskYAML(filepath.Join(src, "task.yaml"))
	if err != nil {
		return err
	}
	if category != "" {
		cfg.Category = category
	}
	env := filepath.Join(dst, "environment")
	tests := filepath.Join(dst, "tests")
	for _, d := range []string{env, tests} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	handled, err := environment(src, env)
	if err != nil {
		return err
	}
	for _, h := range []string{"task.yaml", "solution.sh", "run-tests.sh", "tests"} {
		handled[h] = true
	}
	if err := solution(src, dst); err != nil {
		return err
	}
	if err := testScript(src, tests); err != nil {
		return err
	}
	if err := copyRest(src, env, handled); err != nil {
		return err
	}
	instr := *cfg.Instruction
	if !strings.HasSuffix(instr, "\n") {
		instr += "\n"
	}
	if err := os.WriteFile(filepath.Join(dst, "instruction.md"), []byte(instr), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, "task.toml"), []byte(cfg.toml()), 0o644)
}

func readTaskYAML(path string) (*taskYAML, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t taskYAML
	if err := yaml.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("task.yaml: %w", err)
	}
	if t.Instruction == nil {
		return nil, errors.New("task.yaml: no instruction")
	}
	return &t, nil
}

// solution copies solution.sh, when there is one, to solution/solve.sh,
// executable: the oracle agent's script.
func solution(src, dst string) error {
	b, err := os.ReadFile(filepath.Join(src, "solution.sh"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dst, "solution"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, "solution", "solve.sh"), b, 0o755)
}

// testScript copies tests/ and makes tests/test.sh of run-tests.sh: its
// exit status written as the reward, and $TEST_DIR (Terminal-Bench's
// variable for where the tests are) spelt /tests, where Harbor puts them.
func testScript(src, tests string) error {
	if err := copyTree(filepath.Join(src, "tests"), tests); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b, err := os.ReadFile(filepath.Join(src, "run-tests.sh"))
	if err != nil {
		return err
	}
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	s = strings.ReplaceAll(s+rewardSuffix, "$TEST_DIR", "/tests")
	return os.WriteFile(filepath.Join(tests, "test.sh"), []byte(s), 0o755)
}

// copyRest copies every file of the task whose first path element the
// conversion has not handled into environment/, where the Dockerfile's
// build context is.
func copyRest(src, env string, handled map[string]bool) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if handled[e.Name()] {
			continue
		}
		if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(env, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the file or folder src to dst, keeping each file's mode
// bits. A symbolic link is refused: nel's Harbor loader refuses them too
// (its target is no content a task's digest covers).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link; a task's files must be regular files", path)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", path)
		}
		return copyFile(path, to)
	})
}

func copyFile(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, fi.Mode().Perm())
}
