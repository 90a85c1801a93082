package serve

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// What nel knows of other processes comes from Linux's /proc. Elsewhere
// these functions fail (there is no /proc, or not in this format), and a
// process that cannot be identified is never killed.

// procRoot is where the process table is read.
const procRoot = "/proc"

// errNoProc says that /proc cannot tell what is needed.
var errNoProc = errors.New("no Linux /proc to identify processes")

// procID identifies one process over time: a pid is reused once its
// process is gone, its start time (clock ticks after boot) on one boot is
// not.
type procID struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot"`
}

// procInfo is what /proc/PID/stat says of a process.
type procInfo struct {
	pid, pgid int
	start     uint64 // clock ticks after boot
	zombie    bool   // exited (or exiting), not yet reaped by its parent
}

// parseStat reads /proc/PID/stat's line: "pid (comm) state ppid pgrp ...",
// where comm may itself hold ") ", so fields are counted from the last ')'.
func parseStat(data []byte) (procInfo, error) {
	s := string(data)
	lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if lp < 0 || rp < lp {
		return procInfo{}, fmt.Errorf("malformed stat %q", s)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:lp]))
	if err != nil {
		return procInfo{}, fmt.Errorf("malformed stat %q", s)
	}
	// After comm: state(3) ppid(4) pgrp(5) ... starttime(22), man 5 proc.
	f := strings.Fields(s[rp+1:])
	if len(f) < 20 {
		return procInfo{}, fmt.Errorf("malformed stat %q", s)
	}
	pgid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procInfo{}, fmt.Errorf("malformed stat %q", s)
	}
	return procInfo{pid: pid, pgid: pgid, start: start, zombie: f[0] == "Z" || f[0] == "X"}, nil
}

func readStat(pid int) (procInfo, error) {
	data, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	return parseStat(data)
}

// bootID names this boot of the machine: start times count from it.
func bootID() (string, error) {
	b, err := os.ReadFile(procRoot + "/sys/kernel/random/boot_id")
	if err != nil {
		return "", errNoProc
	}
	return strings.TrimSpace(string(b)), nil
}

// identify returns the identity of the live process pid.
func identify(pid int) (procID, error) {
	boot, err := bootID()
	if err != nil {
		return procID{}, err
	}
	st, err := readStat(pid)
	if err != nil {
		return procID{}, err
	}
	if st.zombie {
		return procID{}, fmt.Errorf("process %d has exited", pid)
	}
	return procID{PID: pid, Start: st.start, Boot: boot}, nil
}

// isProcess reports whether id is still a live process (not a later one
// that got its pid).
func isProcess(id procID) bool {
	cur, err := identify(id.PID)
	return err == nil && cur == id
}

// processes lists the live processes /proc shows.
func processes() ([]procInfo, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, errNoProc
	}
	var ps []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.zombie {
			continue // gone meanwhile
		}
		ps = append(ps, st)
	}
	return ps, nil
}

// hasEnv reports whether pid's environment holds the variable kv
// ("NAME=value"). A process of another user cannot be read, so it is not
// ours.
func hasEnv(pid int, kv string) bool {
	data, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for v := range bytes.SplitSeq(data, []byte{0}) {
		if string(v) == kv {
			return true
		}
	}
	return false
}

// cmdline is pid's command line, for messages ("" when unknown).
func cmdline(pid int) string {
	data, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// listeners returns the pids of the processes holding a TCP socket that
// listens on port (any address, IPv4 or IPv6): the sockets' inodes from
// /proc/net/tcp{,6}, then the processes whose fds are those sockets.
func listeners(port int) ([]int, error) {
	inodes := map[string]bool{}
	found := false
	for _, f := range []string{"/net/tcp", "/net/tcp6"} {
		data, err := os.ReadFile(procRoot + f)
		if err != nil {
			continue
		}
		found = true
		// "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ..."
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
	}
	if !found {
		return nil, errNoProc
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	ps, err := processes()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range ps {
		dir := procRoot + "/" + strconv.Itoa(p.pid) + "/fd"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // another user's: cannot tell
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + "/" + fd.Name()); err == nil && inodes[l] {
				pids = append(pids, p.pid)
				break
			}
		}
	}
	return pids, nil
}
