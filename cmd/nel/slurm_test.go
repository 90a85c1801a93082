//go:build slurm

package main

// The end-to-end scenarios on a real SLURM cluster: testdata/slurm/*.txtar.
// Built only with -tags slurm; run them with `make test-slurm`, which starts
// a private cluster (.ci/test-slurm) or, with NEL_SLURM_SITE=1, uses the
// cluster of $SLURM_CONF.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/nel-eval/nel/internal/scripttest"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nel-eval/nel/runtime/results"
)

// TestSlurm runs testdata/slurm/*.txtar in parallel against the cluster of
// $SLURM_CONF. Each script sees, besides what TestScript's see:
//
//	$NEL_RUN_BIN     the real nel-run, which compiled jobs call
//	$PARTITION       partition for CPU work (NEL_SLURM_PARTITION, default debug)
//	$GPU_PARTITION   partition with GPUs (NEL_SLURM_GPU_PARTITION, default $PARTITION)
//	$ACCOUNT         an account the user may charge (NEL_SLURM_ACCOUNT, default nel-test)
//	$HOST            where compute nodes reach a server the script starts on this
//	                 machine (NEL_SLURM_HOST, default 127.0.0.1)
//	$PORT, $PORT2    free ports for simulated endpoints
//
// and the commands below (see slurmCmds).
func TestSlurm(t *testing.T) {
	for _, tool := range []string{"sbatch", "squeue", "scontrol", "scancel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: run these tests with make test-slurm, which starts a cluster", tool)
		}
	}
	conf := os.Getenv("SLURM_CONF")
	// Compute nodes of a site cluster see only shared file systems: the
	// scripts' work directories and nel-run go under NEL_SLURM_WORKDIR.
	workRoot := os.Getenv("NEL_SLURM_WORKDIR")
	if workRoot != "" {
		if err := os.MkdirAll(workRoot, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TMPDIR", workRoot)
	}
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	bin := realNelRun(t)
	partition := envOr("NEL_SLURM_PARTITION", "debug")
	testscript.Run(t, testscript.Params{
		Dir:         "testdata/slurm",
		WorkdirRoot: workRoot,
		Setup: func(e *testscript.Env) error {
			if conf != "" {
				e.Setenv("SLURM_CONF", conf)
			}
			e.Setenv("EXAMPLES", examples)
			e.Setenv("NEL_RUN_BIN", filepath.Join(bin, "nel-run"))
			e.Setenv("PATH", bin+string(os.PathListSeparator)+e.Getenv("PATH"))
			e.Setenv("PARTITION", partition)
			e.Setenv("GPU_PARTITION", envOr("NEL_SLURM_GPU_PARTITION", partition))
			e.Setenv("ACCOUNT", envOr("NEL_SLURM_ACCOUNT", "nel-test"))
			e.Setenv("HOST", envOr("NEL_SLURM_HOST", "127.0.0.1"))
			for _, name := range []string{"PORT", "PORT2"} {
				port, err := freePort()
				if err != nil {
					return err
				}
				e.Setenv(name, strconv.Itoa(port))
			}
			return nil
		},
		Cmds: slurmCmds(),
	})
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// slurmCmds are the scripts' commands beyond testscript's own.
func slurmCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"expand":    scripttest.Expand,
		"submit":    cmdSubmit,
		"jobwait":   cmdJobwait,
		"jobstate":  cmdJobstate,
		"successor": cmdSuccessor,
		"joboutput": cmdJoboutput,
		"samerows":  cmdSamerows,
		"rows":      cmdRows,
		"nosecret":  cmdNosecret,
		"waitgrep":  cmdWaitgrep,
	}
}

// cmdSubmit: submit VAR [SBATCH-FLAG...] runs `sbatch --parsable FLAG...`
// on the script set by the preceding stdin command (what nel compile
// printed) and sets $VAR to the job id. With !, sbatch must refuse the job;
// its stderr is then there for the stderr command.
func cmdSubmit(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: submit VAR [SBATCH-FLAG...]")
	}
	err := ts.Exec("sbatch", append([]string{"--parsable"}, args[1:]...)...)
	if neg {
		if err == nil {
			ts.Fatalf("sbatch accepted the job: %s", ts.ReadFile("stdout"))
		}
		return
	}
	ts.Check(err)
	id := strings.TrimSpace(ts.ReadFile("stdout"))
	id, _, _ = strings.Cut(id, ";") // "ID;CLUSTER" on federated sites
	if _, err := strconv.Atoi(id); err != nil {
		ts.Fatalf("sbatch printed %q, not a job id", id)
	}
	ts.Setenv(args[0], id)
}

// jobTask is one line of squeue: an array task, a het component or a job.
type jobTask struct{ id, state string }

// queueStates lists the tasks of job id as squeue sees them (all states).
func queueStates(id string) ([]jobTask, error) {
	out, err := exec.Command("squeue", "-h", "-t", "all", "-j", id, "-o", "%i %T").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("squeue -j %s: %v: %s", id, err, ee.Stderr)
		}
		return nil, err
	}
	var tasks []jobTask
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			tasks = append(tasks, jobTask{f[0], f[1]})
		}
	}
	return tasks, nil
}

// terminal reports whether a job state is final.
func terminal(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
		"OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE":
		return true
	}
	return false
}

// durationArg parses an optional timeout argument.
func durationArg(ts *testscript.TestScript, args []string, i int, def time.Duration) time.Duration {
	if len(args) <= i {
		return def
	}
	d, err := time.ParseDuration(args[i])
	if err != nil {
		ts.Fatalf("bad timeout %q: %v", args[i], err)
	}
	return d
}

// cmdJobwait: jobwait ID STATE [TIMEOUT] waits until every task of job ID
// (array tasks, het components) has ended, then checks that each ended in
// STATE. On a mismatch or a timeout it fails with scontrol's view of the
// job and the tail of its output.
func cmdJobwait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: jobwait ID STATE [TIMEOUT]")
	}
	id, want := args[0], args[1]
	var tasks []jobTask
	finished := func() bool {
		var err error
		tasks, err = queueStates(id)
		ts.Check(err)
		return len(tasks) > 0 && !slices.ContainsFunc(tasks, func(t jobTask) bool { return !terminal(t.state) })
	}
	if !poll(durationArg(ts, args, 2, 4*time.Minute), finished) {
		ts.Fatalf("job %s: still not finished: %v\n%s", id, tasks, jobDiagnosis(id))
	}
	var bad []string
	for _, t := range tasks {
		if t.state != want {
			bad = append(bad, t.id+" "+t.state)
		}
	}
	if len(bad) > 0 {
		ts.Fatalf("job %s: want every task %s, got %s\n%s", id, want, strings.Join(bad, ", "), jobDiagnosis(id))
	}
	ts.Logf("job %s: %d task(s) %s", id, len(tasks), want)
}

// poll calls done every 200 ms until it reports true or timeout passes.
func poll(timeout time.Duration, done func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

// cmdJobstate: jobstate ID STATE [TIMEOUT] waits until some task of job ID
// is in STATE (RUNNING, say).
func cmdJobstate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: jobstate ID STATE [TIMEOUT]")
	}
	id, want := args[0], args[1]
	var tasks []jobTask
	reached := func() bool {
		var err error
		tasks, err = queueStates(id)
		ts.Check(err)
		return slices.ContainsFunc(tasks, func(t jobTask) bool { return t.state == want })
	}
	if !poll(durationArg(ts, args, 2, 2*time.Minute), reached) {
		ts.Fatalf("job %s: no task became %s: %v\n%s", id, want, tasks, jobDiagnosis(id))
	}
}

// jobOutputs returns the StdOut files of a job's tasks, as scontrol says.
func jobOutputs(id string) []string {
	out, _ := exec.Command("scontrol", "show", "job", "-o", id).Output()
	var files []string
	for _, m := range regexp.MustCompile(`StdOut=(\S+)`).FindAllStringSubmatch(string(out), -1) {
		if !slices.Contains(files, m[1]) {
			files = append(files, m[1])
		}
	}
	return files
}

// jobDiagnosis is what a failed wait prints: scontrol's record of the job
// and the last lines of each task's output.
func jobDiagnosis(id string) string {
	var b strings.Builder
	out, _ := exec.Command("scontrol", "show", "job", id).CombinedOutput()
	fmt.Fprintf(&b, "scontrol show job %s:\n%s", id, out)
	for _, f := range jobOutputs(id) {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(&b, "output %s: %v\n", f, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "---- tail of %s:\n%s\n", f, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	return b.String()
}

// cmdJoboutput: joboutput ID copies the output of job ID (all its tasks, in
// task order) to stdout, for the stdout and cmp commands.
func cmdJoboutput(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: joboutput ID")
	}
	files := jobOutputs(args[0])
	if len(files) == 0 {
		ts.Fatalf("job %s: scontrol names no output file", args[0])
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		ts.Check(err)
		ts.Stdout().Write(data)
	}
}

// cmdSuccessor: successor VAR ID sets $VAR to the job that job ID queued to
// resume it (auto-resume), read from its output's "successor job N" line.
func cmdSuccessor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: successor VAR ID")
	}
	re := regexp.MustCompile(`successor job (\d+) waits`)
	for _, f := range jobOutputs(args[1]) {
		data, err := os.ReadFile(f)
		ts.Check(err)
		if m := re.FindSubmatch(data); m != nil {
			ts.Setenv(args[0], string(m[1]))
			return
		}
	}
	ts.Fatalf("job %s queued no successor\n%s", args[1], jobDiagnosis(args[1]))
}

// contentRow is the part of a result row that must not depend on how the
// run was scheduled: everything but latency and attempts.
type contentRow struct {
	Row      results.Row
	Response string
}

// String shows a row with Correct dereferenced.
func (c contentRow) String() string {
	correct := "null"
	if c.Row.Correct != nil {
		correct = strconv.FormatBool(*c.Row.Correct)
	}
	r := c.Row
	r.Correct = nil
	return fmt.Sprintf("%+v correct=%s response=%q", r, correct, c.Response)
}

func readContent(ts *testscript.TestScript, dir string) map[string]contentRow {
	rows, _, err := results.ReadRows(filepath.Join(dir, "results.parquet"))
	ts.Check(err)
	trajs, _, err := results.ReadTrajectories(filepath.Join(dir, "trajectories.parquet"))
	ts.Check(err)
	if len(trajs) != len(rows) {
		ts.Fatalf("%s: %d rows but %d trajectories", dir, len(rows), len(trajs))
	}
	resp := make(map[string]string, len(trajs))
	for _, t := range trajs {
		resp[fmt.Sprintf("%s/%d", t.ItemID, t.Repeat)] = t.Response
	}
	m := make(map[string]contentRow, len(rows))
	for _, r := range rows {
		k := fmt.Sprintf("%s/%d", r.ItemID, r.Repeat)
		if _, dup := m[k]; dup {
			ts.Fatalf("%s: sample %s appears twice", dir, k)
		}
		r.LatencyMS, r.Attempts = 0, 0
		m[k] = contentRow{r, resp[k]}
	}
	return m
}

// cmdSamerows: samerows DIR1 DIR2 checks that two merged benchmark
// directories hold the same samples with the same content (responses,
// extractions, rewards, scores, tokens, seeds), whatever their order,
// latencies and attempts.
func cmdSamerows(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: samerows DIR1 DIR2")
	}
	a, b := readContent(ts, ts.MkAbs(args[0])), readContent(ts, ts.MkAbs(args[1]))
	var diffs []string
	for k, ra := range a {
		rb, ok := b[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s only in %s", k, args[0]))
		case !reflect.DeepEqual(ra, rb):
			diffs = append(diffs, fmt.Sprintf("%s differs:\n  %s\n  %s", k, ra, rb))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s only in %s", k, args[1]))
		}
	}
	slices.Sort(diffs)
	switch {
	case neg && len(diffs) == 0:
		ts.Fatalf("%s and %s hold the same %d samples", args[0], args[1], len(a))
	case !neg && len(diffs) > 0:
		ts.Fatalf("%s and %s differ in %d samples:\n%s", args[0], args[1], len(diffs), strings.Join(diffs[:min(len(diffs), 10)], "\n"))
	}
	ts.Logf("%d samples", len(a))
}

// cmdRows: rows DIR prints a summary of a merged benchmark directory's rows
// for the stdout command:
//
//	rows N            rows in results.parquet
//	samples N         distinct (item, repeat)
//	correct N         rows with reward 1
//	interrupted N     rows with attempts > 1
//	max_attempts N
func cmdRows(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: rows DIR")
	}
	rows, _, err := results.ReadRows(filepath.Join(ts.MkAbs(args[0]), "results.parquet"))
	ts.Check(err)
	keys := map[string]bool{}
	var correct, interrupted, maxAttempts int64
	for _, r := range rows {
		keys[fmt.Sprintf("%s/%d", r.ItemID, r.Repeat)] = true
		if r.Reward == 1 {
			correct++
		}
		if r.Attempts > 1 {
			interrupted++
		}
		maxAttempts = max(maxAttempts, r.Attempts)
	}
	fmt.Fprintf(ts.Stdout(), "rows %d\nsamples %d\ncorrect %d\ninterrupted %d\nmax_attempts %d\n",
		len(rows), len(keys), correct, interrupted, maxAttempts)
}

// cmdNosecret: nosecret VALUE PATH... fails if any file under the paths
// (directories are walked) contains VALUE; Parquet files are searched
// decoded (their pages are compressed), every string cell and metadata
// value. Every path must exist, so a typo cannot pass for a clean result.
func cmdNosecret(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: nosecret VALUE PATH...")
	}
	secret := []byte(args[0])
	if len(secret) < 8 {
		ts.Fatalf("nosecret: a value of %d bytes would match by chance", len(secret))
	}
	files := 0
	for _, p := range args[1:] {
		err := filepath.WalkDir(ts.MkAbs(p), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			files++
			if strings.HasSuffix(path, ".parquet") {
				return parquetHolds(path, args[0])
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			for n := 1; sc.Scan(); n++ {
				if bytes.Contains(sc.Bytes(), secret) {
					return fmt.Errorf("%s:%d holds the secret", path, n)
				}
			}
			return sc.Err()
		})
		ts.Check(err)
	}
	ts.Logf("secret in none of %d files", files)
}

// parquetHolds fails if a results or trajectories file holds secret in any
// cell or metadata value.
func parquetHolds(path, secret string) error {
	var cells []any
	var meta map[string]string
	var err error
	if strings.HasSuffix(path, "trajectories.parquet") {
		var ts []results.Trajectory
		ts, meta, err = results.ReadTrajectories(path)
		for _, t := range ts {
			cells = append(cells, t)
		}
	} else {
		var rs []results.Row
		rs, meta, err = results.ReadRows(path)
		for _, r := range rs {
			cells = append(cells, r)
		}
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for k, v := range meta {
		if strings.Contains(v, secret) {
			return fmt.Errorf("%s: metadata %s holds the secret", path, k)
		}
	}
	for i, c := range cells {
		if strings.Contains(fmt.Sprintf("%+v", c), secret) {
			return fmt.Errorf("%s: row %d holds the secret", path, i)
		}
	}
	return nil
}

// cmdWaitgrep: waitgrep FILE REGEXP [TIMEOUT] waits until FILE exists and
// has a line matching REGEXP: something a running job writes.
func cmdWaitgrep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: waitgrep FILE REGEXP [TIMEOUT]")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	found := func() bool {
		data, err := os.ReadFile(ts.MkAbs(args[0]))
		return err == nil && re.Match(data)
	}
	if !poll(durationArg(ts, args, 2, 2*time.Minute), found) {
		ts.Fatalf("%s: no line matches %s", args[0], args[1])
	}
}
