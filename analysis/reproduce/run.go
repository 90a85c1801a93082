package reproduce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/analysis/publish"
	"github.com/nel-eval/nel/analysis/store"
	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/local"
	"github.com/nel-eval/nel/runtime/shellquote"
)

// RunOptions say which published number to reproduce and how (nel
// reproduce).
type RunOptions struct {
	Hash  string // the recipe hash (sha256:<hex> or the hex)
	Store string // a directory or an http(s) URL
	RunID string // the published run to compare with ("" for the newest)
	Work  string // the working directory ("" for ./reproduce-<12 hex digits>)

	// How the recipe runs: here (none set), against ModelURL, compiled
	// for SLURM (Target "slurm"), or not at all: compare the run in Run.
	ModelURL  string
	Service   string // with ModelURL: the one service to point there ("" for every solver service)
	APIKeyEnv string // with ModelURL: the variable holding the endpoint's key
	Target    string
	Run       string

	Margin   float64  // Options.Margin
	Format   string   // text, markdown or json
	TokenEnv string   // the variable holding an http(s) store's bearer token
	DataDirs []string // folders holding copies of the recipe's local data
	Verbose  bool

	NelVersion string
	// NelRun finds the nel-run binary a SLURM job calls, and its sha256.
	NelRun func() (path, sum string, err error)
}

// Run reproduces a published number: it fetches the recipe (verified) and
// its published run into o.Work, runs the recipe again (or compiles it, or
// takes o.Run), and compares the two. The report goes to stdout and to
// Work/reproduce.json. The error carries the verdict's exit status; any
// failure to get that far — a store down, a file failing its check, a
// recipe that does not load, a run that failed — means it could not be
// reproduced at all: the status of "could not" (5), whatever it was.
func Run(ctx context.Context, o RunOptions, stdout, stderr io.Writer) error {
	err := run(ctx, o, stdout, stderr)
	var coded *exitcode.Error
	if err == nil || errors.As(err, &coded) {
		return err // a verdict, or invalid input
	}
	return exitcode.New(exitcode.For("reproduce", "could not", false), err)
}

func run(ctx context.Context, o RunOptions, stdout, stderr io.Writer) error {
	hash, hex, err := publish.ParseHash(o.Hash)
	if err != nil {
		return err
	}
	if o.Work == "" {
		o.Work = "reproduce-" + hex[:12]
	}
	st, err := store.Open(o.Store, store.Options{TokenEnv: o.TokenEnv})
	if err != nil {
		return exitcode.New(exitcode.Usage, fmt.Errorf("reproduce: %w", err))
	}
	newDir := filepath.Join(o.Work, "new")
	if o.Run != "" {
		newDir = o.Run
	}
	extra := []compiler.Override{compiler.OutputDirFlag("-o "+newDir, newDir)}
	s, _, err := publish.FetchVerified(ctx, st, hash, o.Work, publish.Verify{DataDirs: o.DataDirs, Extra: extra, NelVersion: o.NelVersion}, stderr)
	if err != nil {
		return err
	}
	// The published run: without it there is nothing to compare.
	pubDir := filepath.Join(o.Work, "published")
	pm, err := store.FetchResults(ctx, st, hash, o.RunID, pubDir)
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	fmt.Fprintf(stderr, "nel: recipe %s verified; published run %s\n", hash, pm.RunID)
	switch {
	case o.Target == "slurm":
		return compileJob(s, hash, o, stdout, stderr)
	case o.Run == "":
		if err := runHere(ctx, s, hash, o, stderr); err != nil {
			return err
		}
	}
	return compareRuns(pubDir, newDir, o, stdout)
}

// compileJob prints the SLURM job of the new run; the comparison is a
// second nel reproduce --run once it is done.
func compileJob(s *compiler.Source, hash string, o RunOptions, stdout, stderr io.Writer) error {
	path, sum, err := o.NelRun()
	if err != nil {
		return err
	}
	out, err := compiler.Compile(s, compiler.CompileOptions{Target: "slurm", NelVersion: o.NelVersion, NelRun: path, NelRunSHA256: sum,
		Reproduce: shellquote.Join([]string{"nel", "reproduce", hash, "--store", o.Store, "-t", "slurm", "-o", o.Work})})
	if err != nil {
		return err
	}
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "nel: when the job is done: nel reproduce %s --store %s -o %s --run %s\n", hash, o.Store, o.Work, s.Recipe.Output.Dir)
	return nil
}

// runHere runs the recipe on this machine, against o.ModelURL when set.
// Its headlines go to stderr: stdout is the comparison's.
func runHere(ctx context.Context, s *compiler.Source, hash string, o RunOptions, stderr io.Writer) error {
	if o.ModelURL != "" {
		names := compiler.SolverServices(s)
		if o.Service != "" {
			names = []string{o.Service}
		}
		for _, name := range names {
			if err := compiler.UseEndpoint(s, name, o.ModelURL, o.APIKeyEnv); err != nil {
				return exitcode.New(exitcode.Usage, fmt.Errorf("reproduce: --model-url: %w", err))
			}
		}
	}
	_, err := local.Run(ctx, s, local.Options{NelVersion: o.NelVersion, Verbose: o.Verbose, Title: "reproduce " + hash[:19]}, stderr, stderr)
	return err
}

// compareRuns compares the new run with the published one, prints the
// report in o.Format and keeps it as JSON in o.Work/reproduce.json.
func compareRuns(pubDir, newDir string, o RunOptions, stdout io.Writer) error {
	opts := DefaultOptions()
	opts.Margin = o.Margin
	rep, err := Compare(pubDir, newDir, opts)
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	var buf bytes.Buffer
	switch o.Format {
	case "json":
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	case "markdown":
		err = rep.Markdown(&buf)
	default:
		err = rep.Text(&buf)
	}
	if err != nil {
		return err
	}
	if _, err := buf.WriteTo(stdout); err != nil {
		return err
	}
	if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(o.Work, "reproduce.json"), append(b, '\n'), 0o644)
	}
	code := exitcode.For("reproduce", rep.Verdict, false)
	switch {
	case code == exitcode.OK:
		return nil
	case rep.Verdict == Invalid:
		return exitcode.NewVerdict(code, fmt.Errorf("reproduce: INVALID: %s", strings.Join(rep.Reasons, "; ")))
	}
	return exitcode.NewVerdict(code, fmt.Errorf("reproduce: %s", strings.ToUpper(rep.Verdict)))
}
