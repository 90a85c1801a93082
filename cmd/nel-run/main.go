// Command nel-run is the compute-node half of nel. The sbatch scripts that
// `nel` compiles call it to wait for model servers, run benchmark shards and
// merge their results.
//
// It is built as a small static binary (CGO_ENABLED=0) that is copied next
// to the compiled scripts, so it must not depend on the compiler side of nel
// (in particular not on cuelang.org/go). Each command is one file here that
// parses its flags and calls a package under runtime/.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/internal/interrupt"
	"github.com/spf13/cobra"
)

// Stamped by the build (-ldflags "-X main.version=..."); commit and date
// default to what go build records of the checkout.
var (
	version = "dev"
	commit  string
	date    string
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad command line
	exitInvalid = 3 // merged, but a benchmark is INVALID: no measurement (as nel run)
)

const usageText = `nel-run is the compute-node runtime of nel. The sbatch scripts compiled by
'nel' call it; you rarely need to run it by hand.

Usage:
  nel-run <command> [flags]

Commands:
  wait-ready     wait until model servers answer their health URLs with 200 OK
  shard          run one shard of a benchmark from a compiled plan (crash-safe, resumable)
  ingest         read a peer harness's output (lm-eval, NeMo-Skills, eval-factory, VLMEvalKit) into a shard
  harbor-tasks   fetch and convert a benchmark's git-sourced tasks to Harbor's format; print their folder
  merge          check and merge the shard results of a compiled plan
  with-services  start a plan's process servers, run a command, stop them
  sim-server     serve a simulated OpenAI-compatible endpoint answering from gold data
  sandbox-serve  run code-sandbox jobs for the shards of a SLURM job (a slurm sandbox's pool)
  version        print the version, commit and build date (also --version)
  completion     print a shell completion script (bash, zsh or fish)
  help           print this help, or 'nel-run help <command>' for a command's flags

Flags accept one or two dashes (-url or --url).

Environment:
  NEL_RUN_LOG      log level: debug, info (default), warn or error
  NEL_PLAN_SHA256  when set, shard and merge refuse a plan file with another sha256
  HF_TOKEN, HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_HUB_OFFLINE
                   Hugging Face Hub access and cache for hf:// datasets

Exit status: 0 on success, 1 on failure, 2 on a bad command line; a command
a signal cut short exits 128 + the signal (130 for SIGINT, 143 for SIGTERM),
once what it started is stopped. A server (sim-server, sandbox-serve) stops
on any of SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE and exits 0.
`

// env is what a subcommand runs with, and the exit status it ends with.
type env struct {
	stdout, stderr io.Writer
	log            *slog.Logger
	code           int
}

func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "nel-run: "+format+"\n", args...)
}

func main() {
	// Every signal that asks it to end (SIGHUP and a closed stdout too)
	// cancels ctx, so that the servers and sandboxes it started are
	// stopped before it exits.
	ctx, stop := interrupt.Context(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if sig := interrupt.Received(ctx); sig != nil && code != exitOK {
		// Cut short by the signal, as the exit-code table says; a server
		// that stopped on it cleanly keeps its 0.
		code = sig.Status()
	}
	stop()
	os.Exit(code)
}

// run executes nel-run with args (without the program name) and returns the
// exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	root := newRoot(e)
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	if c, _, _ := root.Find(args); c == root && !strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "nel-run: unknown command %q\n\n", args[0])
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	root.SetArgs(cli.NormalizeArgs(root, args))
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "nel-run: %v\n", err)
		return exitUsage // only the command line fails here: commands set e.code
	}
	return e.code
}

// newRoot builds nel-run's command tree; each command ends by setting
// e.code.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:               "nel-run",
		Short:             "the compute-node runtime of nel",
		Long:              usageText,
		Args:              cobra.NoArgs,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	showVersion := root.Flags().BoolP("version", "v", false, "print the version, commit and build date")
	root.Run = func(*cobra.Command, []string) {
		if *showVersion {
			fmt.Fprint(e.stdout, versionText())
			return
		}
		fmt.Fprint(e.stderr, usageText)
		e.code = exitUsage
	}
	root.AddCommand(newWaitReadyCmd(e), newShardCmd(e), newIngestCmd(e), newHarborTasksCmd(e), newMergeCmd(e), newWithServicesCmd(e),
		newSimServerCmd(e), newSandboxServeCmd(e), newServeCmd(e), newProxyCmd(e), newVersionCmd(e))
	root.SetHelpCommand(newHelpCmd(e, root))
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	// A command's -h goes to stderr, as the flag package sent it; nel-run
	// -h and nel-run help print on stdout.
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			fmt.Fprint(e.stdout, usageText)
			return
		}
		cli.WriteHelp(e.stderr, c)
	})
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(e.stderr, "%s: %v\n", c.CommandPath(), err)
		cli.WriteHelp(e.stderr, c)
		e.code = exitUsage
		return nil
	})
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		level, err := logLevel(os.Getenv("NEL_RUN_LOG"))
		if err != nil {
			return err
		}
		e.log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level})).With("cmd", c.Name())
		return nil
	}
	return root
}

// command wraps a nel-run command's run function for cobra: it refuses
// arguments unless the command takes them, and keeps its exit status.
func command(e *env, c *cobra.Command, takesArgs bool, run func(ctx context.Context, args []string) int) *cobra.Command {
	c.DisableFlagsInUseLine = true
	c.Run = func(c *cobra.Command, args []string) {
		if len(args) > 0 && !takesArgs {
			fmt.Fprintf(e.stderr, "nel-run %s: unexpected argument %q\n", c.Name(), args[0])
			cli.WriteHelp(e.stderr, c)
			e.code = exitUsage
			return
		}
		e.code = run(c.Context(), args)
	}
	return c
}

// usageError reports a bad command line for c.
func usageError(e *env, c *cobra.Command, msg string) int {
	fmt.Fprintf(e.stderr, "%s: %s\n", c.CommandPath(), msg)
	cli.WriteHelp(e.stderr, c)
	return exitUsage
}

func versionText() string {
	return fmt.Sprintf("nel-run %s\n%s\n", version, cli.Build(commit, date))
}

func newVersionCmd(e *env) *cobra.Command {
	return command(e, &cobra.Command{
		Use:   "version",
		Short: "print the version, commit and build date",
	}, false, func(context.Context, []string) int {
		fmt.Fprint(e.stdout, versionText())
		return exitOK
	})
}

// newHelpCmd is nel-run help [COMMAND]: the usage, or a command's help,
// on stdout.
func newHelpCmd(e *env, root *cobra.Command) *cobra.Command {
	return command(e, &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "print this help, or a command's flags",
	}, true, func(_ context.Context, args []string) int {
		if len(args) == 0 {
			fmt.Fprint(e.stdout, usageText)
			return exitOK
		}
		target, _, err := root.Find(args)
		if err != nil || target == root {
			fmt.Fprintf(e.stderr, "nel-run help: unknown command %q\n\n", strings.Join(args, " "))
			fmt.Fprint(e.stderr, usageText)
			return exitUsage
		}
		cli.WriteHelp(e.stdout, target)
		return exitOK
	})
}

func logLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(strings.TrimSpace(s))); err != nil {
		return 0, fmt.Errorf("NEL_RUN_LOG=%q: want debug, info, warn or error", s)
	}
	return l, nil
}
