package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The local engine runs each job under bubblewrap (Debian's `bubblewrap`
// package):
//
//   - every namespace unshared (network, pid, ipc, uts, cgroup, user), so
//     the program sees no network but a loopback of its own, and only its
//     own processes;
//   - inside, the unprivileged uid/gid 65534 with every capability dropped,
//     in a new session, killed with bubblewrap's parent;
//   - a read-only root holding only /usr (with the /bin, /lib… links or
//     directories beside it), the Python interpreter's prefix, a private
//     /proc and /dev, a 64 MiB private /tmp and a fresh host directory
//     bound at /work, the working directory, removed after the job;
//   - an environment of PATH, HOME=/work, LANG, TMPDIR, Config.Env and
//     Job.Env only;
//   - rlimits (address space, processes, file size, CPU seconds, open
//     files, no core dumps) set by util-linux prlimit(1) inside the
//     sandbox just before it execs the program, and when running as root a
//     pids cgroup per job, since root is exempt from RLIMIT_NPROC;
//   - a wall-clock timeout and an output cap, after which bubblewrap is
//     killed and, its pid namespace's init (a shell, the program's parent)
//     gone, every process with it.
type local struct {
	name   string
	log    *slog.Logger
	lim    limits
	slots  slots
	env    map[string]string
	bwrap  string
	prlim  string
	args   []string // bubblewrap's arguments up to the work dir binding
	path   string   // PATH inside the sandbox
	cgroup *pidsCgroup
}

// sandboxUID is the uid and gid a program runs as inside the sandbox
// (nobody).
const sandboxUID = "65534"

func openLocal(ctx context.Context, name string, cfg Config) (*local, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: local: bwrap (Debian package bubblewrap) is not on PATH: %w", name, ErrUnavailable)
	}
	prlim, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: local: prlimit (util-linux) is not on PATH: %w", name, ErrUnavailable)
	}
	if prlim, err = filepath.EvalSymlinks(prlim); err != nil {
		return nil, fmt.Errorf("sandbox %s: local: prlimit: %w", name, ErrUnavailable)
	}
	l := &local{
		name:  name,
		log:   cfg.Logger,
		lim:   limitsOf(cfg),
		slots: make(slots, concurrency(cfg)),
		env:   cfg.Env,
		bwrap: bwrap,
		prlim: prlim,
	}
	py, err := findPython(ctx, cfg.Python)
	if err != nil {
		if cfg.Python != "" {
			return nil, fmt.Errorf("sandbox %s: local: %w: %w", name, err, ErrUnavailable)
		}
		l.log.Warn("no python3 for the sandbox", "sandbox", name, "err", err)
	}
	l.args, l.path = bwrapArgs(py, l.lim)
	if os.Geteuid() == 0 {
		if l.cgroup = findPidsCgroup(); l.cgroup == nil {
			l.log.Warn("running as root without a writable pids cgroup: the process limit is not enforced, a fork bomb runs until the timeout", "sandbox", name)
		}
	}
	// Probe once with the real machinery: bubblewrap may be installed but
	// unable to make namespaces here (a container without user namespaces).
	res, err := l.Run(ctx, Job{Command: []string{"true"}, Timeout: 30 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: local: %w: %w", name, err, ErrUnavailable)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("sandbox %s: local: bwrap cannot run a program here (exit %d): %s: %w",
			name, res.ExitCode, strings.TrimSpace(string(res.Stderr)), ErrUnavailable)
	}
	return l, nil
}

func (l *local) Name() string { return l.name }
func (l *local) Close() error { return nil }

// python is an interpreter the sandbox exposes.
type python struct {
	bin      string   // directory of the interpreter, put first on PATH
	prefixes []string // directories bound read-only (outside /usr)
}

// findPython asks the interpreter (python3 on PATH when exe is "") where it
// lives. A pyenv or conda python3 on PATH is a shim or lives outside /usr:
// its sys.executable names the real binary and sys.prefix/base_prefix the
// trees it loads from, which the sandbox binds read-only at the same
// paths. Nothing else of the host's home directories is visible.
func findPython(ctx context.Context, exe string) (*python, error) {
	if exe == "" {
		exe = "python3"
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "-c", "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix)").Output()
	if err != nil {
		return nil, fmt.Errorf("python %s: %w", exe, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || !filepath.IsAbs(lines[0]) {
		return nil, fmt.Errorf("python %s: unexpected sys.executable/prefix: %q", exe, out)
	}
	py := &python{bin: filepath.Dir(lines[0])}
	for _, p := range lines[1:] {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if p == "/usr" || strings.HasPrefix(p, "/usr/") || slices.Contains(py.prefixes, p) {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			py.prefixes = append(py.prefixes, p)
		}
	}
	// The executable may itself be a symlink into another tree (a venv).
	if real, err := filepath.EvalSymlinks(lines[0]); err == nil && !strings.HasPrefix(real, "/usr/") {
		if d := filepath.Dir(filepath.Dir(real)); !slices.ContainsFunc(py.prefixes, func(p string) bool { return strings.HasPrefix(real, p+"/") }) {
			py.prefixes = append(py.prefixes, d)
		}
	}
	return py, nil
}

// bwrapArgs builds bubblewrap's fixed arguments and the sandbox's PATH.
func bwrapArgs(py *python, lim limits) ([]string, string) {
	a := []string{
		"--unshare-all", "--unshare-user",
		"--uid", sandboxUID, "--gid", sandboxUID,
		"--hostname", "sandbox",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr",
	}
	// On a merged-/usr system /bin, /lib… are links into /usr; elsewhere
	// they are directories of their own.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	// The dynamic loader's cache: without it a library in a multiarch
	// directory is found only by the loader's built-in search.
	a = append(a, "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache")
	path := "/usr/local/bin:/usr/bin:/bin"
	if py != nil {
		for _, p := range py.prefixes {
			a = append(a, "--ro-bind", p, p)
		}
		if !slices.Contains(strings.Split(path, ":"), py.bin) {
			path = py.bin + ":" + path
		}
	}
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
	)
	return a, path
}

// jobEnv is a command's whole environment: the sandbox's defaults (HOME
// is home), the Config's, then the command's own.
func (l *local) jobEnv(home string, own map[string]string) map[string]string {
	env := map[string]string{
		"PATH":   l.path,
		"HOME":   home,
		"LANG":   "C.UTF-8",
		"TMPDIR": "/tmp",
	}
	maps.Copy(env, l.env)
	maps.Copy(env, own)
	return env
}

// argv is the command line that runs a job whose work dir is wd: a
// private 64 MiB /tmp of its own, and the work dir at /work.
func (l *local) argv(job Job, wd string, timeout time.Duration) []string {
	mounts := []string{
		"--size", strconv.FormatInt(tmpBytes, 10), "--tmpfs", "/tmp",
		"--bind", wd, "/work",
	}
	return l.bwrapArgv(mounts, "/work", l.jobEnv("/work", job.Env), timeout, job.Command)
}

// bwrapArgv is the command line that runs command under bubblewrap with
// the fixed arguments, the writable mounts, the working directory dir and
// exactly the environment env.
func (l *local) bwrapArgv(mounts []string, dir string, env map[string]string, timeout time.Duration, command []string) []string {
	a := append([]string{l.bwrap}, l.args...)
	a = append(a, mounts...)
	a = append(a, "--chdir", dir, "--clearenv")
	for _, k := range slices.Sorted(maps.Keys(env)) {
		a = append(a, "--setenv", k, env[k])
	}
	// The root stays a read-only tmpfs: nothing but the mounts can be
	// written.
	a = append(a, "--remount-ro", "/")
	// bubblewrap's own init process outlives the outer bwrap by a moment
	// and is orphaned to the host's pid 1 (or to nel-run, when it is a
	// container's pid 1), which may never reap it: every job would leave a
	// zombie. A shell as the namespace's pid 1 instead is reaped by the
	// outer bwrap; it is not the program itself because pid 1 ignores
	// signals it has no handler for (SIGXCPU, a program's SIGTERM to
	// itself). The shell passes the program's status on (128+N for
	// signal N), and when it dies the kernel kills the whole namespace.
	a = append(a, "--as-pid-1", "--", "/bin/sh", "-c", `"$@"; exit $?`, "sh")
	a = append(a, l.lim.prlimitArgv(l.prlim, timeout)...)
	return append(a, command...)
}

// Errors that stop a job, as context causes.
var (
	errTimeout   = errors.New("wall-clock timeout")
	errOutputCap = errors.New("output limit")
)

func (l *local) Run(ctx context.Context, job Job) (*Result, error) {
	if len(job.Command) == 0 {
		return nil, fmt.Errorf("sandbox %s: empty command", l.name)
	}
	if err := l.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", l.name, err)
	}
	defer l.slots.release()

	wd, err := newWorkDir("", job.Files)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", l.name, err)
	}
	defer func() {
		if err := wd.remove(); err != nil {
			l.log.Warn("sandbox cleanup", "sandbox", l.name, "err", err)
		}
	}()

	timeout := l.lim.jobTimeout(job)
	res, err := l.exec(ctx, l.argv(job, wd.path, timeout), job.Stdin, timeout)
	if err != nil {
		return nil, err
	}
	if res.Files, err = wd.collect(job.Collect, l.lim.fileSize); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", l.name, err)
	}
	return res, nil
}

// exec runs one bubblewrap command line (argv from bwrapArgv) to its end,
// its timeout or its output cap, in a pids cgroup of its own when running
// as root, and names the limit that stopped it.
func (l *local) exec(ctx context.Context, argv []string, stdin []byte, timeout time.Duration) (*Result, error) {
	var cg *cgroupJob
	if l.cgroup != nil {
		// pids.max counts every task of the job: bubblewrap, the
		// sandbox's shell and the program's own.
		var err error
		if cg, err = l.cgroup.newJob(l.lim.procs + 2); err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", l.name, err)
		}
		defer func() {
			cg.kill()
			if err := cg.remove(); err != nil {
				l.log.Warn("sandbox cleanup", "sandbox", l.name, "err", err)
			}
		}()
		// The shell joins the cgroup before it execs bubblewrap, so every
		// process of the job is in it from the first fork.
		argv = append([]string{"/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, cg.procsFile()}, argv...)
	}

	var kill func()
	if cg != nil {
		kill = cg.kill
	}
	// bubblewrap itself needs nothing from the host's environment. Killing
	// its process group (the outer bwrap, and the shell) kills the pid
	// namespace's init, and with it every process of the sandbox.
	out, err := runCLI(ctx, cliJob{
		argv: argv, env: []string{}, stdin: stdin,
		timeout: timeout, output: l.lim.output, kill: kill,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", l.name, err)
	}
	res := out.res
	out.info.forkLimit = cg != nil && cg.forkRefused()
	res.Limit = classify(out.info, res.Stderr)
	return res, nil
}

// OpenSession opens a session: every command runs under a fresh
// bubblewrap, as a job does, with the session's app, logs and tmp bound
// writable at /app, /logs and /tmp (and the tests read-only at /tests for a
// WithTests command). Nothing outlives its command: when the command's
// shell ends, the pid namespace and every process in it go.
func (l *local) OpenSession(ctx context.Context, spec SessionSpec) (Session, error) {
	s, _, err := newSession(l.name, "", spec, false)
	if err != nil {
		return nil, err
	}
	s.run, s.hostAccess = l.sessionRun, true
	return s, nil
}

// sessionArgv is the bubblewrap command line of one session command.
func (l *local) sessionArgv(d sessionDir, c sessionCmd, timeout time.Duration) []string {
	mounts := sessionMounts(d, c,
		func(host, dst string) []string { return []string{"--bind", host, dst} },
		func(host, dst string) []string { return []string{"--ro-bind", host, dst} })
	// After the session's own mounts, so that a path under /tmp is not
	// hidden by the session's /tmp.
	for _, p := range c.ReadOnly {
		mounts = append(mounts, "--ro-bind", p, p)
	}
	if c.Network {
		// After --unshare-all: bubblewrap keeps the network namespace.
		mounts = append(mounts, "--share-net")
	}
	// HOME is /tmp, not /app, so that the dotfiles tools leave do not
	// land among the task's files the verifier inspects.
	return l.bwrapArgv(mounts, c.dir, l.jobEnv(SessionTmp, c.Env), timeout, c.Argv)
}

func (l *local) sessionRun(ctx context.Context, d sessionDir, c sessionCmd) (*Result, error) {
	if err := l.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", l.name, err)
	}
	defer l.slots.release()
	timeout := l.lim.jobTimeout(Job{Timeout: c.timeout})
	return l.exec(ctx, l.sessionArgv(d, c, timeout), c.Stdin, timeout)
}
