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
// allocation refused by RLIMIT_AS raises MemoryError in Python and ENOMEM
// elsewhere; a write past RLIMIT_FSIZE fails with EFBIG when SIGXFSZ is
// ignored.
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
