package main

import (
	"fmt"
	"strings"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

const usage = `nel — compile LLM evaluation recipes into reproducible HPC jobs

Usage:
  nel validate FILE...                 check recipes against the schema and cross-field rules
  nel validate FILE --samples N        a smoke test: N samples of each benchmark against its
  nel validate -b NAME --model-url URL --model-id ID [--samples N]
                                       endpoint, and what a full run would hit
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
  nel run --bench NAME --model-url URL --model-id ID [-o DIR]
                                       quick mode (NeMo's): one built-in benchmark, no recipe file
  nel eval run|report ...              NeMo's spelling of nel run and nel report
  nel list [--sources|--scorers] [--format json]
                                       the built-in benchmarks (sources, scorers)
  nel report DIR [-f FORMAT] [-o FILE] a report over every benchmark of a run (markdown, html,
                                       json, csv, latex)
  nel export DIR --dest inspect|mlflow|wandb
                                       a run as Inspect logs (.json, .eval), an MLflow run (a file
                                       store, or a tracking server's REST API) or a W&B run
  nel compare BASE CAND                paired comparison of two runs: deltas, flips, an exact
                                       test and a PASS / WARN / BLOCK / INCONCLUSIVE verdict
  nel gate BASE CAND --policy FILE     quality gate: GO / NO-GO / INCONCLUSIVE per a policy
  nel publish DIR --store PATH|URL     put a run and its recipe in a content-addressed recipe store
  nel fetch sha256:… --store PATH|URL  fetch a published recipe (every file checked, hash verified)
  nel reproduce sha256:… --store …     run a published recipe again and compare: REPRODUCED /
                                       DIFFERENT / INCONCLUSIVE
  nel version                          print the version, commit and build date (also --version)
  nel completion bash|zsh|fish         print a shell completion script
  nel help [COMMAND|exit-codes]        a command's help, or every exit status

Every command that reads a recipe takes -O path.to.field=value (repeatable),
applied before validation and hashing. Recipes are CUE (.cue), YAML (.yaml,
.yml) or JSON (.json). Flags take one or two dashes (-locked or --locked).

Exit status: 0 success, 1 failure, 2 invalid input (errors name file:line:col,
the field's path, what was expected and what was found); compare, gate and
reproduce exit by their verdict: 'nel help exit-codes'.

Run 'nel COMMAND -h' for a command's flags.
`

// newRoot builds nel's command tree, writing to e.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "nel",
		Short:         "compile LLM evaluation recipes into reproducible HPC jobs",
		Long:          usage,
		Args:          cobra.NoArgs,
		SilenceErrors: true, // report prints them, with their exit status
		SilenceUsage:  true,
		// The reference in docs/cli is the same whenever it is made.
		DisableAutoGenTag: true,
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	showVersion := root.Flags().Bool("version", false, "print the version, commit and build date")
	root.RunE = func(*cobra.Command, []string) error {
		if !*showVersion {
			fmt.Fprint(e.stderr, usage)
			return exitcode.Usagef("no command given")
		}
		_, err := fmt.Fprint(e.stdout, versionText())
		return err
	}
	root.AddCommand(
		newValidateCmd(e), newHashCmd(e), newCompileCmd(e), newConvertCmd(e), newLockCmd(e),
		newRunCmd(e), newStatusCmd(e), newLogsCmd(e), newStopCmd(e),
		newReportCmd(e), newExportCmd(e), newCompareCmd(e), newGateCmd(e),
		newPublishCmd(e), newFetchCmd(e), newReproduceCmd(e), newVersionCmd(e),
		newEvalCmd(e), newListCmd(e), newServeCmd(e),
		newExitCodesTopic(),
	)
	root.SetHelpCommand(newHelpCmd(e, root))
	// Added now rather than when cobra executes, so that run finds them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	// A command's -h goes to stderr, as the flag package sent it: stdout
	// stays the command's output. nel -h and nel help print on stdout.
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		switch {
		case c == root:
			fmt.Fprint(e.stdout, usage)
		case isTopic(c):
			fmt.Fprint(e.stdout, c.Long)
		default:
			cli.WriteHelp(e.stderr, c)
		}
	})
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(e.stderr, "Usage: %s\nRun '%s -h' for its flags.\n", cli.UseLine(c), c.CommandPath())
		return exitcode.New(exitcode.Usage, err)
	})
	return root
}

// usageError prints c's help on stderr and returns err as invalid input:
// the command line was wrong.
func usageError(e *env, c *cobra.Command, format string, args ...any) error {
	cli.WriteHelp(e.stderr, c)
	return exitcode.Usagef(format, args...)
}

func versionText() string {
	return fmt.Sprintf("nel %s (scoring version %s)\n%s\n", version, compiler.ScoringVersion, cli.Build(commit, date))
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version, commit and build date (also nel --version)",
		Long: "Prints nel's version, the scoring version its hashes carry, and the commit and\n" +
			"date it was built from.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(e.stdout, versionText())
			return err
		},
	}
}

// newHelpCmd is nel help [COMMAND|TOPIC]: like COMMAND -h, but on stdout,
// since the help is what was asked for.
func newHelpCmd(e *env, root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND|exit-codes]",
		Short: "print the usage, a command's help, or a help topic",
		Long:  "Prints nel's usage; with a command, its help and flags; with exit-codes, every\nexit status of nel and nel-run.",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				_, err := fmt.Fprint(e.stdout, usage)
				return err
			}
			target, _, err := root.Find(args)
			if err != nil || target == root {
				return usageError(e, c, "help: unknown command or topic %q", strings.Join(args, " "))
			}
			if isTopic(target) {
				_, err := fmt.Fprint(e.stdout, target.Long)
				return err
			}
			cli.WriteHelp(e.stdout, target)
			return nil
		},
	}
}

// isTopic says c is a help topic: text to read, nothing to run.
func isTopic(c *cobra.Command) bool { return !c.Runnable() && !c.HasSubCommands() }

// newExitCodesTopic is nel help exit-codes: the table of exitcode.
func newExitCodesTopic() *cobra.Command {
	var b strings.Builder
	_ = exitcode.Text(&b) // a strings.Builder does not fail
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "every exit status of nel and nel-run, and each verdict's",
		Long:  b.String(),
	}
}
