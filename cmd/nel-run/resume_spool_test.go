package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

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

	cmd := nelRun(t, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
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

	ref := filepath.Join(f.dir, "ref")
	refPlan := f.writePlan(t, ref)
	if code, _, errs := execCLI(t, "shard", "--plan", refPlan, "--benchmark", "gsm8k", "--shard", "0", "--of", "1"); code != 0 {
		t.Fatalf("reference run: exit %d\n%s", code, errs)
	}
	wantRows, wantTrajs := comparable(readShard(t, ref))
	gotRows, gotTrajs := comparable(rows, trajs)
	if !reflect.DeepEqual(gotRows, wantRows) {
		t.Error("results differ from an uninterrupted run")
	}
	if !reflect.DeepEqual(gotTrajs, wantTrajs) {
		t.Error("trajectories differ from an uninterrupted run")
	}
}
