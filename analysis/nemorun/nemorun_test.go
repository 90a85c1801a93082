package nemorun

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/failure"
)

// writeBench writes a NeMo Evaluator benchmark folder: a bundle named as
// NeMo names it (eval-<timestamp>-<name>.json, the fields of facts §5.2)
// and results.jsonl with the given lines (the fields of §5.3).
func writeBench(t *testing.T, dir, name, shard string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bundle := fmt.Sprintf(`{"run_id": "eval-20260402T120000Z-%[1]s", "config_hash": "sha256:abc123", "sdk_version": "0.4.0",
  "timestamp": "2026-04-02T12:00:00+00:00",
  "config": {"benchmark": %[1]q, "model": "org/model-a", "base_url": "http://127.0.0.1:4000", "repeats": 2, "max_problems": null%[2]s},
  "benchmark": {"name": %[1]q, "samples": 3, "repeats": 2,
    "scores": {"pass@1": {"value": 0.4, "bootstrap_ci_lower": 0.0, "bootstrap_ci_upper": 1.0}, "pass@2": {"value": 0.6}}},
  "n_results": 6}`, name, shard)
	if err := os.WriteFile(filepath.Join(dir, "eval-20260402T120000Z-"+name+".json"), []byte(bundle), 0o644); err != nil {
		t.Fatal(err)
	}
	if lines == nil {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func row(idx, rep int, reward float64, expected, extra string) string {
	return fmt.Sprintf(`{"problem_idx": %d, "repeat": %d, "reward": %g, "scorer_rewards": {}, "prompt": "p", "model_response": "r", "extracted_answer": "x", "expected_answer": %q, "scoring_details": {"method": "exact"%s}, "metadata": {"category": "c%d"}, "tokens": 12, "latency_ms": 3.5}`,
		idx, rep, reward, expected, extra, idx%2)
}

// Three problems, two repeats, written in completion order, with a
// duplicate (problem 0 repeat 1 written twice: the later row wins, as
// NeMo's own merge keeps it) and one infrastructure failure. nel's pass@1
// by hand: problem 0 {1, 1} → 1, problem 1 {0, 1} → 0.5, problem 2 {0}
// (its infra_error repeat is not scored) → 0; mean 0.5. NeMo's own
// bundle says 0.4 (it would score the failure as 0): that is a note.
func TestReadBenchmark(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gsm8k")
	writeBench(t, dir, "gsm8k", "",
		row(1, 0, 0, "7", ""),
		row(0, 1, 0, "18", ""),
		row(0, 0, 1, "18", ""),
		row(2, 0, 0, "3", `, "error_category": "infra_error", "error": "connection refused"`),
		row(1, 1, 1, "7", ""),
		row(2, 1, 0, "3", ""),
		row(0, 1, 1, "18", ""),
	)
	if !Is(dir) || !Is(filepath.Dir(dir)) {
		t.Fatalf("Is: the benchmark folder and its run folder are NeMo runs")
	}
	runs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	r := runs[0]
	if r.Name != "gsm8k" || r.Model != "org/model-a" || r.ConfigHash != "sha256:abc123" || r.Repeats != 2 {
		t.Errorf("run %q model %q hash %q repeats %d", r.Name, r.Model, r.ConfigHash, r.Repeats)
	}
	if len(r.Rows) != 6 {
		t.Fatalf("%d rows, want 6 (the duplicate replaced)", len(r.Rows))
	}
	wantOrder := []string{"nemo:0/0", "nemo:0/1", "nemo:1/0", "nemo:1/1", "nemo:2/0", "nemo:2/1"}
	for i, w := range wantOrder {
		if got := fmt.Sprintf("%s/%d", r.Rows[i].ItemID, r.Rows[i].Repeat); got != w {
			t.Errorf("row %d is %s, want %s", i, got, w)
		}
	}
	if r.Rows[1].Reward != 1 {
		t.Errorf("problem 0 repeat 1: reward %v, want the later row's 1", r.Rows[1].Reward)
	}
	f := r.Rows[4]
	if f.ErrorCategory != "infra_error" || f.Outcome != string(failure.InfraError) || f.ErrorMessage != "connection refused" {
		t.Errorf("failed row: category %q outcome %q message %q", f.ErrorCategory, f.Outcome, f.ErrorMessage)
	}
	if r.Rows[2].Category != "c1" || r.Rows[2].Expected != "7" || r.Rows[2].Benchmark != "gsm8k" || r.Rows[2].ItemIdx != 1 {
		t.Errorf("row 2: %+v", r.Rows[2])
	}
	b := r.Bundle
	if b.Headline.Metric != "pass@1" || b.Headline.Value == nil || *b.Headline.Value != 0.5 {
		t.Errorf("headline %s = %v, want pass@1 = 0.5", b.Headline.Metric, b.Headline.Value)
	}
	if b.Provenance.RecipeHash != "nemo-config:sha256:abc123" || b.Provenance.Model != "org/model-a" {
		t.Errorf("provenance %+v", b.Provenance)
	}
	notes := strings.Join(b.Notes, "\n")
	for _, want := range []string{"a NeMo Evaluator run (" + dir + ", 0.4.0)", "config_hash", "NeMo Evaluator's own bundle reports pass@1 = 0.4000"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

func TestReadRunFolderAndFile(t *testing.T) {
	out := t.TempDir()
	writeBench(t, filepath.Join(out, "mmlu"), "mmlu", "", row(0, 0, 1, "A", ""))
	writeBench(t, filepath.Join(out, "gsm8k"), "gsm8k", "", row(0, 0, 0, "18", ""))
	runs, err := Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Name != "gsm8k" || runs[1].Name != "mmlu" {
		t.Fatalf("runs %v, want gsm8k and mmlu in order", names(runs))
	}
	file := filepath.Join(out, "mmlu", "eval-20260402T120000Z-mmlu.json")
	if !Is(file) {
		t.Errorf("Is(%s) = false", file)
	}
	runs, err = Read(file)
	if err != nil || len(runs) != 1 || len(runs[0].Rows) != 1 {
		t.Fatalf("Read(bundle file): %v, %v", names(runs), err)
	}
}

// A bundle without results.jsonl is a run with no rows, and says so.
func TestReadBundleOnly(t *testing.T) {
	dir := t.TempDir()
	writeBench(t, dir, "gsm8k", "")
	runs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs[0].Rows) != 0 || !strings.Contains(strings.Join(runs[0].Bundle.Notes, "\n"), "no results.jsonl beside the bundle") {
		t.Errorf("rows %d, notes %q", len(runs[0].Rows), runs[0].Bundle.Notes)
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"empty folder", func(*testing.T, string) {}, "not a NeMo Evaluator run: no eval-*.json"},
		{"two bundles", func(t *testing.T, dir string) {
			writeBench(t, dir, "a", "")
			writeBench(t, dir, "b", "")
		}, "2 NeMo Evaluator bundles"},
		{"same benchmark twice", func(t *testing.T, dir string) {
			writeBench(t, filepath.Join(dir, "x"), "gsm8k", "")
			writeBench(t, filepath.Join(dir, "y"), "gsm8k", "")
		}, `benchmark "gsm8k" appears twice`},
		{"bad row", func(t *testing.T, dir string) {
			writeBench(t, dir, "gsm8k", "", row(0, 0, 1, "1", ""), `{"problem_idx": 1`)
		}, "results.jsonl:2: unexpected end of JSON input"},
		{"row without reward", func(t *testing.T, dir string) {
			writeBench(t, dir, "gsm8k", "", `{"problem_idx": 1, "repeat": 0}`)
		}, "results.jsonl:1: a NeMo Evaluator result row needs problem_idx and reward"},
		{"missing shard", func(t *testing.T, dir string) {
			writeBench(t, filepath.Join(dir, "shard_0", "gsm8k"), "gsm8k", `, "shard": {"idx": 0, "total": 3, "range": [0, 1]}`, row(0, 0, 1, "1", ""))
			writeBench(t, filepath.Join(dir, "shard_2", "gsm8k"), "gsm8k", `, "shard": {"idx": 2, "total": 3, "range": [2, 3]}`, row(2, 0, 1, "3", ""))
		}, "a sharded NeMo Evaluator run of 3 shards is incomplete: shard_1 missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			_, err := Read(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// The shards of a sharded run (facts §6.8: shard_<i>/ each a run folder)
// are one run: the union of their rows. Every shard's bundle has its own
// headline, so none is quoted as the run's.
func TestReadSharded(t *testing.T) {
	dir := t.TempDir()
	writeBench(t, filepath.Join(dir, "shard_0", "gsm8k"), "gsm8k", `, "shard": {"idx": 0, "total": 2, "range": [0, 2]}`,
		row(0, 0, 1, "18", ""), row(1, 0, 0, "7", ""))
	writeBench(t, filepath.Join(dir, "shard_1", "gsm8k"), "gsm8k", `, "shard": {"idx": 1, "total": 2, "range": [2, 3]}`,
		row(2, 0, 1, "3", ""))
	runs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	if len(runs) != 1 || r.Shards != 2 || len(r.Rows) != 3 || r.Path != dir {
		t.Fatalf("runs %v: shards %d, rows %d, path %s", names(runs), r.Shards, len(r.Rows), r.Path)
	}
	if v := r.Bundle.Headline.Value; v == nil || *v != 2.0/3 {
		t.Errorf("pass@1 %v, want 2/3", v)
	}
	notes := strings.Join(r.Bundle.Notes, "\n")
	if !strings.Contains(notes, "merged by nel from 2 NeMo Evaluator shards") || strings.Contains(notes, "own bundle reports") {
		t.Errorf("notes:\n%s", notes)
	}
}

func TestOutcome(t *testing.T) {
	for cat, want := range map[string]failure.Outcome{
		"": failure.Scored, "graceful": failure.ModelError, "context_window_exceeded": failure.ModelError,
		"turn_budget_exhausted": failure.ModelError, "infra_error": failure.InfraError, "system": failure.InfraError,
		"solve_timeout": failure.InfraError, "rate_limit": failure.InfraError, "model_error": failure.InfraError,
		"something_new": failure.InfraError,
	} {
		if got := Outcome(cat); got != want {
			t.Errorf("Outcome(%q) = %s, want %s", cat, got, want)
		}
	}
}

func names(runs []*Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.Name)
	}
	return out
}
