package main

import (
	"fmt"
	"strings"

	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

const evalHelp = `NeMo Evaluator's command group, so that its users' command lines work:
nel eval run is nel run (a recipe, or quick mode with --bench) and nel eval
report is nel report. NeMo's other eval commands find runs in a registry of
its own; nel keeps none (a run is its output folder), and each says what
does the job here.`

// evalElsewhere are NeMo's nel eval subcommands that nel spells
// differently, each "NAME: what to type instead", in order.
func evalElsewhere() []string {
	return []string{
		"clean: nel keeps no run registry: a run is its output folder; remove the folder",
		"jobs: nel keeps no run registry: squeue --me lists SLURM jobs; a local run is the nel run you started",
		"logs: nel logs RUN|JOBID [-f] [-n N] (a run is its output folder, or a SLURM job id)",
		"merge: nel-run merge OUTPUT merges a run's shards (the last step of a compiled job does it)",
		"resume: nel run --resume DIR continues the run in DIR (finished samples are kept; those that failed for infrastructure reasons run again)",
		"status: nel status RUN|JOBID (a run is its output folder, or a SLURM job id)",
		"stop: nel stop RUN|JOBID (SIGTERM to its nel run, or scancel of its SLURM jobs)",
	}
}

func newEvalCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "eval run|report ...",
		Short: "NeMo Evaluator's spelling: nel eval run is nel run, nel eval report is nel report",
		Long:  evalLong(),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitcode.Usagef("eval: unknown subcommand %q: nel eval takes run or report (nel eval -h)", args[0])
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return usageError(e, c, "eval: expected a subcommand: run or report")
		},
	}
	run, report := newRunCmd(e), newReportCmd(e)
	run.Short, report.Short = "the same as nel run", "the same as nel report"
	c.AddCommand(run, report)
	for _, line := range evalElsewhere() {
		name, instead, _ := strings.Cut(line, ": ")
		c.AddCommand(&cobra.Command{
			Use:    name,
			Short:  "NeMo's nel eval " + name + ": " + instead,
			Hidden: true, // listed in the help text, not as commands nel has
			// NeMo's flags (--run-id, -o, --follow, ...) are all accepted:
			// the answer is the same whatever they say.
			DisableFlagParsing: true,
			RunE: func(*cobra.Command, []string) error {
				return exitcode.Usagef("nel eval %s is NeMo Evaluator's; in nel: %s", name, instead)
			},
		})
	}
	return c
}

// evalLong is eval's help: what it is, then NeMo's other subcommands and
// what nel has instead.
func evalLong() string {
	var b strings.Builder
	b.WriteString(evalHelp + "\n\nNeMo's other subcommands, in nel:\n")
	for _, line := range evalElsewhere() {
		name, instead, _ := strings.Cut(line, ": ")
		fmt.Fprintf(&b, "  %-7s %s\n", name, instead)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
