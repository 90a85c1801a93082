package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// compile1MRecipe is a SLURM job of 1,000,000 samples (a local GSM8K-format
// dataset of 1,000,000 items, one repeat) split into 1,000 shards: an array
// of 1,000 tasks against an API endpoint.
const compile1MRecipe = `services: model: {
	type:    "api"
	url:     "https://models.example.com/v1/chat/completions"
	model:   "org/model"
	api_key: "${NVIDIA_API_KEY}"
}
benchmarks: [{
	name: "gsm8k"
	params: data_path: "data.jsonl"
	max_concurrent: 512
	solver: {type: "simple", service: "model"}
}]
cluster: {
	type:   "slurm"
	shards: 1000
	node_pools: eval: {partition: "cpu", nodes: 1}
}
output: dir: "./out"
`

// Target (issue 23): a 1M-sample, 1,000-shard plan compiles in under a
// second, measured as `nel compile` end to end, a process of its own.
// Compiling reads the local dataset once (its digest goes into the plan),
// so the cost that grows with the samples is that read: 86 MB here. The
// shard count costs nothing, as the script is one job array whatever it is.
//
// Metrics: s/op (wall time of one compile) and cpu-s/op (its user + system
// CPU, which the other load of a shared machine does not inflate). The
// dataset is written once, outside the timing. nel-run is $NEL_RUN_BIN
// (make bench: bin/nel-run, which the compile hashes), else a stub.
func BenchmarkCompilePlan1M(b *testing.B) {
	if testing.Short() {
		b.Skip("writes an 86 MB dataset")
	}
	bin := buildNel(b)
	dir := b.TempDir()
	writeDataset1M(b, filepath.Join(dir, "data.jsonl"))
	recipe := filepath.Join(dir, "recipe.cue")
	if err := os.WriteFile(recipe, []byte(compile1MRecipe), 0o644); err != nil {
		b.Fatal(err)
	}
	nelRun := os.Getenv("NEL_RUN_BIN")
	if nelRun == "" {
		nelRun = filepath.Join(dir, "nel-run")
		if err := os.WriteFile(nelRun, []byte("#!/bin/sh\n"), 0o755); err != nil {
			b.Fatal(err)
		}
		b.Log("NEL_RUN_BIN unset: the job names a stub nel-run (make bench hashes the real one)")
	}
	var cpu time.Duration
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(bin, "compile", "--nel-run", nelRun, recipe)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("nel compile: %v\n%s", err, stderrOf(err))
		}
		if !strings.Contains(string(out), "\n#SBATCH --array=0-999\n") {
			b.Fatalf("the job is not an array of 1,000 shards:\n%s", out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// writeDataset1M writes 1,000,000 GSM8K-format problems, each distinct.
func writeDataset1M(b *testing.B, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range 1_000_000 {
		a, c := i, i%97
		fmt.Fprintf(w, `{"question": "What is %d plus %d?", "answer": "%d + %d = %d\n#### %d"}`+"\n", a, c, a, c, a+c, a+c)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
