package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/nel-eval/nel/runtime/serve"
)

var withServicesCommand = &command{
	name: "with-services",
	args: true,
	summary: `Start the managed services of the compiled plan --plan on this machine
(local runs, the Makefile target), wait until they are ready, run the command
after -- with each service's URL in its NEL_SERVICE_<NAME>_URL variable, and
stop the services when it ends. Exits with the command's status.

  nel-run with-services --plan out/.nel/plan-<id>.json -- make shards`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		planPath := fs.String("plan", "", "compiled plan `FILE` (required)")
		out := fs.String("out", "", "output `DIR` for server logs (default: the folder holding the plan's .nel folder)")
		return func(ctx context.Context, e *env) int {
			if *planPath == "" {
				return usageError(e, fs, "--plan is required")
			}
			if fs.NArg() == 0 {
				return usageError(e, fs, "a command to run after -- is required")
			}
			p, err := readPlan(*planPath)
			if err != nil {
				e.errorf("with-services: %v", err)
				return exitFailure
			}
			self, _ := os.Executable()
			dir := outDir(*planPath, *out, p)
			servers, err := serve.StartAll(ctx, p, serve.StartOptions{
				LogDir:      filepath.Join(dir, "logs"),
				RecordDir:   serve.RecordDir(dir),
				PathPrepend: filepath.Dir(self),
				Logger:      e.log,
				Progress:    func(msg string) { e.errorf("%s", msg) },
			})
			if err != nil {
				e.errorf("with-services: %v", err)
				return exitFailure
			}
			defer serve.StopAll(servers, 10*time.Second)
			cmd := exec.CommandContext(ctx, fs.Arg(0), fs.Args()[1:]...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
			cmd.Env = os.Environ()
			for _, s := range servers {
				cmd.Env = append(cmd.Env, s.Env+"="+s.URL)
			}
			// Without its services the command cannot work: it goes when
			// nel-run goes, even by kill -9. SIGTERM lets make stop its
			// jobs (SIGKILL would leave them running).
			waited, err := serve.StartTied(cmd, serve.Tie{Term: true})
			if err == nil {
				err = <-waited
			}
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return exit.ExitCode()
			}
			if err != nil {
				e.errorf("with-services: %v", err)
				return exitFailure
			}
			return exitOK
		}
	},
}
