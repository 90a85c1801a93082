package sandbox

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidsCgroup is the pids cgroup under which the local engine puts each
// job. It exists because RLIMIT_NPROC does not bind a process whose real
// user is root outside its user namespace (the kernel exempts INIT_USER),
// which is what bubblewrap's user namespace gives when nel-run runs as
// root: there a fork bomb is held by pids.max instead.
type pidsCgroup struct {
	dir string // the process's own pids cgroup directory
}

// findPidsCgroup locates the writable pids cgroup of this process (cgroup
// v1's pids hierarchy, or v2 when pids is enabled for its children). It
// returns nil when there is none or it cannot be written.
func findPidsCgroup() *pidsCgroup {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var v1Path, v2Path string
	hasV1Path, hasV2Path := false, false
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, hasV2Path = parts[2], true
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "pids" {
				v1Path, hasV1Path = parts[2], true
			}
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(mounts))
	var candidates []string
	for sc.Scan() {
		// id parent major:minor root mountpoint opts… - fstype source superopts
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 >= len(f) {
			continue
		}
		root, mnt, fstype, super := f[3], f[4], f[sep+1], f[sep+3]
		rel := func(p string) (string, bool) {
			r, err := filepath.Rel(root, p)
			if err != nil || strings.HasPrefix(r, "..") {
				return "", false
			}
			return filepath.Join(mnt, r), true
		}
		switch {
		case fstype == "cgroup" && hasV1Path && hasOpt(super, "pids"):
			if d, ok := rel(v1Path); ok {
				candidates = append(candidates, d)
			}
		case fstype == "cgroup2" && hasV2Path:
			if d, ok := rel(v2Path); ok {
				if ctl, err := os.ReadFile(filepath.Join(d, "cgroup.subtree_control")); err == nil && hasOpt(strings.ReplaceAll(strings.TrimSpace(string(ctl)), " ", ","), "pids") {
					candidates = append(candidates, d)
				}
			}
		}
	}
	for _, d := range candidates {
		g := &pidsCgroup{dir: d}
		if j, err := g.newJob(1); err == nil {
			j.remove()
			return g
		}
	}
	return nil
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// cgroupJob is one job's pids cgroup.
type cgroupJob struct {
	dir string
}

// newJob makes a child cgroup allowing max processes.
func (g *pidsCgroup) newJob(max int) (*cgroupJob, error) {
	var b [8]byte
	rand.Read(b[:])
	dir := filepath.Join(g.dir, "nel-sandbox-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pids cgroup: %w", err)
	}
	j := &cgroupJob{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		j.remove()
		return nil, fmt.Errorf("pids cgroup: %w", err)
	}
	return j, nil
}

// procsFile is where a process writes its pid to join the cgroup.
func (j *cgroupJob) procsFile() string { return filepath.Join(j.dir, "cgroup.procs") }

// forkRefused reports whether pids.max refused a fork.
func (j *cgroupJob) forkRefused() bool {
	data, err := os.ReadFile(filepath.Join(j.dir, "pids.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "max" {
			return f[1] != "0"
		}
	}
	return false
}

// kill sends SIGKILL to every process left in the cgroup: a belt to
// bubblewrap's braces (its pid namespace dies with its init).
func (j *cgroupJob) kill() {
	for range 3 {
		data, err := os.ReadFile(j.procsFile())
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			return
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// remove deletes the cgroup once its processes are gone; killed processes
// leave it a moment after they are reaped.
func (j *cgroupJob) remove() error {
	var err error
	for i := range 1000 {
		if err = os.Remove(j.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if i%100 == 99 {
			j.kill()
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("pids cgroup %s: %w", j.dir, err)
}
