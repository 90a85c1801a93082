package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/compiler/pin"
	"github.com/spf13/pflag"
)

// overrides collects repeated -O path=value flags, parsed as they come.
type overrides []compiler.Override

func (o *overrides) String() string {
	texts := make([]string, len(*o))
	for i, ov := range *o {
		texts[i] = ov.Text
	}
	return strings.Join(texts, ",")
}

func (o *overrides) Set(s string) error {
	ov, err := compiler.ParseOverride(s)
	if err != nil {
		return err
	}
	*o = append(*o, ov)
	return nil
}

func (o *overrides) Type() string { return "path=value" }

// addOverrides adds --override/-O to fs, its use said by what.
func addOverrides(fs *pflag.FlagSet, o *overrides, what string) {
	fs.VarP(o, "override", "O", what+": path.to.field=value (repeatable)")
}

// taskFlag collects repeated --task NAME flags into the overrides, as
// compiler.TaskFlag selections.
type taskFlag struct{ o *overrides }

func (t taskFlag) String() string { return "" }

func (t taskFlag) Set(s string) error {
	*t.o = append(*t.o, compiler.TaskFlag(s))
	return nil
}

func (t taskFlag) Type() string { return "NAME" }

// addTasks adds --task to fs: it keeps the named tasks of a launcher (v1)
// config, like the launcher's -t.
func addTasks(fs *pflag.FlagSet, o *overrides) {
	fs.Var(taskFlag{o}, "task", "run only this task of a NeMo Evaluator launcher (v1) config, like its -t (repeatable)")
}

// addRemotePaths adds --remote-paths to fs.
func addRemotePaths(fs *pflag.FlagSet, remote *bool) {
	fs.BoolVar(remote, "remote-paths", false, "the recipe's local datasets may lie where only the compute nodes see them: one that is not here is a warning (as cluster.remote_paths: true)")
}

// loadWarned reads a recipe as load does, its local datasets left to the
// compute nodes when remote says so, and prints its warnings to stderr.
func loadWarned(path string, ovs []compiler.Override, remote bool, stderr io.Writer) (*compiler.Source, error) {
	l, err := compiler.NewLoader()
	if err != nil {
		return nil, err
	}
	l.RemotePaths = remote
	s, err := l.LoadFile(path, ovs)
	if err != nil {
		return nil, err
	}
	printWarnings(stderr, s.Warnings)
	return s, nil
}

// printWarnings writes each warning on its own line of stderr.
func printWarnings(stderr io.Writer, warnings compiler.Errors) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w.Error())
	}
}

// load reads a recipe with overrides applied.
func load(path string, ovs []compiler.Override) (*compiler.Source, error) {
	l, err := compiler.NewLoader()
	if err != nil {
		return nil, err
	}
	return l.LoadFile(path, ovs)
}

// checkLocked refuses a recipe with a floating image tag or an unlocked
// dataset (--locked).
func checkLocked(s *compiler.Source) error {
	if errs := compiler.CheckLocked(s, pin.Floating); len(errs) > 0 {
		return errs
	}
	return nil
}
