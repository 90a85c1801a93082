package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

const evalHelp = `NeMo Evaluator's command group, so that its users' command lines work:
nel eval run is nel run (a recipe, or quick mode with --bench) and nel eval
report is nel report. NeMo's other eval commands manage runs it keeps in a
registry of its own; nel keeps none, and each says what does the job here.`

// evalElsewhere are NeMo's nel eval subcommands that nel spells
// differently, with what to type instead.
func evalElsewhere() map[string]string {
	return map[string]string{
		"status": "nel keeps no run registry: nel run shows progress live on stderr; a SLURM job's state is squeue's and sacct's, its results are under its output.dir",
		"stop":   "nel keeps no run registry: interrupt nel run (Ctrl-C; its servers stop with it), or scancel a SLURM job",
		"logs":   "nel keeps no run registry: a run's logs are files under OUTPUT/logs (shards, servers, sandboxes)",
		"resume": "run the same command again (finished samples are kept); nel run --resume also retries the samples that failed for infrastructure reasons",
		"jobs":   "nel keeps no run registry: squeue --me lists SLURM jobs; a local run is the nel run you started",
		"clean":  "nel keeps no run registry: a run is its output folder; remove the folder",
		"merge":  "nel-run merge OUTPUT merges a run's shards (the last step of a compiled job does it)",
	}
}

func newEvalCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "eval run|report ...",
		Short: "NeMo Evaluator's spelling: nel eval run is nel run, nel eval report is nel report",
		Long:  evalLong(),
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return usageError(e, c, "eval: expected a subcommand: run or report")
		},
	}
	run, report := newRunCmd(e), newReportCmd(e)
	run.Short, report.Short = "the same as nel run", "the same as nel report"
	c.AddCommand(run, report)
	for name, instead := range evalElsewhere() {
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
	m := evalElsewhere()
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "  %-7s %s\n", name, m[name])
	}
	return strings.TrimSuffix(b.String(), "\n")
}
