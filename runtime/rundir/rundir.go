// Package rundir owns the layout of a run folder: a recipe's output.dir,
// where a run's plan, logs, shards, merged results and reports live. Every
// other package (the compiler's job scripts, nel-run, nel, the analysis
// tools) asks it for a path instead of spelling one, so the layout is
// written down once, here:
//
//	out/                                              Dir("out")
//	├── .nel/                                         Meta(): nel's own files
//	│   ├── plan-0123456789ab.json                    Plan(planHash): the compiled plan, named by PlanID(planHash)
//	│   ├── job-0123456789ab.sbatch                   Job(planHash): the SLURM job's copy of itself, to resubmit
//	│   ├── attempts-shard-3                          Attempts(tag): auto-resume's count of a job's (or shard's) attempts
//	│   ├── merge.lock                                MergeLock(): one nel-run merge at a time
//	│   ├── servers/                                  Servers(): records of the servers a local run started
//	│   ├── haproxy-vllm-1234.cfg                     Balancer(service, job): the load balancer's config of a server's instances in SLURM job 1234
//	│   ├── images/                                   Images(): the images nel-run's apptainer sandbox built of Harbor tasks' Dockerfiles
//	│   ├── recipe/                                   RecipeDir(): copies of the recipe nel run ran, and of its lock
//	│   │   └── suite.cue                             Recipe(file)
//	│   ├── source.json                               Source(): where that recipe came from, with its overrides
//	│   ├── process.json                              Process(): the nel run that runs in the folder now
//	│   ├── jobs                                      Jobs(): the SLURM jobs of the run, one id a line
//	│   └── published.json                            Published(): where nel publish put the run
//	├── logs/                                         Logs()
//	│   ├── run.log                                   Logs.Run(): what nel run said (its stderr)
//	│   ├── server-vllm.log                           Logs.Server(service, ""): a server of a local run
//	│   ├── server-vllm-1234.log                      Logs.Server(service, job): a server of SLURM job 1234
//	│   ├── sandbox-python-1234.log                   Logs.Sandbox(sandbox, job)
//	│   ├── shard-gsm8k-0-1234.log                    Logs.Shard(benchDir, i, job): a shard of a heterogeneous job
//	│   └── harness-mmlu-1234.log                     Logs.Harness(benchDir, job): a peer harness's run
//	├── gsm8k/                                        Benchmark(dir): a benchmark's folder, the plan's benchmarks[].dir
//	│   ├── results.parquet                           Results(): one row per (item, repeat), merged
//	│   ├── trajectories.parquet                      Trajectories(): prompts, responses and errors, merged
//	│   ├── turns.parquet                             Turns(): an agentic benchmark's turns, one row each, merged
//	│   ├── eval.json                                 Bundle(): the statistics merge computes
//	│   ├── harness/                                  Harness(): a peer harness's own output (lm-eval://, skills://, container://)
//	│   └── shards/                                   Shards()
//	│       ├── shard-00000-of-00002.parquet          Shard(i, n): the rows of shard i of n
//	│       ├── shard-00000-of-00002.trajectories.parquet  Shard.Trajectories()
//	│       ├── shard-00000-of-00002.turns.parquet    Shard.Turns(): only for a benchmark whose solver takes turns
//	│       ├── .shard-00000-of-00002.journal         Shard.Journal(): the samples a running shard has finished
//	│       ├── .shard-00000-of-00002.spool/          Shard.Spool(): a running shard's finished samples as Parquet parts
//	│       └── .shard-00000-of-00002.journal.stale-20260102T030405Z  Shard.StaleJournal(at): another run's journal, kept aside
//	└── report.md                                     Report("md"): the suite's report; report.html, report.csv… per output.report
//
// Paths are joined with path/filepath, so a Dir may be relative, absolute
// or a shell variable ($NEL_OUT) that a job script expands. The names are
// the contract users rely on (a glob such as runs/*/gsm8k/results.parquet
// reads many runs at once): changing one changes what every run writes.
//
// The records under servers/ are named by package serve, which alone reads
// them; what nel publish copies into a store is laid out by the store.
package rundir

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The names of a benchmark's merged files: what a results store lists and
// what users glob for, so they are exported as they are.
const (
	ResultsFile      = "results.parquet"
	TrajectoriesFile = "trajectories.parquet"
	TurnsFile        = "turns.parquet"
	BundleFile       = "eval.json"
)

const (
	metaDir    = ".nel"
	logsDir    = "logs"
	shardsDir  = "shards"
	harnessDir = "harness"
)

// Dir is a run folder (a recipe's output.dir). Its methods return the
// paths of what a run writes in it; none touches the file system unless it
// says so.
type Dir string

// PlanID names a plan's files in .nel/: the first 12 hex digits of its
// hash ("sha256:<hex>"), enough to tell the plans of one folder apart and
// short enough to read. A hash shorter than that is used whole.
func PlanID(planHash string) string {
	id := strings.TrimPrefix(planHash, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// OfPlan returns the run folder whose .nel/ holds the plan file at
// planPath, as a compiled job writes it; ok is false when planPath is not
// in a .nel folder (a plan given by hand, anywhere).
func OfPlan(planPath string) (d Dir, ok bool) {
	meta := filepath.Dir(planPath)
	if filepath.Base(meta) != metaDir {
		return "", false
	}
	return Dir(filepath.Dir(meta)), true
}

// Meta is the folder of nel's own files: plans, job copies, locks,
// records. Its name starts with a dot so that globs over benchmark
// folders (out/*/) do not see it.
func (d Dir) Meta() string { return filepath.Join(string(d), metaDir) }

// Plan is where a run keeps its compiled plan. The plan's ID is in the
// name because one folder may hold several plans over time (another shard
// count, another endpoint), and a job must read its own.
func (d Dir) Plan(planHash string) string {
	return filepath.Join(d.Meta(), "plan-"+PlanID(planHash)+".json")
}

// Plans returns the plan files in d's .nel/, sorted: a run folder's plan
// is found by listing them. It returns an empty list, not an error, when
// there are none.
func (d Dir) Plans() ([]string, error) {
	// PlanID("*") is "*": the pattern is Plan's name, so the two cannot drift.
	matches, err := filepath.Glob(d.Plan("*"))
	if err != nil {
		return nil, fmt.Errorf("plans of %s: %w", d, err)
	}
	return matches, nil // Glob sorts
}

// Job is where a compiled SLURM job keeps a copy of itself, beside its
// plan, so that a shard can be resubmitted (sbatch --array=I) and an
// interrupted job resumed.
func (d Dir) Job(planHash string) string {
	return filepath.Join(d.Meta(), "job-"+PlanID(planHash)+".sbatch")
}

// Attempts is where auto-resume counts the attempts of a job (tag "job")
// or of one shard of an array job (tag "shard-<i>").
func (d Dir) Attempts(tag string) string { return filepath.Join(d.Meta(), "attempts-"+tag) }

// MergeLock is the file nel-run merge locks, so that the array tasks that
// finish together merge once.
func (d Dir) MergeLock() string { return filepath.Join(d.Meta(), "merge.lock") }

// Servers is the folder of the records of the servers a local run
// started, which the next run reads to stop the servers of one that died.
func (d Dir) Servers() string { return filepath.Join(d.Meta(), "servers") }

// Balancer is the HAProxy config that SLURM job job writes for the load
// balancer in front of a service's instances.
func (d Dir) Balancer(service, job string) string {
	return filepath.Join(d.Meta(), "haproxy-"+service+jobSuffix(job)+".cfg")
}

// Images is where an apptainer sandbox without a sif_cache_dir builds
// the images of Harbor tasks' Dockerfiles (and pulls the images they are
// built on): once per run folder, so a rerun builds none again.
func (d Dir) Images() string { return filepath.Join(d.Meta(), "images") }

// RecipeDir is the folder where nel run copies the recipe it ran (and its
// lock), for nel publish.
func (d Dir) RecipeDir() string { return filepath.Join(d.Meta(), "recipe") }

// Recipe is the copy of the recipe (or lock) file named file in RecipeDir.
func (d Dir) Recipe(file string) string { return filepath.Join(d.RecipeDir(), file) }

// Sources is where nel-run keeps what it fetched and made of a
// benchmark's tasks on the node (a repository at a commit, its tasks
// converted): once per run folder, so a rerun reads the same files.
func (d Dir) Sources() string { return filepath.Join(d.Meta(), "sources") }

// Source is where nel run records where its recipe came from (its path,
// folder and overrides), for nel publish.
func (d Dir) Source() string { return filepath.Join(d.Meta(), "source.json") }

// Process is where nel run records its process (pid, host) while it runs
// in the folder, for nel status and nel stop; it is removed when the run
// ends.
func (d Dir) Process() string { return filepath.Join(d.Meta(), "process.json") }

// Jobs is where a compiled SLURM job appends its job id when it starts,
// and the id of the successor it queues, one a line, for nel status, logs
// and stop.
func (d Dir) Jobs() string { return filepath.Join(d.Meta(), "jobs") }

// Published is where nel publish records the store and run id it
// published the run under, for the model card.
func (d Dir) Published() string { return filepath.Join(d.Meta(), "published.json") }

// Logs is the folder of the logs of servers, sandboxes and shards.
func (d Dir) Logs() Logs { return Logs(filepath.Join(string(d), logsDir)) }

// Logs is a run folder's logs folder.
type Logs string

// Run is the log of a local run: what nel run wrote to its stderr.
func (l Logs) Run() string { return l.file("run") }

// List returns the log files in the folder, sorted; an empty list, not an
// error, when there is no folder.
func (l Logs) List() ([]string, error) {
	matches, err := filepath.Glob(l.file("*"))
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", l, err)
	}
	return matches, nil
}

// Server is the log of a service's server. A local run starts a service
// once (job ""); every SLURM job starts its own, so job (its id) keeps
// their logs apart.
func (l Logs) Server(service, job string) string {
	return l.file("server-" + service + jobSuffix(job))
}

// Sandbox is the log of a sandbox pool's servers in SLURM job job.
func (l Logs) Sandbox(sandbox, job string) string {
	return l.file("sandbox-" + sandbox + jobSuffix(job))
}

// Shard is the log of shard i of the benchmark in folder benchDir, run by
// SLURM job job beside the others (a heterogeneous job); a shard run alone
// logs to the job's own output.
func (l Logs) Shard(benchDir string, i int, job string) string {
	return l.file("shard-" + benchDir + "-" + strconv.Itoa(i) + jobSuffix(job))
}

// Harness is the log of the peer harness that ran the benchmark in folder
// benchDir in SLURM job job.
func (l Logs) Harness(benchDir, job string) string {
	return l.file("harness-" + benchDir + jobSuffix(job))
}

func (l Logs) file(name string) string { return filepath.Join(string(l), name+".log") }

func jobSuffix(job string) string {
	if job == "" {
		return ""
	}
	return "-" + job
}

// Report is the suite's report in the format with file extension ext
// (md, html, json, csv, tex), at the top of the run folder.
func (d Dir) Report(ext string) string { return filepath.Join(string(d), ReportFile(ext)) }

// ReportFile is Report's name: the name a published run's report keeps.
func ReportFile(ext string) string { return "report." + ext }

// Benchmark is the folder of the benchmark whose plan entry has Dir dir.
func (d Dir) Benchmark(dir string) Bench { return Bench(filepath.Join(string(d), dir)) }

// Bench is a benchmark's folder in a run folder: its merged results, its
// bundle and its shards.
type Bench string

// Results is the merged results file: one row per (item, repeat).
func (b Bench) Results() string { return filepath.Join(string(b), ResultsFile) }

// Trajectories is the merged trajectories file: the full prompts and
// responses of Results' rows.
func (b Bench) Trajectories() string { return filepath.Join(string(b), TrajectoriesFile) }

// Turns is the merged turns file of an agentic benchmark (a tool-calling
// solver): one row per turn of every sample. Other benchmarks have none.
func (b Bench) Turns() string { return filepath.Join(string(b), TurnsFile) }

// Bundle is the benchmark's eval.json, the statistics of Results.
func (b Bench) Bundle() string { return filepath.Join(string(b), BundleFile) }

// Harness is the folder a peer harness (lm-evaluation-harness,
// NeMo-Skills, an eval-factory container) writes its own output into,
// mounted into its container; nel-run ingest reads it into a shard.
func (b Bench) Harness() string { return filepath.Join(string(b), harnessDir) }

// Shards is the folder of the benchmark's shard files.
func (b Bench) Shards() string { return filepath.Join(string(b), shardsDir) }

// Shard is shard i of n of the benchmark.
func (b Bench) Shard(i, n int) Shard { return Shard(filepath.Join(b.Shards(), ShardFile(i, n))) }

// ShardFile names the results file of shard i of n. The numbers are
// zero-padded so that the names sort in shard order, and n is in the name
// so that the shards of another shard count never pass for this run's.
func ShardFile(i, n int) string {
	return fmt.Sprintf("shard-%05d-of-%05d.parquet", i, n)
}

// Shard is the results file of one shard; its other files are named from
// it, beside it.
type Shard string

// Trajectories is the shard's trajectories file.
func (s Shard) Trajectories() string {
	return strings.TrimSuffix(string(s), ".parquet") + ".trajectories.parquet"
}

// Turns is the shard's turns file, written by a shard whose solver takes
// turns (tool_calling).
func (s Shard) Turns() string {
	return strings.TrimSuffix(string(s), ".parquet") + ".turns.parquet"
}

// ModelTraffic is the shard's model traffic log (the service's
// proxy.model_traffic): one JSON line per model HTTP call, appended as
// the calls end. Each shard has its own; merge leaves them as they are.
func (s Shard) ModelTraffic() string {
	return strings.TrimSuffix(string(s), ".parquet") + ".model_traffic.jsonl"
}

// Journal is the crash-safe record of the samples the shard has finished
// while it runs. It is hidden (a leading dot) so that a glob for the
// shard files never sees it, and it is gone once the shard is complete.
func (s Shard) Journal() string {
	dir, base := filepath.Split(string(s))
	return filepath.Join(dir, "."+strings.TrimSuffix(base, ".parquet")+".journal")
}

// Spool is the hidden folder where a running shard writes its finished
// samples as part files, joined into the shard's files when it ends (and
// deleted then; a shard that starts again deletes what is left of it).
func (s Shard) Spool() string {
	dir, base := filepath.Split(string(s))
	return filepath.Join(dir, "."+strings.TrimSuffix(base, ".parquet")+".spool")
}

// StaleJournal is where a journal of another run (another plan, other
// data) is moved aside at time at, so that its samples stay out of this
// run's results but are not destroyed.
func (s Shard) StaleJournal(at time.Time) string {
	return s.Journal() + ".stale-" + at.UTC().Format("20060102T150405Z")
}
