// Command nel validates evaluation recipes, hashes their methodology, and
// compiles them into reproducible jobs: `nel compile recipe.cue | sbatch`.
//
// Each command is one file here that parses its flags (an options struct:
// complete, validate, run) and calls the package that does the work:
// compiler, local, analysis/... Nothing here decides anything about a run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/internal/interrupt"
	"github.com/spf13/pflag"
)

// Stamped by the build (make build: -ldflags -X main.version=...); commit
// and date default to what go build records of the checkout.
var (
	version = "dev"
	commit  string
	date    string
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// env is where a command writes: results on stdout, diagnostics on stderr.
type env struct {
	stdout, stderr io.Writer
}

// run runs nel with args (without the program name) and returns its exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, stop := interrupt.Context(context.Background())
	defer stop()
	root := newRoot(&env{stdout, stderr})
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitcode.Usage
	}
	if c, _, _ := root.Find(args); c == root && !strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "nel: unknown command %q\n\n%s", args[0], usage)
		return exitcode.Usage
	}
	root.SetArgs(cli.NormalizeArgs(root, args))
	c, err := root.ExecuteContextC(ctx)
	code := report(err, stderr)
	if c != nil && code != exitcode.OK {
		// compare, gate and reproduce keep 1 and 2 for their verdicts.
		code = exitcode.ForCommand(c.Name(), code, err)
	}
	if sig := interrupt.Received(ctx); sig != nil && (c == nil || c.Name() != "serve" || err != nil) {
		// A signal ended it, whatever the command made of that: 128 + the
		// signal, as the exit-code table says; but a signal is how a
		// server (nel serve) is stopped, and one that shut down cleanly
		// exits 0, as nel-run's servers do.
		return sig.Status()
	}
	return code
}

// report prints err and returns the exit status it calls for: its own
// (exitcode.Error), 2 for a recipe's errors (each on its line, with its
// position), else 1.
func report(err error, stderr io.Writer) int {
	var coded *exitcode.Error
	var errs compiler.Errors
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return exitcode.OK
	case errors.As(err, &coded):
		fmt.Fprintf(stderr, "nel: %v\n", err)
		return coded.Code
	case errors.As(err, &errs):
		fmt.Fprintln(stderr, errs.Error())
		return exitcode.Usage
	}
	fmt.Fprintf(stderr, "nel: %v\n", err)
	return exitcode.Failure
}
