package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A module of its own with a passing, a skipping, a failing and a
// non-compiling package, run through the real go test.
func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"ok/ok_test.go": `package ok

import "testing"

func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("no docker daemon here") }
func TestSub(t *testing.T) {
	t.Run("leaf", func(t *testing.T) { t.Skipf("needs %s", "bwrap") })
}
`,
		"bad/bad_test.go": `package bad

import "testing"

func TestPass(t *testing.T) { t.Log("quiet when it passes") }
func TestFail(t *testing.T) { t.Log("context line"); t.Error("wrong answer") }
`,
		"broken/broken_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { undefinedThing() }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module of its own")
	}
	t.Chdir(writeModule(t))

	t.Run("pass lists skips", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := run([]string{"-count=1", "./ok"}, &out, &errb); code != 0 {
			t.Fatalf("exit %d, want 0\n%s%s", code, out.String(), errb.String())
		}
		got := out.String()
		for _, want := range []string{
			"ok  \texample.com/m/ok\t",
			"\n2 skipped:\n",
			"  SKIP example.com/m/ok TestSkip: ok_test.go:6: no docker daemon here\n",
			"  SKIP example.com/m/ok TestSub/leaf: ok_test.go:8: needs bwrap\n",
			"\nPASS: 1 packages, 2 tests passed, 0 failed, 2 skipped in ", // TestPass, and TestSub whose leaf skipped
		} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("failures are printed and fail the run", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := run([]string{"-count=1", "./..."}, &out, &errb)
		if code == 0 {
			t.Fatalf("exit 0, want failure\n%s", out.String())
		}
		got := out.String() + errb.String()
		for _, want := range []string{
			"bad_test.go:6: context line\n",
			"bad_test.go:6: wrong answer\n",
			"--- FAIL: TestFail",
			"FAIL\texample.com/m/bad\t",
			"undefined: undefinedThing",
			"FAIL\texample.com/m/broken\t",
			"\nFAIL: ",
			"failed packages: ",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
		if strings.Contains(got, "quiet when it passes") {
			t.Errorf("a passing test's log was printed:\n%s", got)
		}
	})
}

func TestSkipReason(t *testing.T) {
	for _, c := range []struct {
		out  []string
		want string
	}{
		{[]string{"=== RUN   TestX\n", "    x_test.go:3: why\n", "--- SKIP: TestX (0.00s)\n"}, "x_test.go:3: why"},
		{[]string{"=== RUN   TestX\n", "    x_test.go:3: first\n", "        second line\n", "--- SKIP: TestX (0.00s)\n"}, "x_test.go:3: first / second line"},
		{[]string{"=== RUN   TestX\n", "--- SKIP: TestX (0.00s)\n"}, "(no reason given)"},
		// A testscript skip: the reason, then the script's environment.
		{[]string{"=== RUN   TestScript/h\n", "    cmd.go:380: real datasets not found\n", "    testscript.go:609: WORK=$WORK\n", "        PATH=/bin\n", "--- SKIP: TestScript/h (0.00s)\n"}, "cmd.go:380: real datasets not found"},
	} {
		if got := skipReason(c.out); got != c.want {
			t.Errorf("skipReason(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}
