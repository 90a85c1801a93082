package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
)

// StartOptions configures Start.
type StartOptions struct {
	// LogDir receives one log file per server (rundir.Logs.Server): a run
	// folder's rundir.Dir.Logs.
	LogDir string
	// Getenv resolves the environment references of a service's env; nil
	// means os.Getenv.
	Getenv func(string) string
	// PathPrepend, when set, is put in front of PATH for the servers (so
	// a recipe can run "nel-run sim-server" next to nel).
	PathPrepend string
	// Env is NAME=VALUE entries the servers get besides this process's
	// environment (a run's NEL_PLAN, for nel-run serve --plan "$NEL_PLAN").
	Env    []string
	Logger *slog.Logger
	// Progress receives "waiting for …" lines while a server starts.
	Progress func(string)
	// RecordDir, when set, holds the records of the servers started for a
	// run folder (rundir.Dir.Servers): StartAll first stops the servers that
	// an earlier run recorded there and left running, and each server is
	// recorded there while it runs.
	RecordDir string
	// Dir is the directory a process service's command runs in: the
	// recipe's (StartAll sets the plan's recipe_dir), so that its relative
	// arguments resolve as the recipe's other paths do. "" is this
	// process's own.
	Dir string
}

// withDefaults fills o's unset fields.
func (o StartOptions) withDefaults() StartOptions {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// Server is a running managed server.
type Server struct {
	Name string
	// URL is its base URL (http://127.0.0.1:<port>/v1, a Gym server's
	// without /v1: BasePath), and Env the
	// variable the plan reads it from.
	URL, Env string
	Log      string
	cmd      *exec.Cmd
	exited   chan struct{}
	// rec and recPath are its record in StartOptions.RecordDir (nil and
	// "" when it has none).
	rec     *record
	recPath string
}

// StartAll starts the plan's managed services on this machine, one after
// the other, each health-waited before the next starts. On error the ones
// already started are stopped. With o.RecordDir, servers an earlier run
// left there are stopped first.
func StartAll(ctx context.Context, p *plan.Plan, o StartOptions) ([]*Server, error) {
	o = o.withDefaults()
	o.Dir = p.RecipeDir
	if o.RecordDir != "" {
		if err := reap(ctx, o.RecordDir, 10*time.Second, o); err != nil {
			return nil, err
		}
	}
	var servers []*Server
	for _, svc := range p.Services {
		if !svc.Managed {
			continue
		}
		s, err := Start(ctx, svc, o)
		if err != nil {
			StopAll(servers, 10*time.Second)
			return nil, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// Start runs one managed service's command (no shell of the recipe's) in
// its own process group, under a supervisor tied to this process
// (supervised, StartTied), and waits until its health URL answers. A port
// that another process holds is an error that names it.
func Start(ctx context.Context, svc plan.Service, o StartOptions) (*Server, error) {
	if len(svc.Command) == 0 {
		return nil, fmt.Errorf("service %s: no command to start", svc.Name)
	}
	o = o.withDefaults()
	if svc.Port > 0 {
		if err := checkPort(svc.Port, o.RecordDir); err != nil {
			return nil, fmt.Errorf("service %s: %w", svc.Name, err)
		}
	}
	token := rand.Text()
	env := append(append(os.Environ(), o.Env...), serverEnv+"="+token)
	if o.PathPrepend != "" {
		env = append(env, "PATH="+o.PathPrepend+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	for _, e := range svc.Env {
		v := e.Value
		if e.From != nil {
			v = o.Getenv(e.From.Name)
			if v == "" && e.From.Default != nil {
				v = *e.From.Default
			}
			if v == "" {
				return nil, fmt.Errorf("service %s: env %s comes from $%s, which is not set", svc.Name, e.Name, e.From.Name)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	argv0 := svc.Command[0]
	if o.PathPrepend != "" && !strings.Contains(argv0, "/") {
		if p := filepath.Join(o.PathPrepend, argv0); isExecutable(p) {
			argv0 = p
		}
	}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("service %s: %w", svc.Name, err)
	}
	logPath := rundir.Logs(o.LogDir).Server(svc.Name, "")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", svc.Name, err)
	}
	defer logf.Close()
	dir := o.Dir
	if svc.Serves != nil {
		// nel-run serve resolves the plan's paths (its data) against the
		// plan's recipe_dir itself, as a shard does: it runs where nel does.
		dir = ""
	}
	cmd, err := supervised(dir, argv0, svc.Command[1:])
	if err != nil {
		return nil, fmt.Errorf("service %s: start %s: %w", svc.Name, svc.Command[0], err)
	}
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	waited, err := StartTied(cmd, Tie{Group: true, Term: true})
	if err != nil {
		return nil, fmt.Errorf("service %s: start %s: %w", svc.Name, svc.Command[0], err)
	}
	s := &Server{
		Name: svc.Name, Env: svc.URLEnv, Log: logPath, cmd: cmd, exited: make(chan struct{}),
		URL: "http://127.0.0.1:" + strconv.Itoa(svc.Port) + BasePath(svc.Type),
	}
	go func() { <-waited; close(s.exited) }()
	o.Logger.Info("started server", "service", svc.Name, "pid", cmd.Process.Pid, "log", logPath)
	if o.RecordDir != "" {
		if err := s.record(o.RecordDir, svc, token); err != nil {
			s.Stop(5 * time.Second)
			return nil, fmt.Errorf("service %s: %w", svc.Name, err)
		}
	}

	health := svc.HealthPath
	if health == "" {
		health = "/health"
	}
	timeout := time.Duration(svc.StartupTimeout * float64(time.Second))
	var or []string
	if svc.Type == "gym" {
		// NeMo's managed Gym server is up at /health or /openapi.json.
		or = []string{"http://127.0.0.1:" + strconv.Itoa(svc.Port) + "/openapi.json"}
	}
	err = WaitReady(ctx, WaitOptions{
		Or:       or,
		URL:      "http://127.0.0.1:" + strconv.Itoa(svc.Port) + health,
		Name:     svc.Name,
		PID:      cmd.Process.Pid,
		LogFile:  logPath,
		Timeout:  timeout,
		Interval: 100 * time.Millisecond,
		Progress: o.Progress,
		Logger:   o.Logger,
	})
	if err == nil {
		select {
		case <-s.exited: // a zombie still answers kill(pid, 0)
			err = fmt.Errorf("server %s exited during startup; log %s", svc.Name, logPath)
		default:
		}
	}
	if err != nil {
		s.Stop(5 * time.Second)
		return nil, err
	}
	return s, nil
}

// BasePath is what a managed server's base URL has after host:port: an
// OpenAI server's /v1, nothing for a Gym resource server (its routes,
// /seed_session and /verify, are at the root).
func BasePath(serviceType string) string {
	if serviceType == "gym" {
		return ""
	}
	return "/v1"
}

// record writes s's record into dir. A server that has already exited
// (WaitReady will say why) or a system without /proc, where the record
// could not be checked, gets none.
func (s *Server) record(dir string, svc plan.Service, token string) error {
	server, err := identify(s.cmd.Process.Pid)
	if err != nil {
		return nil
	}
	owner, err := identify(os.Getpid())
	if err != nil {
		return nil
	}
	r := &record{Service: svc.Name, Command: svc.Command, Port: svc.Port, Server: server, Token: token, Owner: owner}
	path, err := writeRecord(dir, r)
	if err != nil {
		return err
	}
	s.rec, s.recPath = r, path
	return nil
}

// Stop asks the server's process group to terminate and kills it after
// grace. Then what the server started and left behind (a worker that
// ignored SIGTERM or left the group) is stopped too, and once nothing of
// the server runs its record is removed.
func (s *Server) Stop(grace time.Duration) error {
	err := s.stop(grace)
	if s.rec == nil {
		return err
	}
	ids, lerr := s.rec.liveMembers()
	if lerr == nil && len(ids) > 0 {
		lerr = terminate(context.Background(), ids, time.Second)
	}
	if err == nil && lerr == nil {
		os.Remove(s.recPath)
	}
	return err
}

// stop stops the server's process group.
func (s *Server) stop(grace time.Duration) error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	signalGroup(s.cmd, false)
	select {
	case <-s.exited:
		return nil
	case <-time.After(grace):
	}
	signalGroup(s.cmd, true)
	select {
	case <-s.exited:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("server " + s.Name + " did not stop")
	}
}

// StopAll stops servers in reverse start order.
func StopAll(servers []*Server, grace time.Duration) {
	for i := len(servers) - 1; i >= 0; i-- {
		servers[i].Stop(grace)
	}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// supervisor is the shell a managed server runs under on Linux, the leader
// of the server's process group. The parent-death signal reaches only the
// process nel started: when nel is killed with SIGKILL, a server's own
// children (a wrapper script's server, vLLM's workers) would outlive it,
// holding the port and the GPU. The supervisor gets SIGTERM instead
// (Tie.Term) and passes it to its whole group; once the server has exited,
// SIGKILL goes to what is left of the group (the supervisor included). A
// server that ignores SIGTERM keeps it waiting: the next run in the folder
// stops both (reap). The server runs in the background so that the trap
// can run while it does ("$@" in the foreground would hold the trap until
// it exits); an asynchronous command of a shell starts with SIGINT and
// SIGQUIT ignored, which changes nothing here: nel stops servers with
// SIGTERM. A server that exits by itself exits the supervisor with its
// status.
const supervisor = `trap 'trap "" TERM INT HUP; kill -TERM 0; wait "$child"; kill -KILL 0' TERM INT HUP
"$@" &
child=$!
wait "$child"`

// supervised is the command that runs argv0 with args under the
// supervisor on Linux, and directly elsewhere (no parent-death signal
// there for the supervisor to act on) or in an image without /bin/sh. A
// command that cannot be found is an error now, as exec.Command's own
// would be. A relative path with a slash is looked up in dir, where the
// command runs (paths in a recipe are relative to its directory).
func supervised(dir, argv0 string, args []string) (*exec.Cmd, error) {
	look := argv0
	if dir != "" && strings.Contains(argv0, "/") && !filepath.IsAbs(argv0) {
		look = filepath.Join(dir, argv0)
	}
	if _, err := exec.LookPath(look); err != nil {
		return nil, err
	}
	if runtime.GOOS != "linux" || !isExecutable("/bin/sh") {
		return exec.Command(argv0, args...), nil
	}
	return exec.Command("/bin/sh", append([]string{"-c", supervisor, "nel-server", argv0}, args...)...), nil
}
