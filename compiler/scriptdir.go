package compiler

import (
	"path/filepath"

	"github.com/nel-eval/nel/runtime/rundir"
)

// scriptDir is the run folder as a job script names it: package rundir's
// layout under the script's own variable ($NEL_OUT in an sbatch script,
// $(NEL_OUT) in a Makefile), so that the files a job writes are where
// nel-run and nel look for them. The templates call its methods; every
// path is plain text (the variable, the plan ID, benchmark folders and
// log names, which are safeDir's) and goes inside double quotes or a make
// target as it is. Slashes whatever OS nel compiles on: the scripts run
// on Linux, and the same recipe compiles to the same bytes everywhere.
type scriptDir struct {
	dir      rundir.Dir
	planHash string
}

// Plan is where the job writes its plan.
func (d scriptDir) Plan() string { return filepath.ToSlash(d.dir.Plan(d.planHash)) }

// Job is where the job keeps a copy of itself.
func (d scriptDir) Job() string { return filepath.ToSlash(d.dir.Job(d.planHash)) }

// Meta is the folder of the plan and the job's own files.
func (d scriptDir) Meta() string { return filepath.ToSlash(d.dir.Meta()) }

// Attempts is auto-resume's counter for tag, a shell word ("$nel_tag").
func (d scriptDir) Attempts(tag string) string { return filepath.ToSlash(d.dir.Attempts(tag)) }

// Jobs is the record of the run's SLURM job ids, for nel status, logs
// and stop.
func (d scriptDir) Jobs() string { return filepath.ToSlash(d.dir.Jobs()) }

// Logs is the folder of the job's logs.
func (d scriptDir) Logs() string { return filepath.ToSlash(string(d.dir.Logs())) }

// ServerLog, SandboxLog and ShardLog are logs of this SLURM job: named by
// $SLURM_JOB_ID, so a resubmitted job does not write over its
// predecessor's.
func (d scriptDir) ServerLog(fileName string) string {
	return filepath.ToSlash(d.dir.Logs().Server(fileName, "$SLURM_JOB_ID"))
}

// Balancer is the load balancer's config of a service's instances in
// this SLURM job.
func (d scriptDir) Balancer(fileName string) string {
	return filepath.ToSlash(d.dir.Balancer(fileName, "$SLURM_JOB_ID"))
}

func (d scriptDir) SandboxLog(fileName string) string {
	return filepath.ToSlash(d.dir.Logs().Sandbox(fileName, "$SLURM_JOB_ID"))
}

func (d scriptDir) ShardLog(benchDir string, i int) string {
	return filepath.ToSlash(d.dir.Logs().Shard(benchDir, i, "$SLURM_JOB_ID"))
}

// Shard is the results file of shard i of n of the benchmark in benchDir:
// a Makefile's target.
func (d scriptDir) Shard(benchDir string, i, n int) string {
	return filepath.ToSlash(string(d.dir.Benchmark(benchDir).Shard(i, n)))
}

// Harness is the folder a peer harness writes into for the benchmark in
// benchDir; HarnessLog is its log in this SLURM job.
func (d scriptDir) Harness(benchDir string) string {
	return filepath.ToSlash(d.dir.Benchmark(benchDir).Harness())
}

func (d scriptDir) HarnessLog(benchDir string) string {
	return filepath.ToSlash(d.dir.Logs().Harness(benchDir, "$SLURM_JOB_ID"))
}
