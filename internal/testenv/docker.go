package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/serve"
)

// DockerBaseImage is the image Docker makes sure the daemon holds:
// busybox's applets and a static bash in an otherwise empty root, built
// here (no registry is needed) from the host's busybox-static and
// bash-static. It is tiny on purpose: a daemon on the vfs storage driver
// copies the whole image for every container.
const DockerBaseImage = "nel-test/base:1"

// Docker's packages, for Missing's messages; .ci/testdeps installs them.
var (
	DockerCLI  = Tool{"docker", "docker.io"}
	Dockerd    = Tool{"dockerd", "docker.io"}
	Busybox    = Tool{"busybox", "busybox-static"}
	BashStatic = Tool{"bash-static", "bash-static"}
)

// dockerd is the daemon of this test binary. A package global because a
// daemon is one per process: Docker starts it on first use, DockerMain
// stops it when the binary's tests are done.
var dockerd struct {
	once    sync.Once
	mu      sync.Mutex
	main    bool   // DockerMain runs this binary's tests
	host    string // DOCKER_HOST of the daemon, "" until it answers
	skip    string // why there is none: the tests skip with it
	missing *missingPart
	private *privateDaemon // the daemon this binary started, if any
}

type missingPart struct{ part, why string }

// Docker returns a DOCKER_HOST (unix://…) where a docker daemon answers
// and holds DockerBaseImage. It is the environment's daemon (DOCKER_HOST,
// or the default socket) when that one answers; else, as root with
// dockerd installed, a private daemon this test binary starts once (vfs
// storage, no iptables, no bridge: containers run with --network none)
// in a temporary folder, which DockerMain stops and removes. The test
// binary's TestMain must call DockerMain. When no daemon can run here (not
// root, dockerd fails to start) the test skips saying what failed; a
// missing package (docker.io, busybox-static, bash-static) is Missing's.
func Docker(tb testing.TB) string {
	tb.Helper()
	host, part, why := DockerHost()
	switch {
	case part != "":
		Missing(tb, part, why)
	case host == "":
		tb.Skip("no docker daemon: " + why)
	}
	return host
}

// DockerHost is Docker for callers without a testing.TB (a testscript
// condition): the daemon's DOCKER_HOST, or "" and why there is none; part
// names a missing package (then why says how we know), for Missing or
// MissingMessage.
func DockerHost() (host, part, why string) {
	dockerd.mu.Lock()
	inMain := dockerd.main
	dockerd.mu.Unlock()
	if !inMain {
		// A mistake in the test binary, not a machine without docker.
		panic("testenv.Docker needs the test binary's TestMain to call testenv.DockerMain (it stops the daemon)")
	}
	dockerd.once.Do(startDocker)
	if m := dockerd.missing; m != nil {
		return "", m.part, m.why
	}
	return dockerd.host, "", dockerd.skip
}

// DockerMain runs a test binary's tests (m.Run) and then stops the
// private daemon Docker started, if any, and removes its folder. Call it
// from TestMain: os.Exit(testenv.DockerMain(m)).
func DockerMain(m interface{ Run() int }) int {
	dockerd.mu.Lock()
	dockerd.main = true
	dockerd.mu.Unlock()
	code := m.Run()
	if err := stopDocker(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stopping the test docker daemon:", err)
	}
	return code
}

// startDocker finds or starts the daemon and imports the base image,
// recording in dockerd what it got or why it got none.
func startDocker() {
	if _, err := exec.LookPath(DockerCLI.Name); err != nil {
		dockerd.missing = &missingPart{"the docker CLI (Debian package docker.io)", "docker is not on PATH"}
		return
	}
	rootfs, missing := baseRootfs()
	if missing != nil {
		dockerd.missing = missing
		return
	}
	host, probeErr := dockerInfo(os.Getenv("DOCKER_HOST"))
	if probeErr != nil {
		var err error
		if host, err = startPrivateDockerd(probeErr); err != nil {
			dockerd.skip = err.Error()
			return
		}
	}
	if err := importBase(host, rootfs); err != nil {
		dockerd.skip = err.Error()
		return
	}
	dockerd.host = host
}

// dockerInfo asks the daemon at host ("" is docker's default) for its
// version, and returns host spelt out.
func dockerInfo(host string) (string, error) {
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}")
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+host)
	if out, err := cmd.CombinedOutput(); err != nil {
		return host, fmt.Errorf("docker info at %s: %v: %s", host, err, firstLine(out))
	}
	return host, nil
}

// startPrivateDockerd starts this binary's own dockerd (why says why the
// environment's would not do) and waits until it answers.
func startPrivateDockerd(why error) (string, error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%v; and a private dockerd needs root", why)
	}
	bin, err := exec.LookPath(Dockerd.Name)
	if err != nil {
		return "", fmt.Errorf("%v; and dockerd (Debian package docker.io) is not on PATH", why)
	}
	d, host, err := startDaemon(bin, 30*time.Second)
	dockerd.private = d
	return host, err
}

// privateDaemon is a dockerd this process started, in a folder of its own.
type privateDaemon struct {
	dir    string
	cmd    *exec.Cmd
	exited <-chan error // nil once it has been seen to exit
}

// startDaemon starts dockerd (bin) in a new temporary folder (vfs, no
// iptables, no bridge) and waits up to wait for it to answer. The daemon
// it returns, even with an error, must be stopped: its folder is there.
func startDaemon(bin string, wait time.Duration) (*privateDaemon, string, error) {
	// A short path: the daemon's sockets live under it (108 bytes at most).
	dir, err := os.MkdirTemp("", "nel-dockerd-")
	if err != nil {
		return nil, "", err
	}
	d := &privateDaemon{dir: dir}
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		return d, "", err
	}
	defer logf.Close()
	host := "unix://" + filepath.Join(dir, "docker.sock")
	cmd := exec.Command(bin, "--storage-driver=vfs", "--iptables=false", "--ip6tables=false", "--bridge=none",
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "pid"), "-H", host)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Tied: a test binary killed by its timeout takes its daemon along.
	exited, err := serve.StartTied(cmd, serve.Tie{Group: true, Term: true})
	if err != nil {
		return d, "", fmt.Errorf("start dockerd: %w", err)
	}
	d.cmd, d.exited = cmd, exited
	deadline := time.Now().Add(wait)
	for {
		_, err := dockerInfo(host)
		if err == nil {
			return d, host, nil
		}
		select {
		case werr := <-exited:
			d.exited = nil
			log, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			return d, "", fmt.Errorf("dockerd exited (%v) before it answered: %s", werr, lastLines(log, 3))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return d, "", fmt.Errorf("dockerd did not answer within %v: %v", wait, err)
		}
	}
}

// stopDocker stops the private daemon, if this binary started one.
func stopDocker() error {
	if dockerd.private == nil {
		return nil
	}
	return dockerd.private.stop()
}

// stop stops the daemon (SIGTERM, which stops its containerd and
// containers; SIGKILL to its group after 20s) and removes its folder.
func (d *privateDaemon) stop() error {
	if d.exited != nil {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.exited
		}
		d.exited = nil
	}
	return os.RemoveAll(d.dir)
}

// baseRootfs is DockerBaseImage's root as a tar: /bin/busybox with a link
// per applet, /bin/bash (bash-static), an /etc/passwd with root and
// nobody, and the empty folders a container expects.
func baseRootfs() ([]byte, *missingPart) {
	busybox, m := staticTool(Busybox)
	if m != nil {
		return nil, m
	}
	bash, m := staticTool(BashStatic)
	if m != nil {
		return nil, m
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, &missingPart{"busybox (Debian package busybox-static)", "busybox --list: " + err.Error()}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "etc/", "tmp/", "root/", "proc/", "sys/", "dev/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: mode})
	}
	for name, src := range map[string]string{"bin/busybox": busybox, "bin/bash": bash} {
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, &missingPart{src, err.Error()}
		}
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b))})
		tw.Write(b)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" && applet != "bash" && !strings.ContainsAny(applet, "/[") {
			tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
		}
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"
	tw.WriteHeader(&tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(passwd))})
	tw.Write([]byte(passwd))
	group := "root:x:0:\nnogroup:x:65534:\n"
	tw.WriteHeader(&tar.Header{Name: "etc/group", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(group))})
	tw.Write([]byte(group))
	if err := tw.Close(); err != nil {
		return nil, &missingPart{"the base image", err.Error()}
	}
	return buf.Bytes(), nil
}

// staticTool finds t on PATH and checks that it is statically linked: it
// runs in an image that holds no libraries.
func staticTool(t Tool) (string, *missingPart) {
	part := t.Name + " (Debian package " + t.Package + ")"
	p, err := exec.LookPath(t.Name)
	if err != nil {
		return "", &missingPart{part, t.Name + " is not on PATH"}
	}
	f, err := elf.Open(p)
	if err != nil {
		return "", &missingPart{part, err.Error()}
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return "", &missingPart{part, p + " is linked dynamically"}
		}
	}
	return p, nil
}

// importBase imports rootfs as DockerBaseImage unless the daemon has it.
func importBase(host string, rootfs []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := append(os.Environ(), "DOCKER_HOST="+host)
	inspect := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", DockerBaseImage)
	inspect.Env = env
	if inspect.Run() == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, "docker", "import",
		"--change", "ENV PATH=/bin", "--change", "WORKDIR /app", "--change", `CMD ["/bin/sh"]`,
		"-", DockerBaseImage)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(rootfs)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("docker import %s: %v: %s", DockerBaseImage, err, firstLine(out))
	}
	return nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// lastLines is the end of a log, n lines joined by " | ".
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
