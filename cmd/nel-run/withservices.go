package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/serve"
	"github.com/spf13/cobra"
)

const withServicesHelp = `Start the managed services of the compiled plan --plan on this machine
(local runs, the Makefile target), wait until they are ready, run the command
after -- with each service's URL in its NEL_SERVICE_<NAME>_URL variable, and
stop the services when it ends. Exits with the command's status.

  nel-run with-services --plan out/.nel/plan-<id>.json -- make shards`

type withServicesOptions struct {
	plan, out string
}

func newWithServicesCmd(e *env) *cobra.Command {
	o := &withServicesOptions{}
	c := &cobra.Command{Use: "with-services [flags] -- COMMAND [ARG]...", Short: "start a plan's process servers, run a command, stop them", Long: withServicesHelp}
	f := c.Flags()
	f.StringVar(&o.plan, "plan", "", "compiled plan `FILE` (required)")
	f.StringVar(&o.out, "out", "", "output `DIR` for server logs (default: the folder holding the plan's .nel folder)")
	// The command's own flags are its own: flags end at the first argument.
	cli.FlagsFirst(c)
	return command(e, c, true, func(ctx context.Context, args []string) int {
		if o.plan == "" {
			return usageError(e, c, "--plan is required")
		}
		if len(args) == 0 {
			return usageError(e, c, "a command to run after -- is required")
		}
		return o.run(ctx, e, args)
	})
}

// run starts the plan's services, runs args with their URLs in its
// environment, and returns its exit status.
func (o *withServicesOptions) run(ctx context.Context, e *env, args []string) int {
	p, err := readPlan(o.plan)
	if err != nil {
		e.errorf("with-services: %v", err)
		return exitFailure
	}
	self, _ := os.Executable()
	dir := rundir.Dir(outDir(o.plan, o.out, p))
	var out string
	planFile, err := filepath.Abs(o.plan)
	if err == nil {
		out, err = filepath.Abs(string(dir))
	}
	if err != nil {
		e.errorf("with-services: %v", err)
		return exitFailure
	}
	servers, err := serve.StartAll(ctx, p, serve.StartOptions{
		// A gym service's nel-run serve reads this plan, with this
		// nel-run, and writes its endpoint in the output folder.
		Env:         []string{"NEL_PLAN=" + planFile, "NEL_RUN=" + self, "NEL_OUT=" + out},
		LogDir:      string(dir.Logs()),
		RecordDir:   dir.Servers(),
		PathPrepend: filepath.Dir(self),
		Logger:      e.log,
		Progress:    func(msg string) { e.errorf("%s", msg) },
	})
	if err != nil {
		e.errorf("with-services: %v", err)
		return exitFailure
	}
	defer serve.StopAll(servers, 10*time.Second)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
	cmd.Env = os.Environ()
	for _, s := range servers {
		cmd.Env = append(cmd.Env, s.Env+"="+s.URL)
	}
	// Without its services the command cannot work: it goes when
	// nel-run goes, even by kill -9. SIGTERM lets make stop its
	// jobs (SIGKILL would leave them running), when nel-run dies and
	// when a signal stops it.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	waited, err := serve.StartTied(cmd, serve.Tie{Term: true})
	if err == nil {
		err = <-waited
	}
	return childExit(ctx, e, "with-services", err)
}

// childExit is nel-run's status after a command it ran ended with err:
// the command's own status, or a failure said on stderr (a signal that
// stopped it, the command had SIGTERM: say which).
func childExit(ctx context.Context, e *env, what string, err error) int {
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		e.errorf("%s: stopped: %v", what, context.Cause(ctx))
		return exitFailure
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		e.errorf("%s: %v", what, err)
		return exitFailure
	}
	return exitOK
}
