package runctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
)

// Run states.
const (
	StateRunning  = "running"  // a nel run or a SLURM job of the run is alive
	StateFinished = "finished" // every benchmark is merged
	StateStopped  = "stopped"  // nothing runs and the run is not finished: resume it
	StateUnknown  = "unknown"  // it ran elsewhere: this machine cannot tell
)

// Status is what nel status says of a run.
type Status struct {
	Dir      string `json:"dir,omitempty"`
	PlanHash string `json:"plan_hash,omitempty"`
	State    string `json:"state"`
	// Note says what the state rests on, and what to do next.
	Note    string   `json:"note"`
	Process *Process `json:"process,omitempty"`
	Jobs    []Job    `json:"jobs,omitempty"`
	// JobsError says why the run's recorded SLURM jobs could not be asked
	// about (no SLURM commands here); the progress is still read.
	JobsError  string        `json:"jobs_error,omitempty"`
	Benchmarks []BenchStatus `json:"benchmarks,omitempty"`
	// ETA is the time left at the rate samples have been done since the
	// run's nel run started (a local run whose totals are known).
	ETA *ETA `json:"eta,omitempty"`
}

// ETA is an estimate of a running run's time left.
type ETA struct {
	Seconds float64 `json:"seconds"`
	// Rate is the samples done per second since the nel run started (a
	// resumed run counts the samples done before it, so it is high).
	Rate float64 `json:"samples_per_second"`
}

// BenchStatus is one benchmark's progress.
type BenchStatus struct {
	Key string `json:"key"`
	// Merged is true once results.parquet is written.
	Merged             bool `json:"merged"`
	Shards, ShardsDone int
	// Done samples of Total (0: not known until a shard has finished,
	// which records how many items the benchmark selected); InFlight are
	// started and not finished; Failed are done and not scored (model or
	// infrastructure errors).
	Done     int `json:"done"`
	Total    int `json:"total"`
	InFlight int `json:"in_flight"`
	Failed   int `json:"failed"`
	// InfraFailed are the Failed samples that ended in infra_error: never
	// scored, and counted against the benchmark's max_error_rate.
	InfraFailed int `json:"infra_failed"`
	// ShardsRunning are the shards with a journal of this plan and no
	// file yet while the run runs; ShardsInterrupted the same when nothing
	// runs (a resume finishes them).
	ShardsRunning     int `json:"shards_running"`
	ShardsInterrupted int `json:"shards_interrupted"`
	started           int
	// Stale counts shards whose journal belongs to another plan.
	Stale int `json:"stale_journals,omitempty"`
}

// Of reads the status of the run in folder d: its progress from its
// files, and whether it runs from its process record or its SLURM jobs.
func Of(ctx context.Context, d rundir.Dir, s Slurm) (*Status, error) {
	p, err := LatestPlan(d)
	if err != nil {
		return nil, err
	}
	st := &Status{Dir: string(d), PlanHash: p.PlanHash}
	for _, b := range p.Benchmarks {
		bs, err := progress(d, p, b)
		if err != nil {
			return nil, err
		}
		st.Benchmarks = append(st.Benchmarks, bs)
	}
	if st.Process, err = ReadProcess(d); err != nil {
		return nil, err
	}
	ids, err := ReadJobs(d)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		if st.Jobs, err = s.Jobs(ctx, ids); err != nil {
			st.JobsError = err.Error()
		}
	}
	st.decide()
	st.ETA = st.eta(time.Now())
	return st, nil
}

// eta estimates a running local run's time left: the samples not yet
// done at the rate since its nel run started. nil when the run does not
// run here, nothing is done yet, or a total is unknown.
func (st *Status) eta(now time.Time) *ETA {
	if st.State != StateRunning || st.Process == nil {
		return nil
	}
	start, err := time.Parse(time.RFC3339, st.Process.StartedAt)
	if err != nil {
		return nil
	}
	done, total := 0, 0
	for _, b := range st.Benchmarks {
		if b.Total == 0 && !b.Merged {
			return nil
		}
		done, total = done+b.Done, total+b.Total
	}
	elapsed := now.Sub(start).Seconds()
	if done == 0 || elapsed <= 0 {
		return nil
	}
	rate := float64(done) / elapsed
	return &ETA{Seconds: float64(total-done) / rate, Rate: rate}
}

// OfJob reads the status of a SLURM job given by id, without a folder.
func OfJob(ctx context.Context, id string, s Slurm) (*Status, error) {
	jobs, err := s.Jobs(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	st := &Status{Jobs: jobs}
	st.decide()
	return st, nil
}

// decide sets the state from the process record, the jobs and progress.
func (st *Status) decide() {
	finished := len(st.Benchmarks) > 0
	for _, b := range st.Benchmarks {
		finished = finished && b.Merged
	}
	active := 0
	for _, j := range st.Jobs {
		if j.Active() {
			active++
		}
	}
	live := Gone
	if st.Process != nil {
		live = st.Process.Check()
	}
	defer st.shards()
	switch {
	case live == Alive:
		st.State, st.Note = StateRunning, fmt.Sprintf("nel run, pid %d, since %s", st.Process.PID, st.Process.StartedAt)
	case live == Elsewhere:
		st.State, st.Note = StateUnknown, fmt.Sprintf("nel run, pid %d on host %s, since %s: ask there", st.Process.PID, st.Process.Host, st.Process.StartedAt)
	case active > 0:
		st.State, st.Note = StateRunning, fmt.Sprintf("%d of %d SLURM jobs queued or running", active, len(st.Jobs))
	case finished:
		st.State, st.Note = StateFinished, "every benchmark is merged"
	case st.JobsError != "":
		st.State, st.Note = StateUnknown, st.JobsError
	case st.Dir == "":
		st.State, st.Note = StateStopped, "the job is not queued or running"
	case st.Process != nil:
		st.State, st.Note = StateStopped, fmt.Sprintf("nel run (pid %d) ended without finishing: nel run --resume %s continues it", st.Process.PID, st.Dir)
	case len(st.Jobs) > 0:
		st.State, st.Note = StateStopped, fmt.Sprintf("no job of the run is queued or running: sbatch %s continues it", rundir.Dir(st.Dir).Job(st.PlanHash))
	default:
		st.State, st.Note = StateStopped, fmt.Sprintf("nothing runs in the folder: nel run --resume %s continues it", st.Dir)
	}
}

// shards says the benchmarks' started shards are running or interrupted,
// by the state decided.
func (st *Status) shards() {
	for i := range st.Benchmarks {
		b := &st.Benchmarks[i]
		b.ShardsRunning, b.ShardsInterrupted = 0, 0
		if st.State == StateRunning {
			b.ShardsRunning = b.started
		} else {
			b.ShardsInterrupted = b.started
		}
	}
}

// LatestPlan reads the plan of the folder's latest run: the plan file
// written last (a folder keeps the plans of earlier runs too).
func LatestPlan(d rundir.Dir) (*plan.Plan, error) {
	plans, err := d.Plans()
	if err != nil {
		return nil, err
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("%s: not a nel run folder: no plan in %s", d, d.Meta())
	}
	latest, when := "", int64(0)
	for _, p := range plans {
		fi, err := os.Stat(p)
		if err == nil && fi.ModTime().UnixNano() >= when {
			latest, when = p, fi.ModTime().UnixNano()
		}
	}
	return plan.Read(latest)
}

// progress counts a benchmark's samples: the merged results when there
// are, else each shard's file (finished) or journal (running or
// interrupted).
func progress(d rundir.Dir, p *plan.Plan, b plan.Benchmark) (BenchStatus, error) {
	bs := BenchStatus{Key: b.Key, Shards: p.Shards}
	bench := d.Benchmark(b.Dir)
	if bundle, err := metrics.ReadFile(bench.Bundle()); err == nil {
		bs.Merged, bs.ShardsDone = true, p.Shards
		bs.Done, bs.Total = bundle.Samples, bundle.Samples
		bs.Failed = bundle.Validity.InfraErrors + bundle.Failures.Failed
		bs.InfraFailed = bundle.Validity.InfraErrors
		return bs, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return bs, fmt.Errorf("%s: %w", bench.Bundle(), err)
	}
	for i := range p.Shards {
		sh := bench.Shard(i, p.Shards)
		rows, meta, err := results.ReadRows(string(sh))
		switch {
		case err == nil:
			bs.ShardsDone++
			bs.Done += len(rows)
			for j := range rows {
				if !metrics.Scored(&rows[j]) || rows[j].ErrorCategory != "" {
					bs.Failed++
				}
				if !metrics.Scored(&rows[j]) {
					bs.InfraFailed++
				}
			}
			if bs.Total == 0 {
				bs.Total = total(meta)
			}
			continue
		case !errors.Is(err, fs.ErrNotExist):
			return bs, fmt.Errorf("%s: %w", sh, err)
		}
		pk, err := shard.Peek(sh.Journal())
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // not started
		case err != nil:
			return bs, err
		case pk.PlanHash != p.PlanHash:
			bs.Stale++
			continue
		}
		bs.Done += pk.Done
		bs.Failed += pk.Failed
		bs.InfraFailed += pk.InfraFailed
		bs.InFlight += pk.InFlight
		bs.started++
	}
	return bs, nil
}

// total is the benchmark's sample count a finished shard records: the
// items selected (all shards) times the repeats; 0 when not recorded.
func total(meta map[string]string) int {
	items, err1 := strconv.Atoi(meta[results.MetaSelected])
	repeats, err2 := strconv.Atoi(meta[results.MetaRepeats])
	if err1 != nil || err2 != nil {
		return 0
	}
	return items * repeats
}

// Active returns the ids of the jobs that are queued or running.
func (st *Status) Active() []string {
	var ids []string
	for _, j := range st.Jobs {
		if j.Active() && !slices.Contains(ids, j.ID) {
			ids = append(ids, j.ID)
		}
	}
	return ids
}
