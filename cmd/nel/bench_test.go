package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The targets in the issue are wall time of a whole nel process on a
// 2-core machine (compile of the suite ≤ 100 ms, validate of 20 benchmarks
// ≤ 100 ms), so these benchmarks build the binary once and time exec'ing it.

func buildNel(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "nel")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build nel: %v\n%s", err, out)
	}
	return bin
}

func benchExec(b *testing.B, bin string, args ...string) {
	b.Helper()
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(bin, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
}

func BenchmarkProcessCompileSuite(b *testing.B) {
	bin := buildNel(b)
	fake := filepath.Join(b.TempDir(), "nel-run")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	benchExec(b, bin, "compile", "--nel-run", fake, "../../examples/suite.cue")
}

func BenchmarkProcessValidate20(b *testing.B) {
	bin := buildNel(b)
	var r strings.Builder
	r.WriteString("services:\n  m:\n    type: vllm\n    model: org/model\n    tensor_parallel_size: 4\n    node_pool: gpu\n  judge:\n    type: api\n    url: https://example.com/v1/chat/completions\n    model: judge\n    api_key: ${JUDGE_KEY}\nbenchmarks:\n")
	names := []string{"gsm8k", "mmlu", "math500", "simpleqa"}
	for i := range 20 {
		fmt.Fprintf(&r, "  - name: %s\n    repeats: %d\n    max_problems: 100\n    solver: {type: simple, service: m, system_prompt: \"prompt %d\"}\n", names[i%4], 1+i%4, i)
		if names[i%4] == "simpleqa" {
			r.WriteString("    scoring: {metrics: [{type: judge, name: correct, service: judge}]}\n")
		}
	}
	r.WriteString("cluster:\n  type: slurm\n  walltime: \"04:00:00\"\n  node_pools:\n    gpu: {partition: batch, gres: \"gpu:8\"}\n")
	path := filepath.Join(b.TempDir(), "r20.yaml")
	if err := os.WriteFile(path, []byte(r.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	benchExec(b, bin, "validate", "-q", path)
}
