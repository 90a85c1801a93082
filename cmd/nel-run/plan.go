package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
)

// readPlan reads the compiled plan at path. When $NEL_PLAN_SHA256 is set
// (the compiled scripts export it) the file must have that sha256: a plan
// edited after compilation is refused.
func readPlan(path string) (*plan.Plan, error) {
	if want := os.Getenv("NEL_PLAN_SHA256"); want != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read plan: %w", err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("plan %s has sha256 %s, but this job was compiled for %s ($NEL_PLAN_SHA256): the plan was changed after compilation; recompile the recipe", path, got, want)
		}
	}
	return plan.Read(path)
}

// outDir is where a plan's results go: --out when given, else the directory
// holding the plan's .nel folder (the compiled scripts put the plan at
// <output>/.nel/plan-*.json), else the plan's output.dir.
func outDir(planPath, flagOut string, p *plan.Plan) string {
	if flagOut != "" {
		return flagOut
	}
	if d, ok := rundir.OfPlan(planPath); ok {
		return string(d)
	}
	return p.OutputDir
}

// keepPlan copies the plan read from planPath, byte for byte, into run
// folder dir's .nel, where nel status and nel-run merge DIR look for a
// run's plan, when it came from elsewhere (-t k8s mounts it from a
// ConfigMap); a plan already there is left as it is.
func keepPlan(planPath, dir string, p *plan.Plan) error {
	d := rundir.Dir(dir)
	if from, ok := rundir.OfPlan(planPath); ok && samePath(string(from), dir) {
		return nil // already the run folder's, under whatever name
	}
	dst := d.Plan(p.PlanHash)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(planPath)
	if err != nil {
		return fmt.Errorf("keep plan: %w", err)
	}
	if err := os.MkdirAll(d.Meta(), 0o755); err != nil {
		return fmt.Errorf("keep plan: %w", err)
	}
	if err := atomicfile.WriteFile(dst, b); err != nil {
		return fmt.Errorf("keep plan: %w", err)
	}
	return nil
}

// samePath reports whether a and b name one folder (cleaned, absolute).
func samePath(a, b string) bool {
	a, errA := filepath.Abs(a)
	b, errB := filepath.Abs(b)
	return errA == nil && errB == nil && a == b
}

// planBenchFlags are the flags of a command that works on one benchmark
// of a compiled plan (ingest, harbor-tasks).
type planBenchFlags struct {
	plan, benchmark, out string
}

func (b *planBenchFlags) add(f *pflag.FlagSet) {
	f.StringVar(&b.plan, "plan", "", "compiled plan `FILE` (required)")
	f.StringVar(&b.benchmark, "benchmark", "", "benchmark `NAME` in the plan (required)")
	f.StringVar(&b.out, "out", "", "output `DIR` (default: the folder holding the plan's .nel folder)")
}

// missing is the usage error of a required flag left out; "" when none is.
func (b *planBenchFlags) missing() string {
	switch {
	case b.plan == "":
		return "--plan is required"
	case b.benchmark == "":
		return "--benchmark is required"
	}
	return ""
}

// load reads the plan and finds the benchmark in it.
func (b *planBenchFlags) load() (*plan.Plan, *plan.Benchmark, error) {
	p, err := readPlan(b.plan)
	if err != nil {
		return nil, nil, err
	}
	bench, ok := p.Benchmark(b.benchmark)
	if !ok {
		return nil, nil, fmt.Errorf("benchmark %q is not in the plan", b.benchmark)
	}
	return p, bench, nil
}
