package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// apptainerEngine runs each job with `apptainer exec` (or singularity's):
// --containall (private /tmp, pid, ipc, a clean environment, no host home),
// --no-privs (no capabilities in the container, even when nel runs as
// root), no network, the work directory bound at /work; as root, as a uid
// of the job's own (apptainer_uid.go). Apptainer has no rlimit flags of
// its own, so the image's /bin/sh sets them with ulimit (limitScript)
// before it execs the program.
type apptainerEngine struct {
	name  string
	log   *slog.Logger
	bin   string // apptainer or singularity
	image string
	lim   limits
	slots slots
	env   map[string]string
	// buildCache is where Harbor tasks' images are built
	// (apptainer_build.go); "" builds none.
	buildCache string
	builds     sifBuilds
	// uids, when nel runs as root, give each job and session a uid of
	// its own to run as; nil otherwise (the container is nel's user).
	uids *uidPool
}

func openApptainer(ctx context.Context, name string, cfg Config) (*apptainerEngine, error) {
	bin, err := exec.LookPath("apptainer")
	if err != nil {
		if bin, err = exec.LookPath("singularity"); err != nil {
			return nil, fmt.Errorf("sandbox %s: apptainer: neither apptainer nor singularity is on PATH: %w", name, ErrUnavailable)
		}
	}
	// No image is allowed: a pool's server whose sessions each bring
	// their task's image (OpenSession); its jobs are then refused.
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if out, err := exec.CommandContext(pctx, bin, "version").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sandbox %s: apptainer: %s version: %s: %w", name, bin, firstLines(out, 3), ErrUnavailable)
	}
	var uids *uidPool
	if os.Geteuid() == 0 {
		// Apptainer as root makes no user namespace: the container's uid
		// 0 would be the host's (apptainer_uid.go).
		uids = &uidPool{dir: uidLockDir()}
	}
	return &apptainerEngine{
		name:  name,
		log:   cfg.Logger,
		bin:   bin,
		image: cfg.Image,
		lim:   limitsOf(cfg),
		slots: make(slots, concurrency(cfg)),
		env:   cfg.Env,

		buildCache: cfg.BuildCache,
		uids:       uids,
	}, nil
}

func (a *apptainerEngine) Name() string { return a.name }
func (a *apptainerEngine) Close() error { return nil }

// envPrefix is how the CLI is told to set a variable in the container
// (APPTAINERENV_NAME=value survives --containall's clean environment and
// keeps values off the command line).
func (a *apptainerEngine) envPrefix() string {
	if filepath.Base(a.bin) == "singularity" {
		return "SINGULARITYENV_"
	}
	return "APPTAINERENV_"
}

// argv is the apptainer command line of a job, run as uid (nil: as nel's
// user).
func (a *apptainerEngine) argv(uid *heldUID, wd, home string, timeout time.Duration, command []string) []string {
	return a.execArgv(uid, a.image, []string{"--bind", wd + ":/work"}, "/work", home, timeout, command)
}

// holdUID holds a uid of its own for a job or session when nel runs as
// root; nil when it does not.
func (a *apptainerEngine) holdUID() (*heldUID, error) {
	if a.uids == nil {
		return nil, nil
	}
	u, err := a.uids.get()
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: apptainer: %w", a.name, err)
	}
	return u, nil
}

// execArgv is the apptainer exec command line of one program: the binds,
// the working directory dir, the program's HOME, and the image's /bin/sh
// setting the limits (limitScript) before it execs the program.
//
// --no-privs drops every capability in the container. An unprivileged
// user has none there anyway; root would otherwise keep root's
// capabilities over what the container sees (the bound work folder, /proc,
// /sys), which untrusted model code must not have. Where root's bounding
// set lacks a capability (CAP_SYS_RESOURCE on some machines), singularity
// exec without it even fails before the program starts. Root without
// capabilities is still uid 0, owner of /proc/sys and /sys, so as root
// the program runs as uid, one of the sandbox's own (apptainer_uid.go).
func (a *apptainerEngine) execArgv(uid *heldUID, image string, binds []string, dir, home string, timeout time.Duration, command []string) []string {
	argv := []string{a.bin, "exec", "--containall", "--no-privs", "--no-home", "--home", home, "--net", "--network", "none"}
	argv = append(argv, uid.securityArgv()...)
	argv = append(argv, binds...)
	argv = append(argv, "--pwd", dir, image)
	argv = append(argv, a.lim.ulimitArgv(timeout)...)
	return append(argv, command...)
}

func (a *apptainerEngine) Run(ctx context.Context, job Job) (*Result, error) {
	if len(job.Command) == 0 {
		return nil, fmt.Errorf("sandbox %s: empty command", a.name)
	}
	if a.image == "" {
		return nil, fmt.Errorf("sandbox %s: apptainer: no image to run the job in (set the sandbox's image)", a.name)
	}
	if err := a.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	defer a.slots.release()
	uid, err := a.holdUID()
	if err != nil {
		return nil, err
	}
	// Released after the work folder is gone: the next job of this uid
	// finds nothing of this one's.
	defer uid.release()
	wd, err := newWorkDir("", job.Files)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	defer func() {
		if err := wd.remove(); err != nil {
			a.log.Warn("sandbox cleanup", "sandbox", a.name, "err", err)
		}
	}()
	if err := uid.chownTree(wd.path); err != nil {
		return nil, fmt.Errorf("sandbox %s: apptainer: work dir: %w", a.name, err)
	}
	timeout := a.lim.jobTimeout(job)
	env, home, err := a.jobEnv("/work", job.Env)
	if err != nil {
		return nil, err
	}
	res, err := a.run(ctx, a.image, uid, env, job.Stdin, timeout, a.argv(uid, wd.path, home, timeout, job.Command))
	if err != nil {
		return nil, err
	}
	if res.Files, err = wd.collect(job.Collect, a.lim.fileSize); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	return res, nil
}

// jobEnv is a program's environment, the Config's then the program's
// own, and apart from it HOME: home unless one of them sets it. HOME
// reaches the container as --home (not mounted, with --no-home), because
// apptainer and singularity refuse it in APPTAINERENV_/SINGULARITYENV_:
// they warn on stderr and leave the user's home in its place. As a uid
// that no passwd file names (apptainer_uid.go), SingularityCE sets HOME to
// / whatever --home says, so limitScript sets it again from
// limitHomeEnv.
func (a *apptainerEngine) jobEnv(home string, own map[string]string) (map[string]string, string, error) {
	env := maps.Clone(a.env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, own)
	if h, ok := env["HOME"]; ok {
		home = h
		delete(env, "HOME")
	}
	// --home reads src:dest; a colon or comma would be another bind.
	if home == "" || strings.ContainsAny(home, ":,") {
		return nil, "", fmt.Errorf("sandbox %s: apptainer: HOME %q: want a path without ':' or ','", a.name, home)
	}
	env[limitHomeEnv] = home
	return env, home, nil
}

// run runs one apptainer command line to its end, its timeout or its
// output cap, and names the limit that stopped the program. A run that
// failed before limitScript wrote programStarts is the sandbox's error
// (the program never ran); after it, the failure is the program's, and
// the line itself is taken out of its stderr.
func (a *apptainerEngine) run(ctx context.Context, image string, uid *heldUID, env map[string]string, stdin []byte, timeout time.Duration, argv []string) (*Result, error) {
	out, err := runCLI(ctx, cliJob{
		argv:    argv,
		env:     cliEnv(a.envPrefix(), env),
		stdin:   stdin,
		timeout: timeout,
		output:  a.lim.output,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: apptainer: %w", a.name, err)
	}
	res := out.res
	before, after, started := splitStart(res.Stderr)
	before = uid.stripUIDWarnings(before)
	if !started && (res.ExitCode != 0 || res.Signal != "") {
		return nil, a.notStarted(image, res, out.info, before)
	}
	res.Stderr = slices.Concat(before, after)
	res.Limit = classify(out.info, res.Stderr)
	return res, nil
}

// notStarted is the error of a run that ended before its program started,
// from what apptainer and the image's shell wrote (stderr).
func (a *apptainerEngine) notStarted(image string, res *Result, info exitInfo, stderr []byte) error {
	// The image's shell could not set a limit (limitScript).
	if bytes.Contains(stderr, []byte("nel-sandbox: "+limitFailed)) {
		return fmt.Errorf("sandbox %s: apptainer: image %q: %s (memory %d bytes, %d processes, files of %d bytes, %d open files): %s",
			a.name, image, limitFailed, a.lim.memory, a.lim.procs, a.lim.fileSize, a.lim.openFiles, firstLines(stderr, 3))
	}
	// Apptainer's own failures (an image it cannot open, pull or run,
	// one without /bin/sh) come with a FATAL line.
	if i := bytes.Index(stderr, []byte("FATAL:")); i >= 0 {
		msg := strings.Join(strings.Fields(firstLines(stderr[i:], 2)), " ")
		if strings.Contains(msg, "/bin/sh") {
			msg += " (the sandbox starts every program with the image's /bin/sh, which sets its limits)"
		}
		return fmt.Errorf("sandbox %s: apptainer: cannot run image %q: %s", a.name, image, msg)
	}
	how := fmt.Sprintf("exit status %d", res.ExitCode)
	switch {
	case info.timedOut:
		how = "its timeout passed"
	case res.Signal != "":
		how = "signal " + res.Signal
	}
	return fmt.Errorf("sandbox %s: apptainer: image %q: the program did not start (%s): %s", a.name, image, how, firstLines(stderr, 3))
}

// OpenSession opens a session: every command is an `apptainer exec` of
// its own (as a job is) with the session's app, logs and tmp bound at
// /app, /logs and /tmp, and the tests read-only at /tests for a WithTests
// command; --containall's pid namespace ends every process with the
// command. The program runs as nel's user, or as root as a uid the
// session holds until it closes (apptainer_uid.go), owner of its folders;
// either way nel removes all it wrote. spec.Image, when set, replaces the
// sandbox's image.
func (a *apptainerEngine) OpenSession(ctx context.Context, spec SessionSpec) (Session, error) {
	if spec.Build != "" {
		// A Harbor task's Dockerfile, built once (apptainer_build.go):
		// the session runs in its image, /app starting as the image's.
		img, err := a.builds.build(ctx, a, spec.Build)
		if err != nil {
			return nil, err
		}
		spec.Image, spec.App, spec.Build = img.sif, img.app, ""
	}
	if a.image == "" && spec.Image == "" {
		return nil, fmt.Errorf("sandbox %s: apptainer: no image for the session (the task names none, and the sandbox has no image)", a.name)
	}
	uid, err := a.holdUID()
	if err != nil {
		return nil, err
	}
	s, image, err := newSession(a.name, a.image, spec, false)
	if err != nil {
		uid.release()
		return nil, err
	}
	s.release = uid.release
	if err := uid.chownTree(s.dir.path); err != nil {
		s.Close()
		return nil, fmt.Errorf("sandbox %s: apptainer: session dir: %w", a.name, err)
	}
	s.run = func(ctx context.Context, sd sessionDir, c sessionCmd) (*Result, error) {
		return a.sessionRun(ctx, image, uid, sd, c)
	}
	return s, nil
}

// sessionTests is the folder bound at /tests for a command of a session
// run as uid: the task's tests folder may be one uid cannot read (mode
// 0700, say), so it is copied, as it is now, into the session's folder,
// readable by uid and still bound read-only; done removes the copy. As
// nel's own user the task's folder is bound as it is.
func (a *apptainerEngine) sessionTests(uid *heldUID, sd sessionDir, tests string) (dir string, done func(), err error) {
	if uid == nil || tests == "" {
		return tests, func() {}, nil
	}
	dir, err = os.MkdirTemp(sd.path, "tests-")
	if err != nil {
		return "", nil, fmt.Errorf("sandbox %s: apptainer: copy the tests %s: %w", a.name, tests, err)
	}
	done = func() { os.RemoveAll(dir) }
	if err := os.CopyFS(dir, os.DirFS(tests)); err != nil {
		done()
		return "", nil, fmt.Errorf("sandbox %s: apptainer: copy the tests %s: %w", a.name, tests, err)
	}
	if err := uid.chownTree(dir); err != nil {
		done()
		return "", nil, fmt.Errorf("sandbox %s: apptainer: copy the tests %s: %w", a.name, tests, err)
	}
	return dir, done, nil
}

func (a *apptainerEngine) sessionRun(ctx context.Context, image string, uid *heldUID, sd sessionDir, c sessionCmd) (*Result, error) {
	if err := a.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	defer a.slots.release()
	tests, done, err := a.sessionTests(uid, sd, c.tests)
	if err != nil {
		return nil, err
	}
	defer done()
	c.tests = tests
	binds := sessionMounts(sd, c,
		func(host, dst string) []string { return []string{"--bind", host + ":" + dst} },
		func(host, dst string) []string { return []string{"--bind", host + ":" + dst + ":ro"} })
	timeout := a.lim.jobTimeout(Job{Timeout: c.timeout})
	env, home, err := a.jobEnv(SessionTmp, c.Env)
	if err != nil {
		return nil, err
	}
	return a.run(ctx, image, uid, env, c.Stdin, timeout, a.execArgv(uid, image, binds, c.dir, home, timeout, c.Argv))
}
