// Command gotest runs `go test -json` with the arguments it is given and
// prints what a person needs from the stream: a line per package, the
// whole output of every test that failed, and at the end every test that
// was skipped with its reason, so a green run cannot hide a part that was
// never exercised (`make test` runs the suite through it).
//
//	go run ./internal/gotest -count=1 ./...
//
// It exits with go test's status, or 1 when the stream shows a failure
// that go test's status does not.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "gotest: start go test: %v\n", err)
		return 1
	}
	// An interrupt reaches go test through the terminal's process group;
	// we keep reading until it has printed what it has and exited.
	signal.Ignore(syscall.SIGINT)
	s := newSummary(stdout)
	readErr := s.read(pipe)
	waitErr := cmd.Wait()
	s.finish()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		code = exit.ExitCode()
	case waitErr != nil:
		fmt.Fprintf(stderr, "gotest: go test: %v\n", waitErr)
		code = 1
	}
	if readErr != nil {
		fmt.Fprintf(stderr, "gotest: read go test's output: %v\n", readErr)
	}
	if code == 0 && (s.failed > 0 || len(s.failedPkgs) > 0 || readErr != nil) {
		code = 1
	}
	return code
}

// event is one line of `go test -json` (cmd/test2json), build events
// included.
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Elapsed    float64
	Output     string
}

type testKey struct{ pkg, test string }

// skip is a skipped test and why.
type skip struct {
	pkg, test, reason string
}

// summary follows the stream: output is kept per test until the test ends
// (printed when it failed, mined for the reason when it skipped, dropped
// when it passed) and per package until the package ends.
type summary struct {
	w          io.Writer
	start      time.Time
	tests      map[testKey][]string
	pkgOut     map[string][]string
	build      map[string][]string
	skips      []skip
	passed     int // tests
	failed     int // tests
	failedPkgs []string
	pkgs       int
}

func newSummary(w io.Writer) *summary {
	return &summary{
		w:      w,
		start:  time.Now(),
		tests:  map[testKey][]string{},
		pkgOut: map[string][]string{},
		build:  map[string][]string{},
	}
}

func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(s.w, "%s\n", line) // not an event: pass it on
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

func (s *summary) event(e event) {
	switch e.Action {
	case "build-output":
		s.build[e.ImportPath] = append(s.build[e.ImportPath], e.Output)
		return
	case "build-fail":
		fmt.Fprintf(s.w, "%s", strings.Join(s.build[e.ImportPath], ""))
		delete(s.build, e.ImportPath)
		return
	}
	if e.Test == "" {
		s.packageEvent(e)
		return
	}
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		s.tests[k] = append(s.tests[k], e.Output)
	case "pass":
		s.passed++
		delete(s.tests, k)
	case "fail":
		s.failed++
		// A parent's output holds its failed subtests' lines too, so
		// print only the leaves and a parent's own lines.
		fmt.Fprintf(s.w, "%s", strings.Join(s.tests[k], ""))
		delete(s.tests, k)
	case "skip":
		s.skips = append(s.skips, skip{e.Package, e.Test, skipReason(s.tests[k])})
		delete(s.tests, k)
	}
}

func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "output":
		s.pkgOut[e.Package] = append(s.pkgOut[e.Package], e.Output)
	case "pass":
		s.pkgs++
		fmt.Fprintf(s.w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
		delete(s.pkgOut, e.Package)
	case "skip": // no test files
		delete(s.pkgOut, e.Package)
	case "fail":
		s.pkgs++
		s.failedPkgs = append(s.failedPkgs, e.Package)
		// What the package printed outside its tests: a panic, a
		// TestMain's failure, a timeout's goroutine dump.
		var own []string
		for _, l := range s.pkgOut[e.Package] {
			if l == "FAIL\n" || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "ok  \t") {
				continue
			}
			own = append(own, l)
		}
		fmt.Fprintf(s.w, "%sFAIL\t%s\t%.3fs\n", strings.Join(own, ""), e.Package, e.Elapsed)
		delete(s.pkgOut, e.Package)
	}
}

// skipReason is what a skipped test said: its first message (file.go:N:
// and the lines that continue it) without the framework's own lines
// ("=== RUN", "--- SKIP"), on one line of at most 300 bytes. A testscript
// skip says its reason first and then dumps the script's environment and
// log, which is not the reason.
func skipReason(out []string) string {
	var parts []string
	for _, l := range out {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		if len(parts) > 0 && fileLine.MatchString(t) {
			break // the next message
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	r := strings.Join(parts, " / ")
	if len(r) > 300 {
		r = r[:297] + "..."
	}
	return r
}

// fileLine matches the start of a test's log message.
var fileLine = regexp.MustCompile(`^[\w.-]+\.go:\d+: `)

// finish prints the skips, then one line for the whole run.
func (s *summary) finish() {
	// A test still open had no end event: go test was killed, or the
	// test binary crashed; its output may say why.
	open := make([]testKey, 0, len(s.tests))
	for k := range s.tests {
		open = append(open, k)
	}
	slices.SortFunc(open, func(a, b testKey) int { return strings.Compare(a.pkg+" "+a.test, b.pkg+" "+b.test) })
	for _, k := range open {
		if slices.Contains(s.failedPkgs, k.pkg) {
			fmt.Fprintf(s.w, "--- UNFINISHED: %s (%s)\n%s", k.test, k.pkg, strings.Join(s.tests[k], ""))
		}
	}
	if len(s.skips) > 0 {
		slices.SortStableFunc(s.skips, func(a, b skip) int { return strings.Compare(a.pkg, b.pkg) })
		fmt.Fprintf(s.w, "\n%d skipped:\n", len(s.skips))
		for _, k := range s.skips {
			fmt.Fprintf(s.w, "  SKIP %s %s: %s\n", k.pkg, k.test, k.reason)
		}
	}
	verdict := "PASS"
	if s.failed > 0 || len(s.failedPkgs) > 0 {
		verdict = "FAIL"
	}
	fmt.Fprintf(s.w, "\n%s: %d packages, %d tests passed, %d failed, %d skipped in %s\n",
		verdict, s.pkgs, s.passed, s.failed, len(s.skips), time.Since(s.start).Round(time.Second))
	if len(s.failedPkgs) > 0 {
		fmt.Fprintf(s.w, "failed packages: %s\n", strings.Join(s.failedPkgs, " "))
	}
}
