package compiler_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"

	"github.com/nel-eval/nel/compiler"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	goldenNelRun = "/opt/nel/bin/nel-run"
	goldenSHA256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	goldenDir    = "testdata/golden" // relative to the repository root
)

// compilable lists the examples that compile, relative to the repository
// root: every examples/*.cue plus the NeMo SLURM example and the agentic
// ones (in a folder of their own, beside the Harbor tasks of one; the
// other the terminal_bench_2 playbook, run by the Harbor CLI).
func compilable(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("examples/*.cue")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "examples/nemo/15_slurm_gsm8k_vllm.yaml", "examples/agentic/terminal_bench_slurm.yaml", "examples/agentic/terminal_bench_proxy_slurm.yaml", "examples/agentic/harbor_local.cue", "examples/agentic/harbor_slurm_pool.cue", "examples/agentic/harbor_apptainer_pool.cue", "examples/agentic/swe_items.cue", "examples/launcher/slurm_judge_dp.yaml")
	if len(files) < 2 {
		t.Fatalf("found no examples in %s", mustGetwd(t))
	}
	return files
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// goldenName is the golden file of an example for a target.
func goldenName(example, target string) string {
	base := strings.TrimSuffix(filepath.Base(example), filepath.Ext(example))
	ext := ".slurm.sh"
	if target == "make" {
		ext = ".mk"
	}
	return filepath.Join(goldenDir, base+ext)
}

func compileFile(t *testing.T, example, target string) ([]byte, error) {
	t.Helper()
	l, err := compiler.NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.LoadFile(example, nil)
	if err != nil {
		t.Fatalf("load %s: %v", example, err)
	}
	return compiler.Compile(s, compiler.CompileOptions{
		Target:       target,
		NelVersion:   "test",
		NelRun:       goldenNelRun,
		NelRunSHA256: goldenSHA256,
		Reproduce:    "nel compile -t " + target + " " + example,
	})
}

// TestGolden compiles every compilable example and compares the job with
// testdata/golden at the repository root (go test -run Golden -update
// rewrites them). The sbatch scripts must pass bash -n and shellcheck, the
// Makefiles must parse.
func TestGolden(t *testing.T) {
	t.Chdir("..") // the repository root: recipe paths in the output are relative to it
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, ex := range compilable(t) {
		for _, target := range []string{"slurm", "make"} {
			t.Run(filepath.Base(ex)+"/"+target, func(t *testing.T) {
				got, err := compileFile(t, ex, target)
				if err != nil {
					var errs compiler.Errors
					if target == "make" && errors.As(err, &errs) {
						t.Skipf("not compilable for make: %v", err)
					}
					t.Fatalf("compile: %v", err)
				}
				golden := goldenName(ex, target)
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
				} else {
					want, err := os.ReadFile(golden)
					if err != nil {
						t.Fatalf("%v (run go test ./compiler -run Golden -update)", err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s differs from the compiled job (run go test ./compiler -run Golden -update and review the diff):\n%s",
							golden, firstDiff(want, got))
					}
				}
				// The same recipe loaded and compiled again in this process
				// gives the same bytes (map iteration order is random).
				for range 3 {
					again, err := compileFile(t, ex, target)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, again) {
						t.Fatalf("second compile in one process differs:\n%s", firstDiff(got, again))
					}
				}
				if target == "slurm" {
					checkScript(t, golden, got)
				} else {
					checkMakefile(t, golden, got)
				}
			})
		}
	}
}

func checkScript(t *testing.T, name string, script []byte) {
	t.Helper()
	f := filepath.Join(t.TempDir(), filepath.Base(name))
	if err := os.WriteFile(f, script, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
		t.Errorf("bash -n %s: %v\n%s", name, err, out)
	}
	sc := testenv.LookPath(t, testenv.Shellcheck)
	if out, err := exec.Command(sc, "-s", "bash", "-S", "style", f).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("shellcheck -s bash -S style %s: %v\n%s", name, err, out)
	}
}

func checkMakefile(t *testing.T, name string, mk []byte) {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, filepath.Base(name))
	if err := os.WriteFile(f, mk, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-f", f, "-n", "--dry-run", "NEL_RUN=true", "clean-shards")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("make -n clean-shards with %s: %v\n%s", name, err, out)
	}
}

// TestDeterminism compiles every example with two separate nel processes
// and requires byte-identical output.
func TestDeterminism(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nel")
	}
	t.Chdir("..")
	nel := filepath.Join(t.TempDir(), "nel")
	if out, err := exec.Command("go", "build", "-o", nel, "./cmd/nel").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/nel: %v\n%s", err, out)
	}
	nelRun := filepath.Join(t.TempDir(), "nel-run")
	if err := os.WriteFile(nelRun, []byte("#!/bin/sh\necho fake\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(nel, args...)
		cmd.Env = append(os.Environ(), "NEL_RUN="+nelRun)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, errors.New(err.Error() + ": " + stderr.String())
		}
		return out, nil
	}
	for _, ex := range compilable(t) {
		for _, target := range []string{"slurm", "make"} {
			t.Run(filepath.Base(ex)+"/"+target, func(t *testing.T) {
				a, err := run("compile", "-t", target, ex)
				if err != nil && target == "make" {
					// Some recipes need SLURM (a slurm sandbox pool): the
					// refusal must be deterministic too.
					_, err2 := run("compile", "-t", target, ex)
					if err2 == nil || err2.Error() != err.Error() {
						t.Fatalf("refused once with %v, then %v", err, err2)
					}
					t.Skipf("not compilable for make: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				b, err := run("compile", "-t", target, ex)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("two nel processes compiled %s differently:\n%s", ex, firstDiff(a, b))
				}
			})
		}
	}
}

// firstDiff shows the first differing line of a and b.
func firstDiff(a, b []byte) string {
	al := strings.Split(string(a), "\n")
	bl := strings.Split(string(b), "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y || i >= len(al) || i >= len(bl) {
			return "line " + strconv.Itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return "(equal)"
}
