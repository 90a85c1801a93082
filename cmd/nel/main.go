// Command nel validates evaluation recipes, hashes their methodology, and
// compiles them into reproducible jobs: `nel compile recipe.cue | sbatch`.
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

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/templates"
)

// version is stamped by the build (make build).
var version = "dev"

const usage = `nel — compile LLM evaluation recipes into reproducible HPC jobs

Usage:
  nel validate FILE...                 check recipes against the schema and cross-field rules
  nel hash FILE [--plan|--benchmarks] [--explain]
                                       print the recipe hash (methodology), the plan hash
                                       (methodology + deployment) or each benchmark's hash
  nel compile FILE [-t slurm|make] [--locked]
                                       print the job: an sbatch script (nel compile r.cue | sbatch)
                                       or a Makefile for a local run (make -j N)
  nel lock FILE                        pin datasets (revision + sha256) and images (registry digest)
                                       in FILE's lock (suite.cue → suite.lock.json)
  nel run FILE [-o DIR]                run a recipe on this machine (api and process services),
                                       end to end to merged Parquet and each benchmark's headline
  nel report DIR [-f FORMAT] [-o FILE] a report over every benchmark of a run (markdown, html,
                                       json, csv, latex)
  nel compare BASE CAND                paired comparison of two runs: deltas, flips, an exact
                                       test and a PASS / WARN / BLOCK / INCONCLUSIVE verdict
  nel gate BASE CAND --policy FILE     quality gate: GO / NO-GO / INCONCLUSIVE per a policy
  nel publish DIR --store PATH|URL     put a run and its recipe in a content-addressed recipe store
  nel fetch sha256:… --store PATH|URL  fetch a published recipe (every file checked, hash verified)
  nel reproduce sha256:… --store …     run a published recipe again and compare: REPRODUCED /
                                       DIFFERENT / INCONCLUSIVE
  nel version                          print the version

Every command that reads a recipe takes -O path.to.field=value (repeatable),
applied before validation and hashing. Recipes are CUE (.cue), YAML (.yaml,
.yml) or JSON (.json).

Exit status: 0 success, 1 failure, 2 invalid input (errors name file:line:col,
the field's path, what was expected and what was found).

Run 'nel COMMAND -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries an exit status for errors that are not about a recipe.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func run(args []string, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "validate":
		err = cmdValidate(ctx, rest, stdout, stderr)
	case "hash":
		err = cmdHash(ctx, rest, stdout, stderr)
	case "compile":
		err = cmdCompile(ctx, rest, stdout, stderr)
	case "lock":
		err = cmdLock(ctx, rest, stdout, stderr)
	case "publish":
		err = cmdPublish(ctx, rest, stdout, stderr)
	case "fetch":
		err = cmdFetch(ctx, rest, stdout, stderr)
	case "reproduce":
		err = cmdReproduce(ctx, rest, stdout, stderr)
	case "run":
		err = cmdRun(ctx, rest, stdout, stderr)
	case "report":
		err = cmdReport(ctx, rest, stdout, stderr)
	case "compare":
		err = cmdCompare(ctx, rest, stdout, stderr)
	case "gate":
		err = cmdGate(ctx, rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "nel %s (scoring version %s)\n", version, compiler.ScoringVersion)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "nel: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	return report(err, stderr)
}

// report prints err and returns the exit status it calls for.
func report(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var errs compiler.Errors
	var ee *exitError
	switch {
	case errors.As(err, &errs):
		fmt.Fprintln(stderr, errs.Error())
		return 2
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "nel: %v\n", ee.err)
		return ee.code
	}
	fmt.Fprintf(stderr, "nel: %v\n", err)
	return 1
}

// overrides collects repeated -O flags.
type overrides []compiler.Override

func (o *overrides) String() string { return "" }

func (o *overrides) Set(s string) error {
	ov, err := compiler.ParseOverride(s)
	if err != nil {
		return err
	}
	*o = append(*o, ov)
	return nil
}

func newFlags(name, args, help string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: nel %s %s\n\n%s\n\nFlags:\n", name, args, help)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags that may come before or after the file arguments
// (nel compile r.cue -t make), as users type them.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{2, err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return files, nil
		}
		files = append(files, args[0])
		args = args[1:]
	}
}

func load(path string, ovs overrides) (*compiler.Source, error) {
	l, err := compiler.NewLoader()
	if err != nil {
		return nil, err
	}
	return l.LoadFile(path, ovs)
}

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var ovs overrides
	fs := newFlags("validate", "[-O path=value]... FILE...",
		"Checks each recipe against the schema and the cross-field rules and prints its recipe hash.\nFeatures that load but that nel compile cannot run yet are listed as notes. A benchmark\nwhose data is all local is loaded as nel-run will load it: data that does not load is an\nerror, items whose content repeats an earlier item's are a warning with their lines.", stderr)
	fs.Var(&ovs, "O", "override a field before validation: path.to.field=value (repeatable)")
	quiet := fs.Bool("q", false, "print nothing for valid recipes")
	files, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		fs.Usage()
		return &exitError{2, errors.New("validate: no recipe given")}
	}
	// One Loader for every file: compiling the schema is a good part of
	// the cost of a small recipe.
	l, err := compiler.NewLoader()
	if err != nil {
		return err
	}
	var all compiler.Errors
	for _, f := range files {
		s, err := l.LoadFile(f, ovs)
		var errs compiler.Errors
		switch {
		case errors.As(err, &errs):
			all = append(all, errs...)
			continue
		case err != nil:
			return &exitError{2, err}
		}
		h, _, err := compiler.ComputeHashes(s)
		if err != nil {
			return err
		}
		for _, n := range compiler.Unsupported(s) {
			fmt.Fprintf(stderr, "note: %s\n", n.Error())
		}
		warnings, dataErrs := compiler.CheckData(ctx, s)
		for _, w := range warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w.Error())
		}
		if len(dataErrs) > 0 {
			all = append(all, dataErrs...)
			continue
		}
		if !*quiet {
			fmt.Fprintf(stdout, "%s: ok (recipe %s)\n", f, h.Recipe)
		}
	}
	if len(all) > 0 {
		return all
	}
	return nil
}

func cmdHash(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var ovs overrides
	fs := newFlags("hash", "[--plan | --benchmarks] [--explain] [-O path=value]... FILE",
		"Prints the recipe hash: the methodology (benchmarks, prompts, scoring, generation,\nmodel identity, nel scoring version). --plan adds the deployment (cluster, endpoints,\nshards, output); --benchmarks prints each benchmark's hash (its methodology without\nthe evaluated model: what nel compare requires to match). --explain prints the\ncanonical JSON each hash covers.", stderr)
	fs.Var(&ovs, "O", "override a field before hashing: path.to.field=value (repeatable)")
	planF := fs.Bool("plan", false, "print the plan hash")
	benchF := fs.Bool("benchmarks", false, "print each benchmark's hash")
	explain := fs.Bool("explain", false, "print the canonical JSON the hash covers")
	files, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		fs.Usage()
		return &exitError{2, errors.New("hash: expected exactly one recipe")}
	}
	if *planF && *benchF {
		return &exitError{2, errors.New("hash: --plan and --benchmarks exclude each other")}
	}
	s, err := load(files[0], ovs)
	if err != nil {
		return err
	}
	h, ex, err := compiler.ComputeHashes(s)
	if err != nil {
		return err
	}
	switch {
	case *benchF:
		for i, k := range h.BenchmarkKeys() {
			if *explain {
				fmt.Fprintf(stdout, "%s\n", ex.Benchmarks[i])
				continue
			}
			fmt.Fprintf(stdout, "%s  %s\n", h.Benchmarks[k], k)
		}
	case *planF && *explain:
		fmt.Fprintf(stdout, "%s\n", ex.Plan)
	case *planF:
		fmt.Fprintln(stdout, h.Plan)
	case *explain:
		fmt.Fprintf(stdout, "%s\n", ex.Recipe)
	default:
		fmt.Fprintln(stdout, h.Recipe)
	}
	return nil
}

func cmdCompile(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var ovs overrides
	fs := newFlags("compile", "[-t slurm|make] [--locked] [--nel-run PATH] [-O path=value]... FILE",
		"Prints the job for a recipe on stdout; diagnostics go to stderr.\n  -t slurm (default): one sbatch script:  nel compile recipe.cue | sbatch\n  -t make: a Makefile for a local run:    nel compile -t make recipe.cue > Makefile && make -j 4\nThe same inputs always give byte-identical output.", stderr)
	fs.Var(&ovs, "O", "override a field before validation: path.to.field=value (repeatable)")
	target := fs.String("t", "slurm", "target: slurm or make")
	locked := fs.Bool("locked", false, "refuse a recipe with a floating image tag or an unlocked dataset (see nel lock)")
	nelRun := fs.String("nel-run", "", "path of nel-run on the compute nodes (default: $NEL_RUN, else the nel-run beside nel)")
	files, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		fs.Usage()
		return &exitError{2, errors.New("compile: expected exactly one recipe")}
	}
	if *target != "slurm" && *target != "make" {
		return &exitError{2, fmt.Errorf("compile: unknown target %q: expected slurm or make", *target)}
	}
	s, err := load(files[0], ovs)
	if err != nil {
		return err
	}
	if *locked {
		if errs := compiler.CheckLocked(s, floatingImage); len(errs) > 0 {
			return errs
		}
	}
	path, sum, err := locateNelRun(*nelRun)
	if err != nil {
		return err
	}
	repro := []string{"nel", "compile", "-t", *target, files[0]}
	if *locked {
		repro = append(repro, "--locked")
	}
	for _, o := range ovs {
		repro = append(repro, "-O", o.Text)
	}
	out, err := compiler.Compile(s, compiler.CompileOptions{
		Target:       *target,
		NelVersion:   version,
		NelRun:       path,
		NelRunSHA256: sum,
		Reproduce:    shellJoin(repro),
	})
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = templates.Quote(a)
	}
	return strings.Join(q, " ")
}
