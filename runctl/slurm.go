package runctl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/rundir"
)

// jobIDPattern is a SLURM job id as users give it: 123, an array task
// 123_4, or a heterogeneous component 123+1.
var jobIDPattern = regexp.MustCompile(`^[0-9]+([_+][0-9]+)?$`)

// IsJobID reports whether s reads as a SLURM job id.
func IsJobID(s string) bool { return jobIDPattern.MatchString(s) }

// ReadJobs returns the job ids recorded in the folder (rundir.Dir.Jobs),
// each once, in the order they were recorded; none when there is no
// record (a local run).
func ReadJobs(d rundir.Dir) ([]string, error) {
	b, err := os.ReadFile(d.Jobs())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		id := strings.TrimSpace(sc.Text())
		if IsJobID(id) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Job is one SLURM job (or array task) as squeue or sacct report it.
type Job struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"` // PENDING, RUNNING, COMPLETED, CANCELLED, ...
	// Elapsed is the time it ran; Reason why a pending job waits, or its
	// exit code once it ended.
	Elapsed string `json:"elapsed,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Active reports whether the job is queued or running (scancel stops it).
func (j Job) Active() bool {
	state, _, _ := strings.Cut(j.State, " ") // sacct: "CANCELLED by 0"
	switch state {
	case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "STOPPED":
		return true
	}
	return false
}

// Slurm runs the SLURM commands. Its zero value runs them from PATH.
type Slurm struct{}

func (Slurm) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.String(), fmt.Errorf("%s %s: %s", name, strings.Join(args, " "), msg)
	}
	return out.String(), nil
}

// Jobs reports the jobs ids name (array jobs task by task): the queued and
// running ones from squeue, the others from sacct. A job neither knows is
// reported with state UNKNOWN and why.
func (s Slurm) Jobs(ctx context.Context, ids []string) ([]Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if _, err := exec.LookPath("squeue"); err != nil {
		return nil, fmt.Errorf("cannot ask SLURM about jobs %s: squeue is not on PATH (run this on a login node of the cluster)", strings.Join(ids, ", "))
	}
	list := strings.Join(ids, ",")
	var jobs []Job
	// squeue refuses the whole list when a job in it has left the queue
	// ("Invalid job id specified"): then every job is asked one by one.
	// Any other failure (no controller, no configuration) means SLURM
	// cannot be asked, which is not "nothing runs".
	out, err := s.run(ctx, "squeue", "-h", "-r", "-j", list, "-o", "%i|%j|%T|%M|%r")
	if err != nil && !strings.Contains(err.Error(), "Invalid job id") {
		return nil, fmt.Errorf("cannot ask SLURM about jobs %s: %w", strings.Join(ids, ", "), err)
	}
	if err != nil && len(ids) > 1 {
		out = ""
		for _, id := range ids {
			o, _ := s.run(ctx, "squeue", "-h", "-r", "-j", id, "-o", "%i|%j|%T|%M|%r")
			out += o
		}
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 5 {
			continue
		}
		jobs = append(jobs, Job{ID: f[0], Name: f[1], State: f[2], Elapsed: f[3], Reason: f[4]})
		seen[f[0]] = true
	}
	out, sacctErr := s.run(ctx, "sacct", "-n", "-P", "-X", "-j", list, "-o", "JobID,JobName,State,Elapsed,ExitCode")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 5 || seen[f[0]] {
			continue
		}
		jobs = append(jobs, Job{ID: f[0], Name: f[1], State: f[2], Elapsed: f[3], Reason: "exit " + f[4]})
		seen[f[0]] = true
	}
	// In the order the run recorded them (squeue lists pending jobs first).
	slices.SortStableFunc(jobs, func(a, b Job) int { return recorded(ids, a.ID) - recorded(ids, b.ID) })
	for _, id := range ids {
		if !seen[id] && !seenTask(seen, id) {
			why := "neither squeue nor sacct knows it"
			if sacctErr != nil {
				why = "not in the queue; " + sacctErr.Error()
			}
			jobs = append(jobs, Job{ID: id, State: "UNKNOWN", Reason: why})
		}
	}
	return jobs, nil
}

// recorded is the position in ids of the job that job id (a task or
// component of it) belongs to.
func recorded(ids []string, id string) int {
	for i, r := range ids {
		if id == r || strings.HasPrefix(id, r+"_") || strings.HasPrefix(id, r+"+") {
			return i
		}
	}
	return len(ids)
}

// seenTask reports whether a task or component of job id was reported.
func seenTask(seen map[string]bool, id string) bool {
	for k := range seen {
		if strings.HasPrefix(k, id+"_") || strings.HasPrefix(k, id+"+") {
			return true
		}
	}
	return false
}

// Output is the file job id writes its output to, "" when SLURM no longer
// knows the job.
func (s Slurm) Output(ctx context.Context, id string) string {
	out, err := s.run(ctx, "scontrol", "show", "job", "-o", id)
	if err != nil {
		return ""
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "StdOut="); ok {
			return v
		}
	}
	return ""
}

// Cancel cancels the jobs (scancel).
func (s Slurm) Cancel(ctx context.Context, ids []string) error {
	_, err := s.run(ctx, "scancel", ids...)
	return err
}
