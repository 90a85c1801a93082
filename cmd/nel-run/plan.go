package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

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
