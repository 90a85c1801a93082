package sandbox

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
)

// The container engine runs a job as a plain process of the container it
// is in: the container is the isolation. It is the engine of nel-run
// sandbox-serve inside an ECS Fargate task (ecs.go), where the task is a
// microVM of its own and neither bubblewrap's user namespaces nor a
// container runtime is available. Each job gets a fresh work directory,
// its own environment (nothing of the server's: its token stays out), the
// wall-clock timeout and the output caps; the memory and CPU limits are
// the task's.
type container struct {
	name  string
	env   map[string]string
	lim   limits
	slots slots
	// root is where a session keeps /app, /logs, /tmp and /tests: "" is
	// the container's own root (container_session.go).
	root string
	held atomic.Bool // a session was opened (container_session.go)
}

func openContainer(name string, cfg Config) *container {
	return &container{name: name, env: cfg.Env, lim: limitsOf(cfg), slots: make(slots, concurrency(cfg)), root: cfg.Root}
}

func (c *container) Name() string { return c.name }
func (c *container) Close() error { return nil }

func (c *container) Run(ctx context.Context, job Job) (*Result, error) {
	if len(job.Command) == 0 {
		return nil, fmt.Errorf("sandbox %s: empty command", c.name)
	}
	if err := c.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", c.name, err)
	}
	defer c.slots.release()
	wd, err := newWorkDir("", job.Files)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", c.name, err)
	}
	defer wd.remove()
	out, err := runCLI(ctx, cliJob{
		argv:    job.Command,
		env:     c.jobEnv(wd.path, job.Env),
		dir:     wd.path,
		stdin:   job.Stdin,
		timeout: c.lim.jobTimeout(job),
		output:  c.lim.output,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", c.name, err)
	}
	res := out.res
	res.Limit = classify(out.info, res.Stderr)
	if res.Files, err = wd.collect(job.Collect, c.lim.fileSize); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", c.name, err)
	}
	return res, nil
}

// jobEnv is a job's environment: the image's PATH (so that python3 is
// found as in the image), HOME at the work directory, then the Config's
// and the job's own settings.
func (c *container) jobEnv(home string, own map[string]string) []string {
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": home}
	if env["PATH"] == "" {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	maps.Copy(env, c.env)
	maps.Copy(env, own)
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// InstallSelf copies the running executable (nel-run) to dst, executable
// by all: the first container of an ecs_fargate task puts nel-run where
// the job's image runs it from. It streams the ~40 MB binary rather than
// holding it in memory, and renames it into place whole, so a container
// never runs a partly written nel-run.
func InstallSelf(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install nel-run: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("install nel-run: %w", err)
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("install nel-run: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return fmt.Errorf("install nel-run: %w", err)
	}
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Chmod(0o755) // whatever the umask
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("install nel-run: %w", err)
	}
	return nil
}
