package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Results are the figures of one `go test -bench` output: for each
// benchmark (its name without the -GOMAXPROCS suffix) the value of each
// unit it reported.
type Results struct {
	// Figures maps benchmark → unit → value; when a benchmark ran more
	// than once (-count), the value is the median of its runs.
	Figures map[string]map[string]float64
	// Procs is the GOMAXPROCS the benchmarks ran with (the suffix of
	// their names); 0 when no benchmark line had one.
	Procs int
	// CPU is the machine's processor, from go test's "cpu:" header.
	CPU string
}

// number is a value as testing prints it (%g-like: 12, 0.5, 1.2e+06).
const number = `[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`

// A result line: name, iteration count, then value-unit pairs. go test
// prints the name before the benchmark runs and the rest after, so
// anything the benchmark wrote to stdout may stand between the two: the
// name then starts a line the numbers do not end (namePending), and they
// start a later one.
var (
	resultLine  = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)((?:\s+` + number + `\s+\S+)+)\s*$`)
	numbersLine = regexp.MustCompile(`^\s*(\d+)((?:\s+` + number + `\s+\S+)+)\s*$`)
	namePending = regexp.MustCompile(`^(Benchmark\S+)(?:\s|$)`)
	procsSuffix = regexp.MustCompile(`-(\d+)$`)
)

// Parse reads the standard output of `go test -bench` (several packages'
// in a row, with whatever else the tests printed) and returns its figures.
// A line it cannot read is not an error: the output holds logs and
// failures too; a value that is not a number on a result line is.
func Parse(r io.Reader) (*Results, error) {
	res := &Results{Figures: map[string]map[string]float64{}}
	runs := map[string]map[string][]float64{}
	pending := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		name, pairs := "", ""
		switch m := resultLine.FindStringSubmatch(line); {
		case m != nil:
			name, pairs = m[1], m[3]
		case pending != "" && numbersLine.MatchString(line):
			name, pairs = pending, numbersLine.FindStringSubmatch(line)[2]
		case namePending.MatchString(line):
			pending = namePending.FindStringSubmatch(line)[1]
			continue
		case strings.HasPrefix(line, "cpu: "):
			res.CPU = strings.TrimPrefix(line, "cpu: ")
			continue
		default:
			continue
		}
		pending = ""
		if err := res.add(runs, res.strip(name), pairs); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for name, units := range runs {
		res.Figures[name] = map[string]float64{}
		for unit, vs := range units {
			res.Figures[name][unit] = median(vs)
		}
	}
	return res, nil
}

// strip drops the -GOMAXPROCS suffix of a benchmark name and notes it.
// go test leaves the suffix out when GOMAXPROCS is 1, so a name of ours
// must not end in -<digits> itself (none does).
func (res *Results) strip(name string) string {
	m := procsSuffix.FindStringSubmatchIndex(name)
	if m == nil {
		return name
	}
	if p, err := strconv.Atoi(name[m[2]:m[3]]); err == nil {
		res.Procs = p
	}
	return name[:m[0]]
}

// add records one result line's value-unit pairs.
func (res *Results) add(runs map[string]map[string][]float64, name, pairs string) error {
	f := strings.Fields(pairs)
	if runs[name] == nil {
		runs[name] = map[string][]float64{}
	}
	for i := 0; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return fmt.Errorf("%s: value %q of %s is not a number", name, f[i], f[i+1])
		}
		runs[name][f[i+1]] = append(runs[name][f[i+1]], v)
	}
	return nil
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
