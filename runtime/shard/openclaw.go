package shard

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/openclaw"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// The openclaw solver (NeMo's OpenClawSolver): the OpenClaw agent CLI
// works on each task in the sample's sandbox session, in place of nel's
// own loop, then the task's verifier scores /app as for tool_calling.
// OpenClaw calls the model itself, through the shard's proxy (the
// service's interceptors, a per-shard token: the model's key never
// reaches the sandbox) behind a front that keeps the conversation for the
// turns (runtime/openclaw.Front). The session shares the host's network so
// OpenClaw reaches them on loopback, and sees OpenClaw's install and its
// Node.js read-only.

// claw is an openclaw shard's CLI, proxy and front.
type claw struct {
	settings openclaw.Settings
	// argv0 runs OpenClaw (node and its script, or the executable);
	// binds are the host paths it needs, bound read-only.
	argv0, binds []string
	// missing is why the executable was not found, when skip_preflight
	// let the shard start without it: every sample is an infra error.
	missing error
	proxy   *intercept.AgentProxy
	front   *openclaw.Front
}

// openClaw finds the OpenClaw executable and starts the proxy and its
// front. The closer stops them.
func (r *runner) openClaw(ctx context.Context) (func(), error) {
	oc := r.b.Solver.OpenClaw
	if oc == nil {
		return nil, fmt.Errorf("benchmark %s: the plan's openclaw solver has no settings", r.b.Key)
	}
	c := &claw{settings: openclaw.Settings{Bin: oc.Bin, Thinking: oc.Thinking, ContextWindow: oc.ContextWindow,
		MaxConcurrent: oc.MaxConcurrent, IdleTimeoutSeconds: oc.IdleTimeoutSeconds}}
	if mt := r.b.Solver.Generation.MaxTokens; mt != nil {
		// The service's max_tokens is the model's in OpenClaw's config
		// (NeMo's solver takes it from the service the same way).
		c.settings.MaxTokens = int(*mt)
	}
	var err error
	c.argv0, c.binds, err = clawCommand(oc.Bin)
	switch {
	case err != nil && !oc.SkipPreflight:
		return nil, fmt.Errorf("benchmark %s: openclaw_bin: %w (install OpenClaw on the node, or name its path)", r.b.Key, err)
	case err != nil:
		c.missing = err
	}
	if c.proxy, err = r.startModelProxy(ctx, "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("openclaw: the model's proxy: %w", err)
	}
	if c.front, err = openclaw.StartFront(ctx, c.proxy.URL); err != nil {
		c.proxy.Stop()
		return nil, err
	}
	r.claw = c
	r.log.Info("openclaw: the agent reaches the model through nel's proxy", "openclaw", c.argv0, "proxy", c.proxy.URL)
	return func() { c.front.Stop(); c.proxy.Stop() }, nil
}

// clawCommand is how the session runs bin: a Node.js script (npm's
// openclaw.mjs) by the node in PATH, with the node_modules it lives in
// and node's install bound; another executable as itself, with its
// folder. What is under /usr the sandbox sees already.
func clawCommand(bin string) (argv0, binds []string, err error) {
	p, err := exec.LookPath(bin)
	if err != nil {
		return nil, nil, err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, nil, err
	}
	if ext := filepath.Ext(real); ext != ".mjs" && ext != ".js" {
		return []string{real}, hostPaths(filepath.Dir(real)), nil
	}
	node, err := exec.LookPath("node")
	if err == nil {
		node, err = filepath.EvalSymlinks(node)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s is a Node.js script and node is not in PATH: %w", real, err)
	}
	pkg := filepath.Dir(real)
	// npm hoists a package's dependencies into the node_modules above it.
	for d := pkg; d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			pkg = d
			break
		}
	}
	return []string{node, real}, hostPaths(filepath.Dir(filepath.Dir(node)), pkg), nil
}

// hostPaths are the paths a session must bind, those under /usr left out.
func hostPaths(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p != "/usr" && !strings.HasPrefix(p, "/usr/") && p != "/" {
			out = append(out, p)
		}
	}
	return out
}

// clawHome is HOME in the session: OpenClaw's config and state go in
// /tmp/.openclaw, away from the task's files in /app, and the message
// beside them.
const (
	clawHome    = sandbox.SessionTmp
	clawConfig  = clawHome + "/.openclaw/openclaw.json"
	clawMessage = clawHome + "/.openclaw/nel-message.txt"
)

// runClaw runs OpenClaw on task in sess: its config written, one agent
// turn with the task's instruction within the agent's timeout, the result
// read into the loop's form.
func (r *runner) runClaw(ctx context.Context, sess sandbox.Session, task *harbor.Task, prompt string, seed int64) *agent.Result {
	c := r.claw
	if c.missing != nil {
		return clawInfra(failure.SandboxError, fmt.Errorf("openclaw_bin: %w", c.missing))
	}
	session := fmt.Sprintf("%016x", uint64(seed))
	base := strings.TrimSuffix(c.front.URL, "/v1") + "/s/" + session + "/v1"
	cfg, err := openclaw.Config(c.settings, base, r.svc.Model, c.proxy.Token, sandbox.SessionApp)
	if err != nil {
		return clawInfra(failure.SandboxError, err)
	}
	env := map[string]string{"HOME": clawHome}
	for _, f := range []struct{ name, path string }{{"config", clawConfig}, {"message", clawMessage}} {
		data := cfg
		if f.name == "message" {
			data = []byte(prompt)
		}
		write := sandbox.Command{Argv: []string{"/bin/sh", "-c", `mkdir -p "${0%/*}" && cat > "$0"`, f.path},
			Stdin: data, Env: env, Timeout: 30 * time.Second}
		if res, err := sess.Exec(ctx, write); err != nil || res.ExitCode != 0 {
			return clawInfra(failure.SandboxError, fmt.Errorf("openclaw: write its %s: %w", f.name, execErr(res, err)))
		}
	}
	timeout := r.clawTimeout(task)
	run := sandbox.Command{Argv: append(append([]string{}, c.argv0...), openclaw.Args(c.settings, "nel-"+session, clawMessage)[1:]...),
		Env: env, Timeout: timeout, Network: true, ReadOnly: c.binds}
	res, err := sess.Exec(ctx, run)
	last := c.front.Take(session)
	if c.front.Simulated() {
		r.simulated.Store(true)
	}
	switch {
	case err != nil:
		return clawInfra(failure.SandboxError, fmt.Errorf("openclaw: %w", err))
	case res.Limit == sandbox.LimitTimeout:
		return &agent.Result{Outcome: agent.TimeBudget, Err: fmt.Errorf("openclaw: timed out after %s", timeout)}
	case res.Limit == sandbox.LimitMemory:
		// RLIMIT_AS: V8 reserves address space far beyond what it uses.
		return clawInfra(failure.SandboxError, fmt.Errorf("openclaw: stopped by the sandbox's memory limit (Node.js reserves more address space than it uses: give the sandbox memory: \"16GB\"): %s", tail(res.Stderr)))
	case res.Limit != sandbox.LimitNone:
		return clawInfra(failure.SandboxError, fmt.Errorf("openclaw: stopped by the sandbox's %s limit: %s", res.Limit, tail(res.Stderr)))
	}
	out := openclaw.Outcome(res.Stdout, res.ExitCode)
	if out.Outcome == agent.InfraError && len(out.Turns) == 0 {
		out.Err = fmt.Errorf("%w; stderr: %s", out.Err, tail(res.Stderr))
	}
	if n := len(out.Turns); n > 0 {
		turns, err := openclaw.Turns(last, out.Turns[n-1])
		if err != nil {
			r.log.Warn("openclaw: the conversation could not be read; only its reply is a turn", "err", err)
		} else {
			out.Turns = turns
		}
	}
	return out
}

// clawTimeout is the agent's timeout, NeMo's rule: nel's (run_timeout,
// else the benchmark's timeout) against the task's own [agent].timeout_sec
// by timeout_strategy, capped by max_agent_timeout.
func (r *runner) clawTimeout(task *harbor.Task) time.Duration {
	oc := r.b.Solver.OpenClaw
	nel := r.sampleBudget()
	if oc.RunTimeout > 0 {
		nel = time.Duration(oc.RunTimeout * float64(time.Second))
	}
	t := nel
	if own := task.Config.AgentTimeout; own > 0 {
		switch oc.TimeoutStrategy {
		case "task":
			t = min(nel, own)
		case "max":
			t = max(nel, own)
		}
	}
	if oc.MaxAgentTimeout > 0 {
		t = min(t, time.Duration(oc.MaxAgentTimeout*float64(time.Second)))
	}
	return t
}

func clawInfra(cat failure.Category, err error) *agent.Result {
	return &agent.Result{Outcome: agent.InfraError, Err: &failure.Error{Category: cat, Err: err}}
}

// execErr is why a session command failed: its error, or its status and
// the end of its stderr.
func execErr(res *sandbox.Result, err error) error {
	if err != nil {
		return err
	}
	return errors.New("exit status " + fmt.Sprint(res.ExitCode) + ": " + tail(res.Stderr))
}

// tail is the end of a program's stderr, enough to say why it failed.
func tail(b []byte) string {
	const n = 2000
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
