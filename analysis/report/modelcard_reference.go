package report

import (
	"embed"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// A model card's reference values are the numbers a model's own card
// publishes; the card built from a run puts nel's number beside each, so a
// reader sees how close a reproduction came. nel carries the tables it
// was given, with the source of each value (reference/*.tsv); a table of
// one's own is a file in the same form.

//go:embed reference/*.tsv
var referenceFS embed.FS

// ReferenceValue is one published number.
type ReferenceValue struct {
	Benchmark string   // as the card names it ("MMLU-Pro")
	Matches   []string // benchmark names and launcher tasks it is the value of
	Value     float64  // in percent
	Source    string
}

// References lists the tables nel carries, by name.
func References() []string {
	entries, _ := referenceFS.ReadDir("reference")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".tsv"))
	}
	return out
}

// ReadReference reads a table nel carries, by name, or a file in the same
// form: tab-separated benchmark, matches (comma-separated), value in
// percent, source; # starts a comment line.
func ReadReference(nameOrFile string) ([]ReferenceValue, error) {
	src, err := referenceFS.ReadFile(path.Join("reference", nameOrFile+".tsv"))
	if err != nil {
		if src, err = os.ReadFile(nameOrFile); err != nil {
			return nil, fmt.Errorf("reference %s: neither a table nel carries (%s) nor a readable file: %w", nameOrFile, strings.Join(References(), ", "), err)
		}
	}
	var out []ReferenceValue
	for i, line := range strings.Split(string(src), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 tab-separated fields (benchmark, matches, value, source), found %d", nameOrFile, i+1, len(f))
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: value %q: not a number", nameOrFile, i+1, f[2])
		}
		out = append(out, ReferenceValue{Benchmark: f[0], Matches: strings.Split(f[1], ","), Value: v, Source: f[3]})
	}
	return out, nil
}

// referenceFor finds the value of the benchmark whose key is key: by its
// name, or by the task of a container://IMAGE#TASK benchmark.
func referenceFor(refs []ReferenceValue, key string) (ReferenceValue, bool) {
	name, _, _ := strings.Cut(key, "#") // gsm8k#cot: the variant is the benchmark's
	if strings.HasPrefix(key, "container://") {
		_, name, _ = strings.Cut(key, "#")
	}
	for _, r := range refs {
		if slices.Contains(r.Matches, name) {
			return r, true
		}
	}
	return ReferenceValue{}, false
}
