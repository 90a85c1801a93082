package runctl

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/rundir"
)

func TestLastLines(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"a\nb\nc\n", 0, ""},
		{"a\nb\nc\n", 1, "c\n"},
		{"", 3, ""},
	} {
		if got := string(lastLines([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestJobIDs(t *testing.T) {
	for id, want := range map[string]bool{"123": true, "123_4": true, "7+1": true, "out": false, "12a": false, "": false, "1_": false} {
		if IsJobID(id) != want {
			t.Errorf("IsJobID(%q) = %v", id, !want)
		}
	}
	d := rundir.Dir(t.TempDir())
	if ids, err := ReadJobs(d); err != nil || ids != nil {
		t.Fatalf("ReadJobs without a record: %v, %v", ids, err)
	}
	os.MkdirAll(d.Meta(), 0o755)
	// Array tasks record the same job more than once; garbage is skipped.
	os.WriteFile(d.Jobs(), []byte("100_0\n100_1\n101\n100_0\n\nnot-a-job\n102\n"), 0o644)
	ids, err := ReadJobs(d)
	if want := []string{"100_0", "100_1", "101", "102"}; err != nil || !slices.Equal(ids, want) {
		t.Errorf("ReadJobs = %v, %v; want %v", ids, err, want)
	}
	for state, want := range map[string]bool{"RUNNING": true, "PENDING": true, "COMPLETED": false, "CANCELLED by 0": false, "": false, "TIMEOUT": false} {
		if (Job{State: state}).Active() != want {
			t.Errorf("Job{State: %q}.Active() = %v", state, !want)
		}
	}
}

// Hold refuses while the recorded run lives, replaces the record of one
// that died, and release removes it.
func TestHold(t *testing.T) {
	d := rundir.Dir(t.TempDir())
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill()
	host, _ := os.Hostname()
	write := func(pid int, host string) {
		os.MkdirAll(d.Meta(), 0o755)
		b := []byte(`{"pid": ` + strconv.Itoa(pid) + `, "host": "` + host + `", "started_at": "2026-01-02T03:04:05Z"}`)
		if err := os.WriteFile(d.Process(), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(other.Process.Pid, host)
	if _, err := Hold(d, "sha256:p"); err == nil || !strings.Contains(err.Error(), "is already running in "+string(d)) {
		t.Fatalf("Hold beside a live run: %v", err)
	}
	write(other.Process.Pid, "another-host")
	if _, err := Hold(d, "sha256:p"); err == nil || !strings.Contains(err.Error(), "a nel run on host another-host") {
		t.Fatalf("Hold beside a run on another host: %v", err)
	}
	other.Process.Kill()
	other.Wait()
	write(other.Process.Pid, host)
	release, err := Hold(d, "sha256:p")
	if err != nil {
		t.Fatalf("Hold over a dead run's record: %v", err)
	}
	p, err := ReadProcess(d)
	if err != nil || p == nil || p.PID != os.Getpid() || p.PlanHash != "sha256:p" || p.Check() != Alive {
		t.Fatalf("record %+v, %v", p, err)
	}
	release()
	if _, err := os.Stat(d.Process()); !os.IsNotExist(err) {
		t.Errorf("release left the record: %v", err)
	}
}

// A run whose jobs SLURM cannot be asked about is not "stopped": its state
// is unknown, and says why; a finished run is finished all the same.
func TestDecideWithoutSlurm(t *testing.T) {
	st := &Status{Dir: "out", JobsError: "cannot ask SLURM about jobs 7: squeue is not on PATH", Benchmarks: []BenchStatus{{Key: "gsm8k"}}}
	st.decide()
	if st.State != StateUnknown || !strings.Contains(st.Note, "squeue is not on PATH") {
		t.Errorf("state %s: %s", st.State, st.Note)
	}
	st = &Status{Dir: "out", JobsError: "x", Benchmarks: []BenchStatus{{Key: "gsm8k", Merged: true}}}
	st.decide()
	if st.State != StateFinished {
		t.Errorf("merged run: state %s: %s", st.State, st.Note)
	}
}

// The ETA by hand: started 100 s before now, 30 of 40 + 20 (merged)
// samples done: 50 of 60 at 0.5 samples/s leaves 10 samples, 20 s.
func TestETA(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 40, 0, time.UTC)
	st := &Status{State: StateRunning, Process: &Process{StartedAt: "2026-01-01T00:00:00Z"}, Benchmarks: []BenchStatus{
		{Key: "a", Done: 30, Total: 40}, {Key: "b", Merged: true, Done: 20, Total: 20},
	}}
	if e := st.eta(now); e == nil || e.Rate != 0.5 || e.Seconds != 20 {
		t.Errorf("eta %+v, want 20 s at 0.5 samples/s", e)
	}
	var b strings.Builder
	st.ETA = st.eta(now)
	if err := st.Render(&b, false); err != nil || !strings.Contains(b.String(), "\neta:    20s at 0.5 samples/s\n") {
		t.Errorf("render: %v\n%s", err, b.String())
	}
	st.Benchmarks[0].Total = 0 // not known until a shard finishes
	if e := st.eta(now); e != nil {
		t.Errorf("eta with an unknown total: %+v", e)
	}
	st.Benchmarks[0].Total, st.State = 40, StateStopped
	if e := st.eta(now); e != nil {
		t.Errorf("eta of a stopped run: %+v", e)
	}
}

// Started shards are running while the run runs, interrupted once it
// does not; the infrastructure failures are said apart.
func TestShardStates(t *testing.T) {
	st := &Status{Dir: "out", Benchmarks: []BenchStatus{{Key: "gsm8k", Shards: 4, ShardsDone: 1, started: 2, Done: 9, Failed: 3, InfraFailed: 2}}}
	st.decide()
	if b := st.Benchmarks[0]; st.State != StateStopped || b.ShardsInterrupted != 2 || b.ShardsRunning != 0 {
		t.Errorf("stopped: state %s, %+v", st.State, b)
	}
	if got, want := st.Benchmarks[0].text(), "9 samples done (the total is known once a shard finishes), 1 of 4 shards finished, 2 interrupted, 3 failed (model or infrastructure errors), 2 of them infrastructure failures, not scored"; got != want {
		t.Errorf("text %q\nwant %q", got, want)
	}
	st.Jobs = []Job{{ID: "7", State: "RUNNING"}}
	st.decide()
	if b := st.Benchmarks[0]; st.State != StateRunning || b.ShardsRunning != 2 || b.ShardsInterrupted != 0 {
		t.Errorf("running: state %s, %+v", st.State, b)
	}
}
