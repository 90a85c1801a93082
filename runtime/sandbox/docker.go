package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dockerEngine runs each job in a fresh container: `docker run --rm -i`
// with no network by default, a read-only root, a private /tmp, no new
// privileges, every capability dropped, memory, CPU, process, file-size
// and open-file limits, and the job's work directory bound at /work. On
// timeout or output cap the container is killed by name.
type dockerEngine struct {
	name   string
	log    *slog.Logger
	docker string
	image  string
	net    string
	lim    limits
	slots  slots
	env    map[string]string
	builds builds
}

// probeTimeout bounds an engine's availability check.
const probeTimeout = 20 * time.Second

func openDocker(ctx context.Context, name string, cfg Config) (*dockerEngine, error) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: docker: the docker CLI is not on PATH: %w", name, ErrUnavailable)
	}
	if cfg.Image == "" {
		return nil, fmt.Errorf("sandbox %s: docker: no image", name)
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if out, err := exec.CommandContext(pctx, docker, "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		host := os.Getenv("DOCKER_HOST")
		if host == "" {
			host = "unix:///var/run/docker.sock"
		}
		return nil, fmt.Errorf("sandbox %s: docker: cannot connect to the daemon at %s (docker info: %s): %w",
			name, host, firstLines(out, 3), ErrUnavailable)
	}
	net := cfg.Network
	if net == "" {
		net = "none"
	}
	return &dockerEngine{
		name:   name,
		log:    cfg.Logger,
		docker: docker,
		image:  cfg.Image,
		net:    net,
		lim:    limitsOf(cfg),
		slots:  make(slots, concurrency(cfg)),
		env:    cfg.Env,
	}, nil
}

func (d *dockerEngine) Name() string { return d.name }
func (d *dockerEngine) Close() error { return nil }

// ContainerLabel is the label every container of a docker sandbox carries,
// its value the sandbox's name: `docker ps -a --filter label=nel.sandbox`
// finds what a killed nel-run left behind.
const ContainerLabel = "nel.sandbox"

// argv is the docker command line of a job: a private 64 MiB /tmp and the
// work dir at /work.
func (d *dockerEngine) argv(container, wd string, env map[string]string, command []string) []string {
	mounts := []string{"--tmpfs", fmt.Sprintf("/tmp:rw,exec,size=%d", tmpBytes), "-v", wd + ":/work"}
	return d.runArgv(container, d.image, mounts, "/work", env, command)
}

// runArgv is the docker run command line of one container: the limits,
// the read-only root, the mounts, the working directory dir. Environment
// values are not on it (`-e NAME` takes the value from the CLI's own
// environment), so that they do not show in the host's process list.
func (d *dockerEngine) runArgv(container, image string, mounts []string, dir string, env map[string]string, command []string) []string {
	l := d.lim
	a := []string{
		d.docker, "run", "--rm", "-i",
		"--name", container, "--label", ContainerLabel + "=" + d.name,
		"--network", d.net,
		"--memory", strconv.FormatInt(l.memory, 10),
		"--memory-swap", strconv.FormatInt(l.memory, 10),
		"--cpus", strconv.FormatFloat(l.cpus, 'f', -1, 64),
		"--pids-limit", strconv.Itoa(l.procs),
		"--ulimit", fmt.Sprintf("fsize=%d:%d", l.fileSize, l.fileSize),
		"--ulimit", fmt.Sprintf("nofile=%d:%d", l.openFiles, l.openFiles),
		"--ulimit", "core=0:0",
		"--read-only",
		"--security-opt", "no-new-privileges",
		"--cap-drop", "ALL",
	}
	a = append(a, mounts...)
	a = append(a, "-w", dir)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		a = append(a, "-e", k)
	}
	a = append(a, image)
	return append(a, command...)
}

// cliEnv is the environment of an engine's CLI: the host's, which the CLI
// needs (DOCKER_HOST, HOME for its config), with the job's variables set
// for it to pass on by name.
func cliEnv(prefix string, env map[string]string) []string {
	out := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, prefix+k+"="+env[k])
	}
	return out
}

func (d *dockerEngine) Run(ctx context.Context, job Job) (*Result, error) {
	if len(job.Command) == 0 {
		return nil, fmt.Errorf("sandbox %s: empty command", d.name)
	}
	if err := d.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", d.name, err)
	}
	defer d.slots.release()
	wd, err := newWorkDir("", job.Files)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", d.name, err)
	}
	defer func() {
		if err := wd.remove(); err != nil {
			d.log.Warn("sandbox cleanup", "sandbox", d.name, "err", err)
		}
	}()
	// The container runs as its image's user, which need not be ours.
	if err := os.Chmod(wd.path, 0o777); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", d.name, err)
	}
	env := d.jobEnv(job.Env)
	res, err := d.run(ctx, d.image, env, job.Stdin, d.lim.jobTimeout(job), func(container string) []string {
		return d.argv(container, wd.path, env, job.Command)
	})
	if err != nil {
		return nil, err
	}
	if res.Files, err = wd.collect(job.Collect, d.lim.fileSize); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", d.name, err)
	}
	return res, nil
}

// jobEnv is a job's environment: the Config's, then the job's.
func (d *dockerEngine) jobEnv(job map[string]string) map[string]string {
	env := maps.Clone(d.env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, job)
	return env
}

// run runs one container, whose command line argv makes for a fresh
// container name, to its end, its timeout (then the container is killed
// by name) or its output cap, and names the limit that stopped it.
func (d *dockerEngine) run(ctx context.Context, image string, env map[string]string, stdin []byte, timeout time.Duration, argv func(container string) []string) (*Result, error) {
	var b [8]byte
	rand.Read(b[:])
	container := "nel-sandbox-" + hex.EncodeToString(b[:])
	out, err := runCLI(ctx, cliJob{
		argv:    argv(container),
		env:     cliEnv("", env),
		stdin:   stdin,
		timeout: timeout,
		output:  d.lim.output,
		kill: func() {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
			defer cancel()
			exec.CommandContext(kctx, d.docker, "kill", container).Run()
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: docker: %w", d.name, err)
	}
	res := out.res
	// Exit status 125 is docker's own failure, not the program's: most
	// often an image that cannot be pulled.
	if res.ExitCode == 125 && !out.info.timedOut && !out.info.outputCap {
		return nil, dockerError(d.name, image, res.Stderr)
	}
	// Only the kernel's OOM killer (or our kill, known above) sends a
	// container SIGKILL.
	out.info.oomKilled = res.Signal == "SIGKILL" && !out.info.timedOut && !out.info.outputCap
	res.Limit = classify(out.info, res.Stderr)
	return res, nil
}

// dockerError names what docker run's own failure was.
func dockerError(name, image string, stderr []byte) error {
	msg := firstLines(stderr, 4)
	// "Unable to find image" opens every failed pull, whatever the
	// registry's answer (none, when the daemon reaches no registry).
	for _, s := range []string{"Unable to find image", "pull access denied", "manifest unknown", "not found: manifest", "repository does not exist", "error pulling image", "toomanyrequests"} {
		if strings.Contains(string(stderr), s) {
			return fmt.Errorf("sandbox %s: docker: image %q cannot be pulled: %s", name, image, msg)
		}
	}
	return fmt.Errorf("sandbox %s: docker: cannot run image %q (exit 125): %s", name, image, msg)
}

// OpenSession opens a session: every command runs in a fresh container
// (`docker run --rm`, as a job does) with the session's app, logs and tmp
// bound at /app, /logs and /tmp, and the tests read-only at /tests for a
// WithTests command. A container per command rather than one per session:
// the files that must persist are bound in either way, the root is
// read-only either way, a timeout kills the whole command by killing its
// container (`docker exec` has no way to kill what it started), and no
// long-lived container is left running when nel-run dies. spec.Image, when
// set, replaces the sandbox's image.
func (d *dockerEngine) OpenSession(ctx context.Context, spec SessionSpec) (Session, error) {
	built := spec.Build != ""
	if built {
		img, err := d.builds.build(ctx, d, spec.Build)
		if err != nil {
			return nil, err
		}
		spec.Image, spec.Build, spec.App = img, "", ""
	}
	s, image, err := newSession(d.name, d.image, spec, true)
	if err != nil {
		return nil, err
	}
	if built {
		if err := d.seedApp(ctx, image, s.dir); err != nil {
			s.dir.remove()
			return nil, err
		}
	}
	s.run = func(ctx context.Context, sd sessionDir, c sessionCmd) (*Result, error) {
		return d.sessionRun(ctx, image, sd, c)
	}
	s.cleanup = func(sd sessionDir) error { return d.cleanupAsRoot(image, sd) }
	return s, nil
}

// sessionMounts binds a session's directories.
func sessionMounts(d sessionDir, c sessionCmd, bind, readOnly func(host, dst string) []string) []string {
	m := slices.Concat(bind(d.app(), SessionApp), bind(d.logs(), SessionLogs), bind(d.tmp(), SessionTmp))
	if c.tests != "" {
		m = append(m, readOnly(c.tests, SessionTests)...)
	}
	return m
}

func (d *dockerEngine) sessionRun(ctx context.Context, image string, sd sessionDir, c sessionCmd) (*Result, error) {
	if err := d.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", d.name, err)
	}
	defer d.slots.release()
	mounts := sessionMounts(sd, c,
		func(host, dst string) []string { return []string{"-v", host + ":" + dst} },
		func(host, dst string) []string { return []string{"-v", host + ":" + dst + ":ro"} })
	env := d.jobEnv(c.Env)
	return d.run(ctx, image, env, c.Stdin, d.lim.jobTimeout(Job{Timeout: c.timeout}), func(container string) []string {
		return d.runArgv(container, image, mounts, c.dir, env, c.Argv)
	})
}

// cleanupAsRoot removes what a container's root left in the session's
// directories, which a host user other than root may not remove: a
// container of the same image, as root, deletes them. Nothing of the
// model's runs in it (rm does not follow links).
func (d *dockerEngine) cleanupAsRoot(image string, sd sessionDir) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*probeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, d.docker, "run", "--rm", "--network", "none", "--user", "0:0",
		"-v", sd.path+":/session", image, "rm", "-rf", "/session"+SessionApp, "/session"+SessionLogs, "/session"+SessionTmp).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker: remove as root: %s: %w", firstLines(out, 3), err)
	}
	return nil
}
