package main

import (
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
