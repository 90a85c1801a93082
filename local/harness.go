package local

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/runtime/harbor/tbench"
	"github.com/nel-eval/nel/runtime/harness"
	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/serve"
)

// runHarnesses runs the recipe's harness benchmarks one after the other,
// each in its image with docker (else apptainer), then reads its output
// into the benchmark's shard (runtime/harness). It says each failure and
// returns how many failed.
func runHarnesses(ctx context.Context, s *compiler.Source, p *plan.Plan, o Options, getenv func(string) string, stderr io.Writer) int {
	failed := 0
	for i := range p.Benchmarks {
		b := &p.Benchmarks[i]
		if b.Harness == nil {
			continue
		}
		if err := runHarness(ctx, s, p, i, o, getenv, stderr); err != nil {
			fmt.Fprintf(stderr, "nel: benchmark %s: %v\n", b.Key, err)
			failed++
		}
	}
	return failed
}

func runHarness(ctx context.Context, s *compiler.Source, p *plan.Plan, i int, o Options, getenv func(string) string, stderr io.Writer) error {
	b := &p.Benchmarks[i]
	bench := rundir.Dir(p.OutputDir).Benchmark(b.Dir)
	if _, err := os.Stat(string(bench.Shard(0, 1))); err == nil {
		fmt.Fprintf(stderr, "nel: %s: already run by its harness and ingested\n", b.Key)
		return nil
	}
	lh, _ := compiler.HarnessLocal(s, i)
	if lh.TasksGit != nil {
		// The tasks come from a git repository: made in the run folder,
		// as the job's nel-run harbor-tasks makes them.
		sources, err := filepath.Abs(rundir.Dir(p.OutputDir).Sources())
		if err != nil {
			return err
		}
		level := slog.LevelWarn
		if o.Verbose {
			level = slog.LevelInfo
		}
		log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("benchmark", b.Key)
		if lh.TasksDir, err = tbench.Prepare(ctx, lh.TasksDataset, *lh.TasksGit, sources, log); err != nil {
			return err
		}
	}
	dir, err := filepath.Abs(bench.Harness())
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if b.Harness.Config != "" {
		if err := os.WriteFile(filepath.Join(dir, lh.ConfigFile), []byte(b.Harness.Config+"\n"), 0o644); err != nil {
			return err
		}
	}
	env, err := harnessEnv(p, b, lh, getenv)
	if err != nil {
		return err
	}
	stop, err := behindProxy(ctx, s, p, i, env, stderr)
	if err != nil {
		return err
	}
	defer stop()
	if lh.HostPathEnv != "" {
		env[lh.HostPathEnv] = dir
		lh.Mounts = append(lh.Mounts, dir+":"+dir)
	}
	if lh.TasksDir != "" {
		env[lh.TasksEnv] = lh.TasksDir
		lh.Mounts = append(lh.Mounts, lh.TasksDir+":"+lh.TasksDir+":ro")
	}
	container := "nel-harness-" + rand.Text()[:12]
	argv, err := containerArgv(b.Harness.Image, dir, lh, env, container)
	if err != nil {
		return err
	}
	argv = append(argv, "bash", "-c", lh.Script, "nel-harness")
	argv = append(argv, b.Harness.Argv...)
	logPath := rundir.Dir(p.OutputDir).Logs().Harness(b.Dir, "")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(stderr, "nel: %s: running %s in %s with %s (log: %s)\n", b.Key, b.Harness.Kind, b.Harness.Image, argv[0], logPath)
	started := time.Now()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v, "APPTAINERENV_"+k+"="+v)
	}
	cmd.Cancel = stopContainer(cmd, argv, container)
	// The engine's CLI dies with nel, even by kill -9 (a docker container
	// then runs on until its harness ends, removed by --rm; docker kill
	// nel-harness-… stops it sooner).
	if err := serve.RunTied(cmd, serve.Tie{}); err != nil {
		return fmt.Errorf("its harness failed (%v); its log: %s", err, logPath)
	}
	res, err := harness.Ingest(ctx, harness.IngestOptions{Plan: p, Benchmark: b, OutDir: p.OutputDir, NelVersion: o.NelVersion, Started: started})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "nel: %s: %d rows from its harness\n", b.Key, res.Rows)
	return nil
}

// behindProxy puts benchmark i's harness behind its service's chain (or
// request_timeout), as a SLURM job runs it behind nel-run proxy: the
// proxy serves in this process for as long as the harness runs, the
// harness gets its URL and a token made for it in env, and the
// upstream's URL and key stay with the proxy. stop stops it.
func behindProxy(ctx context.Context, s *compiler.Source, p *plan.Plan, i int, env map[string]string, stderr io.Writer) (stop func(), err error) {
	cfg, dirs, ok := compiler.HarnessProxy(s, p, i)
	if !ok {
		return func() {}, nil
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	upstream := maps.Clone(env)
	ap, err := intercept.StartAgentProxy(ctx, cfg, func(k string) string { return upstream[k] }, intercept.Env{})
	if err != nil {
		return nil, fmt.Errorf("its proxy: %w", err)
	}
	env["NEL_HARNESS_URL"], env["NEL_HARNESS_API_KEY"] = ap.URL, ap.Token
	fmt.Fprintf(stderr, "nel: %s: its model calls go through %s at %s\n", p.Benchmarks[i].Key, proxyDoes(cfg), ap.URL)
	return func() { ap.Stop() }, nil
}

// proxyDoes says what the proxy does to a harness's calls: its
// interceptors, its request_timeout, or both ("1 interceptor and a 30s
// request_timeout"); never "0 interceptors".
func proxyDoes(cfg intercept.ProxyConfig) string {
	var parts []string
	switch n := len(cfg.Interceptors); n {
	case 0:
	case 1:
		parts = append(parts, "1 interceptor")
	default:
		parts = append(parts, fmt.Sprintf("%d interceptors", n))
	}
	if cfg.RequestTimeout > 0 {
		parts = append(parts, fmt.Sprintf("a %gs request_timeout", cfg.RequestTimeout))
	}
	return strings.Join(parts, " and ")
}

// harnessEnv is the harness's environment, by name: the endpoint's base
// URL, its key, and the rest LocalHarness lists, resolved here. Values are
// given to the engine in its environment, never on its command line.
func harnessEnv(p *plan.Plan, b *plan.Benchmark, lh compiler.LocalHarness, getenv func(string) string) (map[string]string, error) {
	env := map[string]string{}
	for _, sv := range p.Services {
		if sv.Name != b.Solver.Service {
			continue
		}
		url := sv.URL
		if sv.Managed {
			url = getenv(sv.URLEnv)
		}
		env["NEL_HARNESS_URL"] = plan.BaseURL(os.Expand(url, getenv))
		if sv.APIKey != nil {
			env["NEL_HARNESS_API_KEY"] = resolve(plan.EnvVar{Name: "NEL_HARNESS_API_KEY", From: sv.APIKey}, getenv)
		}
	}
	if env["NEL_HARNESS_URL"] == "" {
		return nil, fmt.Errorf("service %s has no URL here", b.Solver.Service)
	}
	for _, e := range lh.Env {
		env[e.Name] = resolve(e, getenv)
	}
	return env, nil
}

func resolve(e plan.EnvVar, getenv func(string) string) string {
	switch {
	case e.From == nil:
		return e.Value
	case getenv(e.From.Name) == "" && e.From.Default != nil:
		return *e.From.Default
	}
	return getenv(e.From.Name)
}

// stopContainer is cmd's Cancel when nel stops (a signal, nel stop): a
// killed docker CLI would leave its container running, so the container
// is killed by its name first.
func stopContainer(cmd *exec.Cmd, argv []string, container string) func() error {
	return func() error {
		if len(argv) > 1 && argv[1] == "run" {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			exec.CommandContext(ctx, argv[0], "kill", container).Run()
		}
		return cmd.Process.Kill()
	}
}

// containerArgv starts the engine's command that runs image with the
// harness's folder and mounts, the environment's names passed through:
// docker where it is installed (the container named container, so that
// it can be stopped), else apptainer (or SingularityCE's singularity).
func containerArgv(image, dir string, lh compiler.LocalHarness, env map[string]string, container string) ([]string, error) {
	if docker, err := exec.LookPath("docker"); err == nil {
		// The host's network: a local endpoint is on localhost.
		argv := []string{docker, "run", "--rm", "--name", container, "--network", "host", "-v", dir + ":" + lh.Inside}
		for _, m := range lh.Mounts {
			argv = append(argv, "-v", m)
		}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			argv = append(argv, "-e", k) // the value comes from docker's own environment
		}
		return append(argv, image), nil
	}
	// SingularityCE's singularity takes apptainer's command line, as the
	// apptainer sandbox does (runtime/sandbox/apptainer.go).
	for _, name := range []string{"apptainer", "singularity"} {
		if app, err := exec.LookPath(name); err == nil {
			binds := append([]string{dir + ":" + lh.Inside}, lh.Mounts...)
			return []string{app, "exec", "--bind", strings.Join(binds, ","), "docker://" + image}, nil
		}
	}
	return nil, errors.New("not supported here: a harness benchmark runs in its container image, and neither docker nor apptainer (or singularity) is installed (or compile it for SLURM with nel compile)")
}
