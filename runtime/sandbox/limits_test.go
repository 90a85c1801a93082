package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name   string
		info   exitInfo
		stderr string
		want   Limit
	}{
		{"clean exit", exitInfo{code: 0}, "", LimitNone},
		{"exit 0 printing MemoryError", exitInfo{code: 0}, "MemoryError", LimitNone},
		{"assertion", exitInfo{code: 1}, "AssertionError", LimitNone},
		{"wall clock", exitInfo{code: -1, signal: "SIGKILL", timedOut: true}, "", LimitTimeout},
		{"cpu seconds", exitInfo{code: -1, signal: "SIGXCPU"}, "", LimitCPU},
		{"file size signal", exitInfo{code: -1, signal: "SIGXFSZ"}, "", LimitFileSize},
		{"file size EFBIG", exitInfo{code: 1}, "OSError: [Errno 27] File too large", LimitFileSize},
		{"python MemoryError", exitInfo{code: 1}, "Traceback …\nMemoryError\n", LimitMemory},
		{"ENOMEM", exitInfo{code: 1}, "mmap: Cannot allocate memory", LimitMemory},
		{"bash's allocator", exitInfo{code: 2}, "bash: xrealloc: cannot allocate 64323584 bytes", LimitMemory},
		{"container OOM kill", exitInfo{code: -1, signal: "SIGKILL", oomKilled: true}, "", LimitMemory},
		{"fork refused", exitInfo{code: 1}, "BlockingIOError: [Errno 11] Resource temporarily unavailable", LimitProcesses},
		// A fork bomb runs until the wall clock, but processes held it.
		{"fork bomb at timeout", exitInfo{code: -1, signal: "SIGKILL", timedOut: true}, "BlockingIOError: [Errno 11] Resource temporarily unavailable", LimitProcesses},
		{"pids cgroup", exitInfo{code: -1, signal: "SIGKILL", timedOut: true, forkLimit: true}, "", LimitProcesses},
		{"output cap", exitInfo{code: -1, signal: "SIGKILL", outputCap: true}, "", LimitOutput},
		{"segfault", exitInfo{code: -1, signal: "SIGSEGV"}, "", LimitNone},
	} {
		if got := classify(c.info, []byte(c.stderr)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for _, c := range []struct {
		code     int
		sig      syscall.Signal
		signaled bool
		wantCode int
		wantSig  string
	}{
		{0, 0, false, 0, ""},
		{1, 0, false, 1, ""},
		{0, syscall.SIGKILL, true, -1, "SIGKILL"},
		// bubblewrap and docker report a program killed by signal N as
		// 128+N.
		{137, 0, false, -1, "SIGKILL"},
		{152, 0, false, -1, "SIGXCPU"},
		{153, 0, false, -1, "SIGXFSZ"},
		{130, 0, false, 130, ""},
		{255, 0, false, 255, ""},
	} {
		code, sig := statusOf(c.code, c.sig, c.signaled)
		if code != c.wantCode || sig != c.wantSig {
			t.Errorf("statusOf(%d, %v, %v) = %d %q, want %d %q", c.code, c.sig, c.signaled, code, sig, c.wantCode, c.wantSig)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"4g", 4 << 30}, {"4G", 4 << 30}, {"512m", 512 << 20}, {"512MiB", 512 << 20},
		{"1.5g", 3 << 29}, {"100", 100}, {"100b", 100}, {"64k", 64 << 10}, {"1t", 1 << 40},
	} {
		got, err := ParseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "g", "-1g", "4x", "lots"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q): no error", bad)
		}
	}
}

func TestCapture(t *testing.T) {
	overs := 0
	c := newCapture(10, func() { overs++ })
	for _, s := range []string{"hello", "world", "!", "more and more"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	got, cut := c.bytes()
	if string(got) != "helloworld" || !cut || overs != 1 {
		t.Errorf("got %q cut %v overs %d, want helloworld true 1", got, cut, overs)
	}
	c = newCapture(10, func() { overs++ })
	c.Write([]byte("0123456789"))
	if got, cut := c.bytes(); string(got) != "0123456789" || cut {
		t.Errorf("exactly the cap: %q cut %v", got, cut)
	}
}

func TestLimitsDefaults(t *testing.T) {
	l := limitsOf(Config{})
	if l.memory != DefaultMemoryBytes || l.procs != DefaultMaxProcesses || l.fileSize != DefaultMaxFileSizeBytes ||
		l.output != DefaultOutputBytes || l.timeout != DefaultTimeout || l.cpus != 1 {
		t.Errorf("defaults %+v", l)
	}
	// 30 s on one core: 30 CPU seconds, plus one so the wall clock fires
	// first.
	if got := l.cpuSeconds(DefaultTimeout); got != 31 {
		t.Errorf("cpuSeconds = %d, want 31", got)
	}
}

// limitScript on each /bin/sh an image may have (dash in Debian and
// Ubuntu, busybox ash in Alpine and busybox images, bash as sh in RHEL),
// run as sh on the host: every limit lands in bytes, soft and hard, in
// the program it execs, after programStarts' line, with the HOME it was
// given.
func TestLimitScriptShells(t *testing.T) {
	lim := limitsOf(Config{MemoryBytes: 1 << 30, MaxProcesses: 50, MaxFileSizeBytes: 1 << 20})
	want := []string{
		"home /given",
		"Max address space         1073741824           1073741824",
		"Max processes             50                   50",
		"Max file size             1048576              1048576",
		"Max cpu time              6                    6",
		"Max open files            256                  256",
		"Max core file size        0                    0",
	}
	for _, name := range []string{"dash", "bash", testenv.Busybox.Name} {
		t.Run(name, func(t *testing.T) {
			path, err := exec.LookPath(name)
			if err != nil {
				testenv.Missing(t, name+" (the shells images run limitScript with)", err.Error())
			}
			argv := append(lim.ulimitArgv(5 * time.Second)[1:], "sh", "-c", `cat /proc/self/limits; echo "home $HOME ${`+limitHomeEnv+`-unset}"`)
			// argv[0] "sh": bash in its POSIX mode, busybox's ash applet.
			cmd := &exec.Cmd{Path: path, Args: append([]string{"sh"}, argv...), Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=/elsewhere", limitHomeEnv + "=/given"}}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if !strings.HasPrefix(string(out), programStarts+"\n") {
				t.Errorf("output does not start with programStarts' line:\n%s", out)
			}
			if !strings.Contains(string(out), "home /given unset\n") {
				t.Errorf("the program's HOME is not the one given, or it sees %s:\n%s", limitHomeEnv, out)
			}
			for _, w := range want {
				if !strings.Contains(string(out), w) {
					t.Errorf("/proc/self/limits lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
