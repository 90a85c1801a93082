// Package exitcode is the one table of nel's exit statuses: what each
// status means for every command, which verdict of compare, gate and
// reproduce exits with which status, and what --no-strict changes.
//
// Commands turn a verdict into a status with [For]; errors carry their
// status as an [*Error]. `nel help exit-codes`, each command's help and the
// README's table are all rendered from [Table], so the statuses are written
// down once (the README test checks that its table is the rendered one).
package exitcode

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// The statuses. Every command uses 0, 1 and 2 alike, except the verdict
// commands (compare, gate, reproduce): there 1 and 2 are verdicts (NeMo
// Evaluator's: BLOCK or NO-GO 1, WARN or INCONCLUSIVE 2), so their own
// invalid input exits 4 and their own failure 5, and a CI pipeline never
// reads a crash as a verdict. 3 is a measurement that failed (a run that
// is INVALID), never a verdict on a model.
// A command a signal ended exits 128 + the signal's number, as a shell
// reports a command the signal killed (the table's rows; internal/interrupt
// catches them so that nel stops what it started first).
const (
	OK      = 0 // success, or the best verdict
	Failure = 1 // it ran and failed, or the worst verdict on the candidate
	Usage   = 2 // invalid input: a recipe, a policy or the command line
	Invalid = 3 // no verdict: a run did not measure its model

	// VerdictUsage and VerdictFailure are Usage and Failure of the verdict
	// commands, whose 1 and 2 are verdicts.
	VerdictUsage   = 4
	VerdictFailure = 5
)

// Error is an error that says which status it calls for.
type Error struct {
	Code int
	Err  error
	// verdict marks a verdict's status (made by Verdict or NewVerdict),
	// which ForCommand leaves as it is.
	verdict bool
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New returns err with status code (nil for a nil err).
func New(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// NewVerdict returns err with the status code of a verdict (nil for a nil
// err): ForCommand keeps it as it is.
func NewVerdict(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err, verdict: true}
}

// ForCommand is the status for command (its name: "gate") that ended with
// err, which calls for code: code, except that a verdict command's own
// invalid input and failures move out of its verdicts' way, to
// VerdictUsage and VerdictFailure.
func ForCommand(command string, code int, err error) int {
	var e *Error
	if code == OK || code > 128 || !isVerdictCommand(command) || (errors.As(err, &e) && e.verdict) {
		return code
	}
	if code == Usage {
		return VerdictUsage
	}
	return VerdictFailure
}

// isVerdictCommand says whether command's table rows hold verdicts.
func isVerdictCommand(command string) bool {
	return command == "compare" || command == "gate" || command == "reproduce"
}

// Usagef is an invalid-input error (status 2).
func Usagef(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// Of is the status err calls for: 0 for nil, an [*Error]'s code, else 1.
func Of(err error) int {
	var e *Error
	switch {
	case err == nil:
		return OK
	case errors.As(err, &e):
		return e.Code
	}
	return Failure
}

// Row is one line of the table: a command's outcome and its status.
type Row struct {
	Command string // "" for every command
	Outcome string // a verdict (PASS) or what happened (refused)
	Code    int
	// Lenient rows exit 0 with --no-strict.
	Lenient bool
	Meaning string
}

// Table is every exit status of nel and nel-run, by command. The order is
// the order of the rendered tables. The verdicts are spelled here as the
// analysis packages spell them (a test holds them equal): this package is
// a leaf, so that any package can return an [*Error].
var Table = []Row{
	{"", "success", OK, false, "the command did what it was asked"},
	{"", "failure", Failure, false, "it ran and failed: I/O, a server, a shard, a store"},
	{"", "invalid input", Usage, false, "a recipe, a policy or a command line that is wrong: errors name file:line:col, the field's path, what was expected and what was found"},
	{"", "hung up (SIGHUP)", 129, false, "the terminal or SSH session went away: nel (or nel-run) stopped what it started (servers, their process groups) and exited; nel run keeps the finished samples, and the same command continues (servers — nel serve, and nel-run's serve, sim-server and sandbox-serve — stop on these signals and exit 0)"},
	{"", "interrupted (SIGINT)", 130, false, "Ctrl-C: the same as SIGHUP"},
	{"", "quit (SIGQUIT)", 131, false, "Ctrl-backslash: the same as SIGHUP"},
	{"", "output closed (SIGPIPE)", 141, false, "the reader of stdout or stderr went away (nel run … | head -1): the same as SIGHUP"},
	{"", "stopped (SIGTERM)", 143, false, "nel stop, kill or a scheduler: the same as SIGHUP"},
	{"run", "INVALID", Invalid, false, "a benchmark's infrastructure failures are above its max_error_rate: it did not measure the model (every file is still written; run again with --resume)"},
	{"validate", "problems found", Failure, false, "--samples: the samples hit what would stop or invalidate a full run (an unreachable endpoint, a refused key, an unserved path, answers the scorer cannot read), or could not be run"},
	{"compare", "PASS", OK, false, "no regression shown"},
	{"compare", "BLOCK", Failure, true, "significant (p < --alpha) and the drop is above --max-drop"},
	{"compare", "WARN", Usage, true, "significant but within --max-drop, or not significant while the point estimate already drops more"},
	{"compare", "INCONCLUSIVE", Usage, true, "not significant and underpowered (MDE > --max-drop)"},
	{"compare", "INVALID", Invalid, false, "the baseline or the candidate has more infrastructure failures than its max_error_rate: a failed measurement, not a verdict"},
	{"compare", "refused", VerdictUsage, false, "the runs do not measure the same thing, or hold no common benchmark (the message starts \"compare refused\"), or a wrong command line"},
	{"compare", "could not", VerdictFailure, false, "a run folder that cannot be read"},
	{"gate", "GO", OK, false, "no gated benchmark breaches the policy"},
	{"gate", "NO-GO", Failure, true, "a gated benchmark breaches the policy"},
	{"gate", "INCONCLUSIVE", Usage, true, "a gated benchmark has too little evidence either way"},
	{"gate", "INVALID", Invalid, false, "a critical or supporting benchmark did not measure its model: a failed measurement, not a verdict"},
	{"gate", "refused", VerdictUsage, false, "an invalid policy (file:line:col: field: message), refused runs or a wrong command line"},
	{"gate", "could not", VerdictFailure, false, "a run folder or a policy file that cannot be read"},
	{"reproduce", "REPRODUCED", OK, false, "the new run is within ±--margin of the published one"},
	{"reproduce", "DIFFERENT", Failure, false, "not within the margin and significantly different, or not comparable"},
	{"reproduce", "INCONCLUSIVE", Usage, false, "neither shown: it says how many more items or repeats would decide"},
	{"reproduce", "INVALID", Invalid, false, "the published or the new run has more infrastructure failures than its max_error_rate"},
	{"reproduce", "refused", VerdictUsage, false, "a wrong command line, or a store address that is not one"},
	{"reproduce", "could not", VerdictFailure, false, "store unreachable, unknown hash, a file that fails its check, a recipe that does not load, a run that failed"},
}

// For is the status of command's verdict; noStrict is --no-strict. A
// verdict the table does not list is a failure.
func For(command, verdict string, noStrict bool) int {
	for _, r := range Table {
		if r.Command == command && r.Outcome == verdict {
			if noStrict && r.Lenient {
				return OK
			}
			return r.Code
		}
	}
	return Failure
}

// Verdict is the error a verdict's status calls for: nil for status 0
// (PASS, GO, REPRODUCED, or any lenient verdict with --no-strict), else an
// [*Error] naming the verdict and its status.
func Verdict(command, verdict string, noStrict bool) error {
	code := For(command, verdict, noStrict)
	switch {
	case code == OK:
		return nil
	case code == Invalid:
		return NewVerdict(code, fmt.Errorf("%s: verdict %s (exit %d): too many infrastructure failures to decide", command, verdict, code))
	case rowOf(command, verdict).Lenient:
		return NewVerdict(code, fmt.Errorf("%s: verdict %s (exit %d; --no-strict exits 0)", command, verdict, code))
	}
	return NewVerdict(code, fmt.Errorf("%s: verdict %s (exit %d)", command, verdict, code))
}

func rowOf(command, outcome string) Row {
	for _, r := range Table {
		if r.Command == command && r.Outcome == outcome {
			return r
		}
	}
	return Row{}
}

// Rows are command's own rows of the table.
func Rows(command string) []Row {
	var rows []Row
	for _, r := range Table {
		if r.Command == command {
			rows = append(rows, r)
		}
	}
	return rows
}

// Applying is every row that applies to command: its own, then the shared
// ones it does not redefine (a row of its own with the same code), less
// the shared failure and invalid input of a verdict command (its "could
// not" and "refused" rows say those).
func Applying(command string) []Row {
	rows := Rows(command)
	own := map[int]bool{}
	for _, r := range rows {
		own[r.Code] = true
	}
	for _, r := range Rows("") {
		if own[r.Code] || isVerdictCommand(command) && (r.Code == Failure || r.Code == Usage) {
			continue
		}
		rows = append(rows, r)
	}
	return rows
}

// Help is the "Exit status:" paragraph of command's help: its own rows,
// then what every command shares.
func Help(command string) string {
	var b strings.Builder
	b.WriteString("Exit status:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	var signals []string
	for _, r := range Applying(command) {
		if r.Code > 128 {
			signals = append(signals, fmt.Sprintf("%d %s", r.Code, r.Outcome))
			continue
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", r.Code, r.Outcome+lenient(r), r.Meaning)
	}
	tw.Flush()
	// The signals' statuses in one sentence: five rows of them in every
	// command's help would bury its own.
	if len(signals) > 0 {
		fmt.Fprintf(&b, "  A signal ends it with 128 + its number, once what it started is stopped:\n  %s.\n", strings.Join(signals, ", "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func lenient(r Row) string {
	if r.Lenient {
		return " (--no-strict: 0)"
	}
	return ""
}

// Text writes the whole table for a terminal (nel help exit-codes).
func Text(w io.Writer) error {
	var b strings.Builder
	b.WriteString("Exit statuses of nel and nel-run. Every command:\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	command := ""
	for _, r := range Table {
		if r.Command != command {
			tw.Flush()
			command = r.Command
			fmt.Fprintf(&b, "\nnel %s:\n\n", command)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", r.Code, r.Outcome+lenient(r), r.Meaning)
	}
	tw.Flush()
	b.WriteString("\n--no-strict (compare, gate) exits 0 on the verdicts marked so; INVALID exits 3 either way:\nit is a failed measurement, not a verdict on the candidate.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown writes the whole table as the README shows it.
func Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| command | outcome | exit | with --no-strict | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range Table {
		cmd := "every command"
		if r.Command != "" {
			cmd = "`nel " + r.Command + "`"
		}
		ns := ""
		if r.Lenient {
			ns = "0"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", cmd, r.Outcome, r.Code, ns, strings.ReplaceAll(r.Meaning, "|", `\|`))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
