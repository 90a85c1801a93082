package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

// A run records each server it starts in its run folder, so that the next
// run in that folder can stop the servers of one that died without
// stopping them (kill -9, a lost login node): a server left running keeps
// its port, and the same command would fail.

// serverEnv marks a managed server and everything it starts: its value,
// random per server, is in the server's record. It finds the server's
// processes even when they left its process group.
const serverEnv = "NEL_SERVER_ID"

// record is what a run writes of a server it started.
type record struct {
	Service string   `json:"service"`
	Command []string `json:"command"`
	Port    int      `json:"port"`
	// Server is the process nel started, leader of its process group.
	Server procID `json:"server"`
	// Token is the server's serverEnv value.
	Token string `json:"token"`
	// Owner is the nel (or nel-run with-services) that started it: while
	// Owner lives, the server is its business.
	Owner procID `json:"owner"`
}

// writeRecord writes r into dir and returns its path.
func writeRecord(dir string, r *record) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("record server %s: %w", r.Service, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("record server %s: %w", r.Service, err)
	}
	path := filepath.Join(dir, r.Service+"-"+strconv.Itoa(r.Server.PID)+".json")
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return "", fmt.Errorf("record server %s: %w", r.Service, err)
	}
	return path, nil
}

func readRecord(path string) (*record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Token == "" || r.Server.PID <= 0 {
		return nil, fmt.Errorf("%s: not a server record", path)
	}
	return &r, nil
}

// members returns the live processes of r's server among ps: the server
// itself while it is the same process (its pid may have been reused, its
// start time on this boot is not), every process whose environment holds
// r's token (the server's descendants, wherever they went), and, once one
// of those is in the server's process group, every member of that group.
// The last is safe because the kernel does not reuse a number while a
// process has it as its group, so the group is still the server's. A
// process of another user, whose environment cannot be read, is never
// one.
func (r *record) members(ps []procInfo, boot string) []procID {
	var ids []procID
	group := false
	for _, p := range ps {
		id := procID{PID: p.pid, Start: p.start, Boot: boot}
		if id == r.Server || hasEnv(p.pid, serverEnv+"="+r.Token) {
			ids = append(ids, id)
			group = group || p.pgid == r.Server.PID
		}
	}
	if !group {
		return ids
	}
	for _, p := range ps {
		if p.pgid == r.Server.PID && !slices.ContainsFunc(ids, func(id procID) bool { return id.PID == p.pid }) {
			ids = append(ids, procID{PID: p.pid, Start: p.start, Boot: boot})
		}
	}
	return ids
}

// liveMembers reads the process table and returns r's members.
func (r *record) liveMembers() ([]procID, error) {
	boot, err := bootID()
	if err != nil {
		return nil, err
	}
	ps, err := processes()
	if err != nil {
		return nil, err
	}
	return r.members(ps, boot), nil
}

// reap stops the servers recorded in dir whose runs have died, and removes
// their records; a server whose run still lives is left alone. Each
// process gets SIGTERM, and SIGKILL after grace. Where processes cannot
// be identified (no /proc) nothing is stopped.
func reap(ctx context.Context, dir string, grace time.Duration, o StartOptions) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(paths) == 0 {
		return err
	}
	for _, path := range paths {
		r, err := readRecord(path)
		if err != nil {
			o.Logger.Warn("unreadable server record", "path", path, "err", err)
			continue
		}
		if isProcess(r.Owner) {
			continue // its run is still going
		}
		ids, err := r.liveMembers()
		if err != nil {
			o.Logger.Warn("cannot look for a server an earlier run left behind", "service", r.Service, "pid", r.Server.PID, "err", err)
			return nil
		}
		if len(ids) > 0 {
			o.Progress(fmt.Sprintf("stopping server %s (%s) that an earlier run left running on port %d",
				r.Service, pidList(ids), r.Port))
			if err := terminate(ctx, ids, grace); err != nil {
				return fmt.Errorf("stop server %s left running by an earlier run: %w", r.Service, err)
			}
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("stop server %s left running by an earlier run: %w", r.Service, err)
		}
	}
	return nil
}

// terminate sends SIGTERM to ids, SIGKILL after grace to those still
// there, and waits until they are gone.
func terminate(ctx context.Context, ids []procID, grace time.Duration) error {
	signalAll(ids, syscall.SIGTERM)
	if waitGone(ctx, ids, grace) {
		return nil
	}
	signalAll(ids, syscall.SIGKILL)
	if waitGone(ctx, ids, 5*time.Second) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s still running after SIGKILL", pidList(ids))
}

// signalAll sends sig to each of ids that still is that process.
func signalAll(ids []procID, sig os.Signal) {
	for _, id := range ids {
		// The handle is taken before the identity is checked: on Linux it
		// is a pidfd, which keeps naming this process even if it dies and
		// its pid is reused, so the signal cannot reach a newcomer.
		p, err := os.FindProcess(id.PID)
		if err != nil {
			continue
		}
		if isProcess(id) {
			p.Signal(sig)
		}
		p.Release()
	}
}

// waitGone waits up to d until none of ids lives, and reports whether
// none does.
func waitGone(ctx context.Context, ids []procID, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !slices.ContainsFunc(ids, isProcess) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func pidList(ids []procID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id.PID)
	}
	if len(s) == 1 {
		return "pid " + s[0]
	}
	return "pids " + strings.Join(s, ", ")
}

// checkPort returns an error naming what holds port when something
// listens on it: a server started there would exit at once, while the
// holder answered its health checks. The error says which process holds
// it and, when the holder is a server of a run still going in the same
// run folder (recordDir), that run.
func checkPort(port int, recordDir string) error {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err == nil {
		ln.Close()
		return nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil // not ours to judge (a privileged port): the server will say
	}
	pids, perr := listeners(port)
	if perr != nil || len(pids) == 0 {
		return fmt.Errorf("port %d is in use by another process (of another user, or not visible here); stop it or give the service another port", port)
	}
	var holders []string
	for _, pid := range pids {
		h := "pid " + strconv.Itoa(pid)
		if c := cmdline(pid); c != "" {
			h += " (" + c + ")"
		}
		if r := ownRecord(recordDir, pid); r != nil {
			h += fmt.Sprintf(", server %s of the nel run (pid %d) still going in this output folder", r.Service, r.Owner.PID)
		}
		holders = append(holders, h)
	}
	return fmt.Errorf("port %d is in use by %s; stop it or give the service another port", port, strings.Join(holders, "; "))
}

// ownRecord returns the record in dir of a server that pid belongs to, or
// nil.
func ownRecord(dir string, pid int) *record {
	if dir == "" {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, path := range paths {
		r, err := readRecord(path)
		if err != nil {
			continue
		}
		ids, err := r.liveMembers()
		if err == nil && slices.ContainsFunc(ids, func(id procID) bool { return id.PID == pid }) {
			return r
		}
	}
	return nil
}
