// Command benchtable prints the table of nel's performance figures from the
// output of `go test -bench` (`make bench` runs it on bin/bench.txt): one
// row per figure with nel's value, its peer's measured in the same run
// (DuckDB, a Python asyncio client), their ratio, the target and PASS or
// FAIL, and the same as JSON for tracking.
//
//	go run ./internal/benchtable -version v1.2.3 -json bin/bench.json bin/bench.txt
//
// A missed target is a FAIL in the table, not an error: it exits 0 once it
// has read the output (1 when it cannot, 2 on a bad command line), so that
// `make bench` fails only when the benchmarks did not run.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonPath := fs.String("json", "", "also write the table as JSON to `FILE`")
	version := fs.String("version", "", "the `VERSION` of nel measured, recorded in the JSON (make bench: git describe)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchtable [-version VERSION] [-json FILE] [BENCH-OUTPUT]  (go test -bench output; stdin when none)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 {
		return 2
	}
	in, name := stdin, "stdin"
	if fs.NArg() == 1 {
		name = fs.Arg(0)
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "benchtable: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	res, err := Parse(in)
	if err != nil {
		fmt.Fprintf(stderr, "benchtable: read %s: %v\n", name, err)
		return 1
	}
	rows := Rows()
	t := Evaluate(rows, res)
	t.Version = *version
	t.WriteText(stdout, rows)
	if *jsonPath != "" {
		if err := atomicfile.Write(*jsonPath, t.WriteJSON); err != nil {
			fmt.Fprintf(stderr, "benchtable: write %s: %v\n", *jsonPath, err)
			return 1
		}
	}
	return 0
}
