package exitcode_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/analysis/gate"
	"github.com/nel-eval/nel/analysis/reproduce"
	"github.com/nel-eval/nel/internal/exitcode"
)

// TestVerdictsSpelled: every verdict of compare, gate and reproduce is in
// the table, spelled as its package spells it.
func TestVerdictsSpelled(t *testing.T) {
	for cmd, verdicts := range map[string][]string{
		"compare":   {compare.Pass, compare.Block, compare.Warn, compare.Inconclusive, compare.Invalid},
		"gate":      {gate.Go, gate.NoGo, gate.Inconclusive, gate.Invalid},
		"reproduce": {reproduce.Reproduced, reproduce.Different, reproduce.Inconclusive, reproduce.Invalid},
	} {
		var listed []string
		for _, r := range exitcode.Rows(cmd) {
			listed = append(listed, r.Outcome)
		}
		for _, v := range verdicts {
			found := false
			for _, l := range listed {
				found = found || l == v
			}
			if !found {
				t.Errorf("%s's verdict %s is not in the table (its rows: %q)", cmd, v, listed)
			}
		}
	}
}

func TestFor(t *testing.T) {
	for _, tt := range []struct {
		cmd, verdict string
		noStrict     bool
		want         int
	}{
		{"compare", compare.Pass, false, 0},
		{"compare", compare.Block, false, 1},
		{"compare", compare.Block, true, 0},
		{"compare", compare.Warn, false, 2},
		{"compare", compare.Inconclusive, false, 2},
		{"compare", compare.Inconclusive, true, 0},
		{"compare", compare.Invalid, false, 3},
		{"compare", compare.Invalid, true, 3},
		{"gate", gate.Go, false, 0},
		{"gate", gate.NoGo, false, 1},
		{"gate", gate.NoGo, true, 0},
		{"gate", gate.Inconclusive, false, 2},
		{"gate", gate.Invalid, true, 3},
		{"reproduce", reproduce.Reproduced, false, 0},
		{"reproduce", reproduce.Different, false, 1},
		{"reproduce", reproduce.Inconclusive, false, 2},
		{"reproduce", reproduce.Invalid, false, 3},
		{"reproduce", "could not", false, 5},
		{"reproduce", "refused", false, 4},
		{"gate", "refused", false, 4},
		{"compare", "could not", false, 5},
		{"run", "INVALID", false, 3},
		{"gate", "MAYBE", false, 1},
	} {
		if got := exitcode.For(tt.cmd, tt.verdict, tt.noStrict); got != tt.want {
			t.Errorf("For(%s, %s, noStrict %v) = %d, want %d", tt.cmd, tt.verdict, tt.noStrict, got, tt.want)
		}
	}
}

func TestVerdictError(t *testing.T) {
	if err := exitcode.Verdict("gate", gate.Go, false); err != nil {
		t.Errorf("GO: %v", err)
	}
	err := exitcode.Verdict("compare", compare.Warn, false)
	if exitcode.Of(err) != 2 || err.Error() != "compare: verdict WARN (exit 2; --no-strict exits 0)" {
		t.Errorf("WARN: %d %v", exitcode.Of(err), err)
	}
	err = exitcode.Verdict("gate", gate.Invalid, true)
	if exitcode.Of(err) != 3 || err.Error() != "gate: verdict INVALID (exit 3): too many infrastructure failures to decide" {
		t.Errorf("INVALID: %d %v", exitcode.Of(err), err)
	}
}

func TestOf(t *testing.T) {
	wrapped := fmt.Errorf("publish: %w", exitcode.Usagef("no store"))
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("disk full"), 1},
		{wrapped, 2},
		{exitcode.New(3, errors.New("x")), 3},
	} {
		if got := exitcode.Of(tt.err); got != tt.want {
			t.Errorf("Of(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if exitcode.New(2, nil) != nil {
		t.Error("New(2, nil) is not nil")
	}
}

// TestHelp: a command's paragraph lists its rows and the shared ones.
func TestHelp(t *testing.T) {
	h := exitcode.Help("gate")
	for _, want := range []string{"Exit status:\n", "  0  GO", "NO-GO (--no-strict: 0)", "  3  INVALID", "  4  refused", "  5  could not"} {
		if !strings.Contains(h, want) {
			t.Errorf("Help(gate) lacks %q:\n%s", want, h)
		}
	}
	var md strings.Builder
	if err := exitcode.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(md.String(), "\n"); n != len(exitcode.Table)+2 {
		t.Errorf("the Markdown table has %d lines for %d rows", n, len(exitcode.Table))
	}
}

// TestOneMeaning: within a command, a status that is not a verdict never
// shares its code with another row, so a pipeline cannot read a crash or a
// wrong policy as a verdict (issue 27). Verdicts may share one (compare's
// WARN and INCONCLUSIVE both exit 2, as NeMo Evaluator's do).
func TestOneMeaning(t *testing.T) {
	verdicts := map[string]bool{}
	for _, v := range []string{compare.Pass, compare.Block, compare.Warn, compare.Inconclusive, compare.Invalid,
		gate.Go, gate.NoGo, gate.Inconclusive, gate.Invalid, reproduce.Reproduced, reproduce.Different, reproduce.Inconclusive, reproduce.Invalid} {
		verdicts[v] = true
	}
	for _, cmd := range []string{"run", "validate", "compare", "gate", "reproduce", "compile"} {
		by := map[int][]string{}
		for _, r := range exitcode.Applying(cmd) {
			by[r.Code] = append(by[r.Code], r.Outcome)
		}
		for code, outcomes := range by {
			if len(outcomes) < 2 {
				continue
			}
			for _, o := range outcomes {
				if !verdicts[o] {
					t.Errorf("nel %s: exit %d means %q and more: %q", cmd, code, o, outcomes)
				}
			}
		}
	}
}

// TestForCommand: a verdict command's own errors move off its verdicts'
// codes; a verdict and every other command keep theirs.
func TestForCommand(t *testing.T) {
	usage := exitcode.Usagef("bad policy")
	for _, tt := range []struct {
		cmd  string
		code int
		err  error
		want int
	}{
		{"gate", 2, usage, 4},
		{"gate", 1, errors.New("read run: no such file"), 5},
		{"reproduce", 5, exitcode.New(5, errors.New("store down")), 5},
		{"gate", 2, exitcode.Verdict("gate", gate.Inconclusive, false), 2},
		{"compare", 1, exitcode.Verdict("compare", compare.Block, false), 1},
		{"gate", 3, exitcode.Verdict("gate", gate.Invalid, false), 3},
		{"gate", 130, errors.New("interrupted"), 130},
		{"run", 2, usage, 2},
		{"run", 1, errors.New("shard failed"), 1},
	} {
		if got := exitcode.ForCommand(tt.cmd, tt.code, tt.err); got != tt.want {
			t.Errorf("ForCommand(%s, %d, %v) = %d, want %d", tt.cmd, tt.code, tt.err, got, tt.want)
		}
	}
}
