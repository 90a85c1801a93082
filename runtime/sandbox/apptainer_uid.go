package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// When nel runs as root, the apptainer sandbox runs every job, and every
// session's commands, as an unprivileged uid of its own (`--security
// uid:N,gid:N`), never as root.
//
// Why: apptainer as root makes no user namespace, so the container's uid
// 0 is the host's. --no-privs drops its capabilities, but uid 0 still
// owns /proc/sys and /sys, mounted read-write: model code could set
// kernel.core_pattern to a pipe and be host root at the next crash.
// --fakeroot and --userns would give the container a namespace of its
// own, but need capabilities that some nodes' bounding sets lack. And the
// kernel does not count uid 0's processes against RLIMIT_NPROC, so as
// root the process limit did not hold.
//
// Why a uid per job, not one shared uid (nobody): RLIMIT_NPROC counts
// every process of the uid on the host, so jobs sharing one would share
// one process limit, and a fork bomb in one would fail the others.
//
// The uids are sandboxUIDBase to sandboxUIDBase+sandboxUIDCount-1, far
// above the ranges that distributions give users (1000–60000), systemd's
// dynamic users (61184–65519) and the usual /etc/subuid ranges (from
// 100000, 65536 per user), and below 2^31 so that no tool reads one as
// negative. Nothing else on a node may use them: a process of such a uid
// would share a job's process limit. nel-run processes on one node share
// the range safely: each uid in use is held by an flock on a file of its
// own in a root-only folder (uidLockDir), which the kernel releases when
// its holder exits, however it exits; and a uid that still owns a
// process (a container left by a nel-run that was killed) is skipped.
const (
	sandboxUIDBase  = 2_100_000_000
	sandboxUIDCount = 65536
)

// uidLockDir is the folder of the uids' lock files: under /run (a tmpfs
// only root writes) where it exists, else the temporary folder.
func uidLockDir() string {
	if fi, err := os.Stat("/run"); err == nil && fi.IsDir() {
		return "/run/nel-sandbox-uids"
	}
	return filepath.Join(os.TempDir(), "nel-sandbox-uids")
}

// uidPool hands out the sandbox's uids, the lowest free one first, so
// that the lock files are about as many as the jobs that ever ran at once.
type uidPool struct {
	dir string
}

// heldUID is one uid held for a job or a session.
type heldUID struct {
	uid  int
	lock *os.File
}

// release gives the uid back: its lock file is closed (the flock goes
// with it). The file stays, for the next holder.
func (u *heldUID) release() {
	if u != nil && u.lock != nil {
		u.lock.Close()
		u.lock = nil
	}
}

// securityArgv is the apptainer option that runs the container as u.
func (u *heldUID) securityArgv() []string {
	if u == nil {
		return nil
	}
	n := strconv.Itoa(u.uid)
	return []string{"--security", "uid:" + n + ",gid:" + n}
}

// get holds a free uid of the range.
func (p *uidPool) get() (*heldUID, error) {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox uids: %w", err)
	}
	// The folder must be root's alone: whoever could write it could
	// replace a lock file and make two jobs share a uid.
	fi, err := os.Lstat(p.dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox uids: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("sandbox uids: %s must be a folder of root's that no one else may write (mode %v)", p.dir, fi.Mode())
	}
	busy := uidsWithProcesses()
	for n := range sandboxUIDCount {
		uid := sandboxUIDBase + n
		if busy[uid] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(p.dir, strconv.Itoa(uid)), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("sandbox uids: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return nil, fmt.Errorf("sandbox uids: lock %d: %w", uid, err)
		}
		return &heldUID{uid: uid, lock: f}, nil
	}
	return nil, fmt.Errorf("sandbox uids: all %d uids from %d are in use", sandboxUIDCount, sandboxUIDBase)
}

// uidsWithProcesses are the sandbox range's uids that own a process now
// (the owner of /proc/PID is the process's effective uid).
func uidsWithProcesses() map[int]bool {
	busy := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || !e.IsDir() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid >= sandboxUIDBase && st.Uid < sandboxUIDBase+sandboxUIDCount {
			busy[int(st.Uid)] = true
		}
	}
	return busy
}

// chownTree gives root and everything under it (links themselves, not
// what they point to) to u, so that the container's user may write
// there; nel, as root, still reads and removes it all.
func (u *heldUID) chownTree(root string) error {
	if u == nil {
		return nil
	}
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.uid, u.uid)
	})
}

// stripUIDWarnings removes from stderr, what apptainer wrote before the
// program started (never the program's own), the warnings SingularityCE
// prints that u is in no passwd file of the host.
func (u *heldUID) stripUIDWarnings(stderr []byte) []byte {
	if u == nil {
		return stderr
	}
	line := "WARNING: user: unknown userid " + strconv.Itoa(u.uid) + "\n"
	return []byte(strings.ReplaceAll(string(stderr), line, ""))
}
