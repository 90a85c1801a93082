package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// apptainerEngine runs each job with `apptainer exec` (or singularity's):
// --containall (private /tmp, pid, ipc, a clean environment, no host home),
// no network, the work directory bound at /work. Apptainer has no rlimit
// flags of its own, so the image's prlimit(1) (util-linux, in every
// Debian, Ubuntu or RHEL based image) sets them before the program runs.
type apptainerEngine struct {
	name  string
	log   *slog.Logger
	bin   string // apptainer or singularity
	image string
	lim   limits
	slots slots
	env   map[string]string
}

func openApptainer(ctx context.Context, name string, cfg Config) (*apptainerEngine, error) {
	bin, err := exec.LookPath("apptainer")
	if err != nil {
		if bin, err = exec.LookPath("singularity"); err != nil {
			return nil, fmt.Errorf("sandbox %s: apptainer: neither apptainer nor singularity is on PATH: %w", name, ErrUnavailable)
		}
	}
	if cfg.Image == "" {
		return nil, fmt.Errorf("sandbox %s: apptainer: no image", name)
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if out, err := exec.CommandContext(pctx, bin, "version").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sandbox %s: apptainer: %s version: %s: %w", name, bin, firstLines(out, 3), ErrUnavailable)
	}
	return &apptainerEngine{
		name:  name,
		log:   cfg.Logger,
		bin:   bin,
		image: cfg.Image,
		lim:   limitsOf(cfg),
		slots: make(slots, concurrency(cfg)),
		env:   cfg.Env,
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

// argv is the apptainer command line of a job.
func (a *apptainerEngine) argv(wd string, timeout time.Duration, command []string) []string {
	argv := []string{
		a.bin, "exec",
		"--containall", "--no-home",
		"--net", "--network", "none",
		"--bind", wd + ":/work",
		"--pwd", "/work",
		a.image,
	}
	argv = append(argv, a.lim.prlimitArgv("prlimit", timeout)...)
	return append(argv, command...)
}

func (a *apptainerEngine) Run(ctx context.Context, job Job) (*Result, error) {
	if len(job.Command) == 0 {
		return nil, fmt.Errorf("sandbox %s: empty command", a.name)
	}
	if err := a.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	defer a.slots.release()
	wd, err := newWorkDir("", job.Files)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	defer func() {
		if err := wd.remove(); err != nil {
			a.log.Warn("sandbox cleanup", "sandbox", a.name, "err", err)
		}
	}()
	env := map[string]string{"HOME": "/work"}
	maps.Copy(env, a.env)
	maps.Copy(env, job.Env)
	timeout := a.lim.jobTimeout(job)
	out, err := runCLI(ctx, cliJob{
		argv:    a.argv(wd.path, timeout, job.Command),
		env:     cliEnv(a.envPrefix(), env),
		stdin:   job.Stdin,
		timeout: timeout,
		output:  a.lim.output,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: apptainer: %w", a.name, err)
	}
	res := out.res
	// Apptainer's own failures (an image it cannot pull or build, a
	// command missing from the image) exit 255 with a FATAL line.
	if res.ExitCode == 255 && !out.info.timedOut && !out.info.outputCap {
		if i := bytes.Index(res.Stderr, []byte("FATAL:")); i >= 0 {
			return nil, fmt.Errorf("sandbox %s: apptainer: cannot run image %q: %s", a.name, a.image,
				strings.Join(strings.Fields(firstLines(res.Stderr[i:], 2)), " "))
		}
	}
	res.Limit = classify(out.info, res.Stderr)
	if res.Files, err = wd.collect(job.Collect, a.lim.fileSize); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	return res, nil
}
