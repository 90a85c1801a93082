package shard_test

import (
	"github.com/nel-eval/nel/internal/sharedtest"
	"github.com/nel-eval/nel/internal/testenv"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/sandbox"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// writeHumanEval writes n small HumanEval-shaped problems (add i to x).
func writeHumanEval(t testing.TB, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		name := fmt.Sprintf("add_%d", i)
		line, _ := json.Marshal(map[string]string{
			"task_id":            fmt.Sprintf("Synthetic/%d", i),
			"prompt":             fmt.Sprintf("def %s(x: int) -> int:\n    \"\"\"Return x + %d.\"\"\"\n", name, i),
			"canonical_solution": fmt.Sprintf("    return x + %d\n", i),
			"test":               fmt.Sprintf("def check(candidate):\n    assert candidate(1) == %d\n    assert candidate(-5) == %d\n", 1+i, i-5),
			"entry_point":        name,
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, "humaneval.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hePlan is a plan with one humaneval benchmark (sandbox sb) answered by
// the simulated endpoint at url.
func hePlan(url, data string, sb *plan.Sandbox, shards int) *plan.Plan {
	zero := 0.0
	return &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "test", ScoringVersion: "1",
		RecipeHash: "sha256:recipe", PlanHash: fmt.Sprintf("sha256:he-%d", shards),
		OutputDir: "unused", Shards: shards,
		Services: []plan.Service{{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: url + "/v1/chat/completions"}},
		Benchmarks: []plan.Benchmark{{
			Key: "humaneval", Name: "humaneval", Dir: "humaneval", Hash: "sha256:bench",
			Solver:  plan.Solver{Type: "simple", Service: "sim", Generation: plan.Generation{Temperature: &zero}},
			Repeats: 1, MaxConcurrent: 8, Timeout: 120,
			Params:  map[string]any{"data_path": data},
			Sandbox: sb,
		}},
	}
}

// runHumanEval runs every shard of p and merges; it returns the merged rows
// and the benchmark's bundle.
func runHumanEval(t testing.TB, p *plan.Plan, out string) ([]results.Row, *metrics.Bundle) {
	t.Helper()
	for i := range p.Shards {
		if _, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "humaneval", Shard: i, Of: p.Shards, OutDir: out, NelVersion: "test"}); err != nil {
			t.Fatalf("shard %d/%d: %v", i, p.Shards, err)
		}
	}
	sums, err := merge.Merge(merge.Options{Plan: p, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 {
		t.Fatalf("summaries: %+v", sums)
	}
	rows, _, err := results.ReadRows(filepath.Join(out, "humaneval", "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return rows, sums[0].Bundle
}

// A benchmark that runs code with no sandbox in its plan fails at shard
// start, naming the recipe field, before anything is written.
func TestSandboxRequired(t *testing.T) {
	dir := t.TempDir()
	data := writeHumanEval(t, dir, 3)
	p := hePlan("http://127.0.0.1:9", data, nil, 1)
	// Put it second, so the message has to find its index.
	p.Benchmarks = append([]plan.Benchmark{{Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Solver: plan.Solver{Type: "simple", Service: "sim"}}}, p.Benchmarks...)
	for _, sb := range []*plan.Sandbox{nil, {Type: "none"}} {
		p.Benchmarks[1].Sandbox = sb
		out := filepath.Join(dir, "out")
		_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "humaneval", Shard: 0, Of: 1, OutDir: out})
		if err == nil || !strings.Contains(err.Error(), "benchmarks[1].sandbox") || !strings.Contains(err.Error(), "needs a sandbox") {
			t.Errorf("sandbox %+v: err = %v, want one naming benchmarks[1].sandbox", sb, err)
		}
		if _, err := os.Stat(filepath.Join(out, "humaneval")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("sandbox %+v: output written (%v)", sb, err)
		}
	}
}

// A bad size in the plan's sandbox fails at shard start, naming the field.
func TestSandboxBadSize(t *testing.T) {
	dir := t.TempDir()
	data := writeHumanEval(t, dir, 2)
	p := hePlan("http://127.0.0.1:9", data, &plan.Sandbox{Type: "local", Memory: "lots"}, 1)
	_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "humaneval", Shard: 0, Of: 1, OutDir: filepath.Join(dir, "out")})
	if err == nil || !strings.Contains(err.Error(), `benchmarks[0].sandbox: memory: want a size such as 512m or 4g, found "lots"`) {
		t.Errorf("err = %v", err)
	}
}

// The bad input: a sandbox engine that cannot run here (a docker
// sandbox without a daemon). The shard does not fail: every sample is a
// sandbox_error row, an infrastructure failure with no verdict, and the
// report says how many.
func TestSandboxUnavailable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	dir := t.TempDir()
	const n = 6
	data := writeHumanEval(t, dir, n)
	srv := simServer(t, sim.Config{Accuracy: 1, Seed: 3}, "humaneval", data)
	p := hePlan(srv.URL, data, &plan.Sandbox{Type: "docker", Image: "python:3.12-slim", Timeout: 60, Concurrency: 2}, 2)
	rows, bundle := runHumanEval(t, p, filepath.Join(dir, "out"))
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	for _, r := range rows {
		// No verdict: an infrastructure failure, not a wrong answer.
		if r.ErrorCategory != "sandbox_error" || r.Outcome != "infra_error" || r.Reward != 0 || r.Correct != nil || r.Extracted == "" || r.ErrorMessage == "" {
			t.Errorf("row %s: category %q outcome %q reward %v correct %v extracted %q message %q", r.ItemID, r.ErrorCategory, r.Outcome, r.Reward, r.Correct, r.Extracted, r.ErrorMessage)
		}
	}
	// Not the model's failures: the benchmark has no verdict at all.
	if f := bundle.Failures; f.Failed != 0 {
		t.Errorf("model failures: %+v, want none", f)
	}
	v := bundle.Validity
	if !v.Invalid || v.InfraErrors != n || len(v.Classes) != 1 || v.Classes[0].Category != "sandbox_error" || v.Classes[0].Count != n {
		t.Errorf("validity: %+v, want INVALID with %d sandbox_error", v, n)
	}
	// (What the reports say of it is analysis/report's to test.)
	if !strings.Contains(v.Reason, "6 of 6 samples (100%) failed for infrastructure reasons (sandbox_error 6)") {
		t.Errorf("validity reason: %q", v.Reason)
	}
}

// realHumanEval is the real dataset, or a skip.
func realHumanEval(t *testing.T) string {
	return sharedtest.Datasets(t, "humaneval", "HumanEval.jsonl.gz")
}

// The acceptance: with the simulated endpoint answering the
// canonical solutions, all 164 problems pass in the local sandbox; with
// each body replaced by `pass`, none do, and no row is an infrastructure
// failure (a failing program is the model's failure).
func TestSandboxLocalHumanEval(t *testing.T) {
	data := realHumanEval(t)
	if sb, err := sandbox.Open(context.Background(), sandbox.Config{Type: "local"}); err != nil {
		testenv.Missing(t, testenv.LocalSandbox, err.Error())
	} else {
		sb.Close()
	}
	dir := t.TempDir()
	for _, acc := range []float64{1, 0} {
		// (The simulator reads Accuracy 0 as its default, 1.)
		srv := simServer(t, sim.Config{Accuracy: max(acc, 1e-12), Seed: 5}, "humaneval", data)
		p := hePlan(srv.URL, data, &plan.Sandbox{Type: "local", Timeout: 60, Concurrency: 2, Memory: "2g"}, 2)
		rows, bundle := runHumanEval(t, p, filepath.Join(dir, fmt.Sprint("out", acc)))
		if len(rows) != 164 {
			t.Fatalf("accuracy %v: %d rows", acc, len(rows))
		}
		correct := 0
		for _, r := range rows {
			if r.Correct != nil && *r.Correct {
				correct++
			}
			if r.ErrorCategory != "" {
				t.Errorf("accuracy %v: row %s has error category %q", acc, r.ItemID, r.ErrorCategory)
			}
		}
		if want := int(acc * 164); correct != want {
			t.Errorf("accuracy %v: %d of 164 passed, want %d", acc, correct, want)
		}
		if h := bundle.Headline; h.Metric != "pass@1" || h.Value == nil || *h.Value != acc {
			t.Errorf("accuracy %v: headline %+v", acc, h)
		}
	}
}
