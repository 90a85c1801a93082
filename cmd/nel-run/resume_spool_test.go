package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
)

// kill -9 once the shard has streamed some of its samples to part files
// (2,048 a part), then the same command again: the rerun finishes from the
// journal, whatever state the parts were left in, and its files equal an
// uninterrupted run's; nothing of the spool is left behind.
func TestKillNineAfterPartsWritten(t *testing.T) {
	f := newResumeFixture(t, 3000, time.Millisecond)
	f.p.Benchmarks[0].MaxConcurrent = 64
	f.planPath = f.writePlan(t, f.p.OutputDir)
	args := []string{"shard", "--plan", f.planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1"}
	spool := rundir.Dir(f.p.OutputDir).Benchmark("gsm8k").Shard(0, 1).Spool()

	cmd, exited, stderr := startNelRun(t, args...)
	// The second part's trajectories are written after its rows: once
	// they are there, two parts are complete.
	second := filepath.Join(spool, "part-000001.trajectories.parquet")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(second); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the shard ended (%v) before it wrote two parts\n%s", err, stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no second part after 2 minutes")
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited

	if code, _, errs := execCLI(t, args...); code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, errs)
	}
	rows, trajs := readShard(t, f.p.OutputDir)
	if len(rows) != 6000 {
		t.Fatalf("%d rows, want 3,000 items × 2 repeats", len(rows))
	}
	if _, err := os.Stat(spool); !os.IsNotExist(err) {
		t.Errorf("the spool is left behind: %v", err)
	}

	f.checkLikeUninterrupted(t, rows, trajs)
}

// startNelRun starts nel-run with args and returns it, a channel that
// receives its exit, and its stderr.
func startNelRun(t *testing.T, args ...string) (*exec.Cmd, <-chan error, *strings.Builder) {
	t.Helper()
	cmd := nelRun(t, args...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, exited, stderr
}

// writeGSM8KData writes n GSM8K-shaped items ("Item i: what is i times
// 3?", answer 3i) and returns the file.
func writeGSM8KData(tb testing.TB, dir string, n int) string {
	tb.Helper()
	var data strings.Builder
	for i := range n {
		line, _ := json.Marshal(map[string]string{
			"question": fmt.Sprintf("Item %d: what is %d times 3?", i, i),
			"answer":   fmt.Sprintf("It is three times.\n#### %d", 3*i),
		})
		data.Write(line)
		data.WriteByte('\n')
	}
	path := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(path, []byte(data.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// writePlanFile writes p where a job would (in its output directory) and
// returns the file.
func writePlanFile(tb testing.TB, p *plan.Plan) string {
	tb.Helper()
	path := rundir.Dir(p.OutputDir).Plan(p.PlanHash)
	pj, _ := json.Marshal(p)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, pj, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}
