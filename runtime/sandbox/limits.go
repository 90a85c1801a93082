package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The limits an engine applies when the Config leaves one at zero. They
// follow NeMo Evaluator's code_sandbox (pids-limit 64, a 30 s timeout) and
// are generous enough for HumanEval-style programs.
const (
	DefaultMemoryBytes      int64 = 2 << 30
	DefaultMaxProcesses           = 64
	DefaultMaxFileSizeBytes int64 = 64 << 20
	DefaultOutputBytes      int64 = 1 << 20
	DefaultTimeout                = 30 * time.Second
	// DefaultOpenFiles is RLIMIT_NOFILE inside the sandbox.
	DefaultOpenFiles = 256
	// tmpBytes is the size of the sandbox's private /tmp.
	tmpBytes int64 = 64 << 20
)

// limits are a Config's limits with the defaults filled in.
type limits struct {
	memory    int64   // bytes of address space (RLIMIT_AS) / container memory
	cpus      float64 // cores (docker --cpus); scales the CPU-seconds limit
	procs     int     // processes (RLIMIT_NPROC, pids cgroup, --pids-limit)
	fileSize  int64   // bytes per file (RLIMIT_FSIZE)
	output    int64   // bytes captured per stream
	timeout   time.Duration
	openFiles int
}

func limitsOf(cfg Config) limits {
	l := limits{
		memory:    cfg.MemoryBytes,
		cpus:      cfg.CPUs,
		procs:     cfg.MaxProcesses,
		fileSize:  cfg.MaxFileSizeBytes,
		output:    cfg.OutputBytes,
		timeout:   cfg.Timeout,
		openFiles: DefaultOpenFiles,
	}
	if l.memory <= 0 {
		l.memory = DefaultMemoryBytes
	}
	if l.cpus <= 0 {
		l.cpus = 1
	}
	if l.procs <= 0 {
		l.procs = DefaultMaxProcesses
	}
	if l.fileSize <= 0 {
		l.fileSize = DefaultMaxFileSizeBytes
	}
	if l.output <= 0 {
		l.output = DefaultOutputBytes
	}
	if l.timeout <= 0 {
		l.timeout = DefaultTimeout
	}
	return l
}

// jobTimeout is the wall-clock limit of one job.
func (l limits) jobTimeout(job Job) time.Duration {
	if job.Timeout > 0 {
		return job.Timeout
	}
	return l.timeout
}

// cpuSeconds is RLIMIT_CPU for a job: the CPU time its cores could use in
// its wall-clock limit, plus a second, so that the wall clock normally
// fires first and RLIMIT_CPU only catches a program whose many threads
// outrun its cores.
func (l limits) cpuSeconds(timeout time.Duration) int64 {
	return int64(math.Ceil(timeout.Seconds()*math.Max(l.cpus, 1))) + 1
}

// prlimitArgv is the util-linux prlimit(1) prefix that sets a job's
// rlimits in the sandbox and execs the program: rlimits must be set in the
// child before it runs, which os/exec cannot do, and setting them in the
// sandbox (after bubblewrap made its user namespace) makes RLIMIT_NPROC
// count the processes of this job's namespace only, not every process of
// the same user on the host.
func (l limits) prlimitArgv(prlimit string, timeout time.Duration) []string {
	return []string{
		prlimit,
		"--as=" + strconv.FormatInt(l.memory, 10),
		"--nproc=" + strconv.Itoa(l.procs),
		"--fsize=" + strconv.FormatInt(l.fileSize, 10),
		"--cpu=" + strconv.FormatInt(l.cpuSeconds(timeout), 10),
		"--nofile=" + strconv.Itoa(l.openFiles),
		"--core=0",
		"--",
	}
}

// programStarts is the line limitScript writes to stderr once every
// limit is set, right before it execs the program. A run whose stderr
// lacks it failed before the program started (apptainer's FATAL error, a
// limit the image's shell could not set): the sandbox's failure, not the
// program's. Once it is written, all that follows is the program's, which
// can print any failure line and exit with any status but cannot
// un-write a line written before it started. (A failure line of the
// sandbox's own, or a secret token to sign it, could be forged: the
// container's init holds its environment, readable by the program.)
//
// limitFailed is what limitScript writes to stderr after "nel-sandbox: ",
// with exit status 125, when the image's shell cannot set a limit.
const (
	programStarts = "nel-sandbox: the limits are set; the program starts"
	limitFailed   = "the image's /bin/sh could not set the job's limits"
	// limitHomeEnv is the program's HOME, which limitScript exports
	// (apptainer's --home does not hold for a uid with no passwd entry).
	limitHomeEnv = "NEL_SANDBOX_HOME"
)

// splitStart finds programStarts' line in stderr: what came before it
// (apptainer's, the shell's), and what came after (the program's).
// started is false when the line is not there.
func splitStart(stderr []byte) (before, after []byte, started bool) {
	line := []byte(programStarts + "\n")
	for i := 0; i <= len(stderr); {
		j := bytes.Index(stderr[i:], line)
		if j < 0 {
			return stderr, nil, false
		}
		j += i
		// The script's line starts a line: apptainer's own lines before
		// it end in a newline.
		if j == 0 || stderr[j-1] == '\n' {
			return stderr[:j], stderr[j+len(line):], true
		}
		i = j + 1
	}
	return stderr, nil, false
}

// limitScript sets a job's rlimits with the shell's ulimit, writes
// programStarts to stderr and execs the program ("$@" after the five
// limits).
//
// Why the shell and not util-linux prlimit(1), as the local engine does:
// many images lack prlimit (busybox and Alpine based ones), and apptainer
// then fails with `FATAL: "prlimit": executable file not found`, while
// every image that runs programs has a /bin/sh with ulimit. A prlimit that
// cannot set a limit (raising a hard limit the node set lower) exits 1,
// which the job's result could not tell from the program's own failure;
// here a failed ulimit never reaches programStarts, and Run turns the
// run into an error, so no sample is scored on a program that never ran.
//
// Invoked as sh, dash, busybox ash and bash (in its POSIX mode) all read
// -v in KiB, -f in 512-byte blocks, -t in seconds and -n, -c unscaled, and
// set both the soft and the hard limit, so that the program cannot raise
// them. Processes are -u in bash and busybox, -p in dash (whose -u is no
// option). An image with no /bin/sh is apptainer's own FATAL error, which
// names it. Values are positional parameters, never part of the script.
//
// RLIMIT_NPROC counts the tasks (threads too) of the user in the
// container's user namespace. Apptainer's default unprivileged mode makes
// one per container, so the limit is the job's own; a setuid install
// (SingularityCE's default) makes none, and the count is every task of
// the user on the node, nel-run's threads and other jobs included; as
// root it would not bind at all, but as root the sandbox runs each job
// as a uid of its own (apptainer_uid.go), whose count is the job's. The
// container's init (sinit, with a few threads) counts against it too.
const limitScript = `as=$1 nproc=$2 fsize=$3 cpu=$4 nofile=$5
shift 5
if [ -n "$` + limitHomeEnv + `" ]; then HOME=$` + limitHomeEnv + `; export HOME; fi
unset ` + limitHomeEnv + `
if ulimit -v $((as / 1024)) && ulimit -f $((fsize / 512)) && ulimit -t "$cpu" &&
	ulimit -n "$nofile" && ulimit -c 0 &&
	{ ulimit -u "$nproc" 2>/dev/null || ulimit -p "$nproc"; }; then
	echo "` + programStarts + `" >&2
	exec "$@"
fi
echo "nel-sandbox: ` + limitFailed + `" >&2
exit 125`

// ulimitArgv is the /bin/sh command line, limitScript with its
// arguments, that sets a job's rlimits in a container whose image may
// lack prlimit(1) and execs the program that follows it.
func (l limits) ulimitArgv(timeout time.Duration) []string {
	return []string{
		"/bin/sh", "-c", limitScript, "sh",
		strconv.FormatInt(l.memory, 10),
		strconv.Itoa(l.procs),
		strconv.FormatInt(l.fileSize, 10),
		strconv.FormatInt(l.cpuSeconds(timeout), 10),
		strconv.Itoa(l.openFiles),
	}
}

// concurrency is how many jobs a sandbox runs at once.
func concurrency(cfg Config) int {
	if cfg.Concurrency > 0 {
		return cfg.Concurrency
	}
	return runtime.NumCPU()
}

// slots bounds the number of jobs in flight.
type slots chan struct{}

// acquire waits for a free slot or for ctx to end.
func (s slots) acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s slots) release() { <-s }

// ParseBytes reads a memory size the way docker and the recipe write it:
// a number with an optional unit b, k, m, g, t (powers of 1024, case
// insensitive, an optional trailing "b" or "ib": "4g", "512MiB", "1.5G").
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || v*float64(mult) > math.MaxInt64 {
		return 0, fmt.Errorf("want a size such as 512m or 4g, found %q", s)
	}
	return int64(v * float64(mult)), nil
}

// Evidence in a program's stderr of the limit that stopped it. A fork
// refused by RLIMIT_NPROC or a pids cgroup fails with EAGAIN; an
// allocation refused by RLIMIT_AS raises MemoryError in Python, ENOMEM
// elsewhere, and bash says its xmalloc/xrealloc cannot allocate; a write
// past RLIMIT_FSIZE fails with EFBIG when SIGXFSZ is ignored.
var (
	forkFailed = [][]byte{
		[]byte("Resource temporarily unavailable"),
		[]byte("BlockingIOError"),
		[]byte("fork: retry"),
	}
	memoryFailed = [][]byte{
		[]byte("MemoryError"),
		[]byte("Cannot allocate memory"),
		[]byte("std::bad_alloc"),
		[]byte("out of memory"),
		// bash's own allocator, refused by RLIMIT_AS.
		[]byte("xmalloc: cannot allocate"),
		[]byte("xrealloc: cannot allocate"),
	}
	fileTooLarge = [][]byte{
		[]byte("File too large"),
	}
)

func containsAny(b []byte, needles [][]byte) bool {
	for _, n := range needles {
		if bytes.Contains(b, n) {
			return true
		}
	}
	return false
}

// exitInfo is how a program ended, as an engine saw it.
type exitInfo struct {
	code      int    // exit status, -1 when a signal ended it
	signal    string // "SIGKILL", …
	timedOut  bool   // our wall clock killed it
	outputCap bool   // our output cap killed it
	forkLimit bool   // the engine knows a fork was refused (pids cgroup events)
	oomKilled bool   // the engine knows the memory limit killed it (docker)
}

// classify names the limit that stopped a program. The evidence that says
// why a program failed wins over how it was stopped: a fork bomb runs
// until the wall clock kills it, but processes is the limit that held it.
// Stderr is only read when the program failed, so a program that prints
// "MemoryError" and exits 0 is not misread.
func classify(e exitInfo, stderr []byte) Limit {
	failed := e.code != 0 || e.signal != ""
	switch {
	case !failed:
		return LimitNone
	case e.forkLimit || containsAny(stderr, forkFailed):
		return LimitProcesses
	case e.oomKilled || containsAny(stderr, memoryFailed):
		return LimitMemory
	case e.signal == "SIGXFSZ" || containsAny(stderr, fileTooLarge):
		return LimitFileSize
	case e.signal == "SIGXCPU":
		return LimitCPU
	case e.timedOut:
		return LimitTimeout
	case e.outputCap:
		return LimitOutput
	}
	return LimitNone
}

// signalName is the conventional name of a signal ("SIGKILL").
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGXCPU:
		return "SIGXCPU"
	case syscall.SIGXFSZ:
		return "SIGXFSZ"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGFPE:
		return "SIGFPE"
	case syscall.SIGILL:
		return "SIGILL"
	}
	return fmt.Sprintf("SIG%d", int(sig))
}

// statusOf reads an exit status: a shell or container runtime reports a
// program killed by signal N as exit status 128+N, which is mapped back to
// the signal so that classification sees it.
func statusOf(code int, sig syscall.Signal, signaled bool) (int, string) {
	if signaled {
		return -1, signalName(sig)
	}
	if code > 128 && code < 128+65 {
		s := syscall.Signal(code - 128)
		switch s {
		case syscall.SIGKILL, syscall.SIGTERM, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGSEGV, syscall.SIGABRT, syscall.SIGBUS:
			return -1, signalName(s)
		}
	}
	return code, ""
}
