// Command nel-run is the compute-node half of nel. The sbatch scripts that
// `nel` compiles call it to wait for model servers, run benchmark shards and
// merge their results.
//
// It is built as a small static binary (CGO_ENABLED=0) that is copied next
// to the compiled scripts, so it must not depend on the compiler side of nel
// (in particular not on cuelang.org/go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad command line
)

const usageText = `nel-run is the compute-node runtime of nel. The sbatch scripts compiled by
'nel' call it; you rarely need to run it by hand.

Usage:
  nel-run <command> [flags]

Commands:
  wait-ready     wait until model servers answer their health URLs with 200 OK
  shard          run one shard of a benchmark from a compiled plan (crash-safe, resumable)
  merge          check and merge the shard results of a compiled plan
  with-services  start a plan's process servers, run a command, stop them
  sim-server     serve a simulated OpenAI-compatible endpoint answering from gold data
  sandbox-serve  run code-sandbox jobs for the shards of a SLURM job (a slurm sandbox's pool)
  version        print the version
  help           print this help, or 'nel-run help <command>' for a command's flags

Flags accept one or two dashes (-url or --url).

Environment:
  NEL_RUN_LOG      log level: debug, info (default), warn or error
  NEL_PLAN_SHA256  when set, shard and merge refuse a plan file with another sha256
  HF_TOKEN, HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_HUB_OFFLINE
                   Hugging Face Hub access and cache for hf:// datasets

Exit status: 0 on success, 1 on failure, 2 on a bad command line.
`

// command is one nel-run subcommand.
type command struct {
	name    string
	summary string
	// flags builds the command's flag set; run is called with it parsed.
	flags func(fs *flag.FlagSet) func(ctx context.Context, env *env) int
	// args says the command takes arguments after its flags (after --).
	args bool
}

// env is what a subcommand runs with.
type env struct {
	stdout, stderr io.Writer
	log            *slog.Logger
}

func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "nel-run: "+format+"\n", args...)
}

var commands = []*command{
	waitReadyCommand,
	shardCommand,
	mergeCommand,
	withServicesCommand,
	simServerCommand,
	sandboxServeCommand,
	{
		name:    "version",
		summary: "print the version",
		flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
			return func(_ context.Context, e *env) int {
				fmt.Fprintf(e.stdout, "nel-run %s\n", version)
				return exitOK
			}
		},
	},
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes nel-run with args (without the program name) and returns the
// exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		if name == "help" && len(args) > 1 {
			c := lookup(args[1])
			if c == nil {
				fmt.Fprintf(stderr, "nel-run help: unknown command %q\n\n", args[1])
				fmt.Fprint(stderr, usageText)
				return exitUsage
			}
			fs, _ := newFlagSet(c, stdout)
			fs.Usage()
			return exitOK
		}
		fmt.Fprint(stdout, usageText)
		return exitOK
	case "-v", "-version", "--version":
		args = []string{"version"}
	}

	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "nel-run: unknown command %q\n\n", args[0])
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	fs, exec := newFlagSet(c, stderr)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage // the flag package has printed the error and usage
	}
	if fs.NArg() > 0 && !c.args {
		fmt.Fprintf(stderr, "nel-run %s: unexpected argument %q\n", c.name, fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	level, err := logLevel(os.Getenv("NEL_RUN_LOG"))
	if err != nil {
		fmt.Fprintf(stderr, "nel-run: %v\n", err)
		return exitUsage
	}
	e := &env{
		stdout: stdout,
		stderr: stderr,
		log:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("cmd", c.name),
	}
	return exec(ctx, e)
}

// newFlagSet returns c's flag set, printing errors and usage to out, and the
// function that runs c once the set is parsed.
func newFlagSet(c *command, out io.Writer) (*flag.FlagSet, func(context.Context, *env) int) {
	fs := flag.NewFlagSet("nel-run "+c.name, flag.ContinueOnError)
	fs.SetOutput(out)
	exec := c.flags(fs)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: nel-run %s", c.name)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(w, " [flags]")
		}
		fmt.Fprintf(w, "\n\n%s\n", c.summary)
		if hasFlags {
			fmt.Fprint(w, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs, exec
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
