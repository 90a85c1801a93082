package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testdata/nelrun.txt is the output of
//
//	NEL_RUN_BIN=... go test -p 1 -run '^$' -bench 'NelRunVersion|Merge1M|BootstrapBinary250k|LocalStartup' \
//	  -benchtime 1x -benchmem ./cmd/nel-run ./runtime/stats ./runtime/sandbox
//
// on this project's machine (with an unstripped nel-run, hence 52.96 MB).
// testdata/synthetic.txt is `go test -bench . -benchtime 1x -count 3` of a
// throwaway package whose benchmarks report the agreed units with chosen
// values: BenchmarkMerge1M s/op 1, 2 and 3 in its three runs, duckdb-s 0.5,
// peak-RSS-MB 300; BenchmarkClientCost cpu-s/1000 0.12 and samples/s
// 12345678 with no asyncio peer; BenchmarkEfficiencyCapped/C=64 and /C=512
// print to stdout while they run (which splits go test's result line) and
// report %efficiency 96.625 and 97.5; BenchmarkShardMemory skips.

func parseFile(t *testing.T, name string) *Results {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestParseNelRun(t *testing.T) {
	res := parseFile(t, "nelrun.txt")
	if res.Procs != 2 || res.CPU != "AMD EPYC" {
		t.Errorf("procs %d, cpu %q; want 2, AMD EPYC", res.Procs, res.CPU)
	}
	want := map[string]map[string]float64{
		"BenchmarkNelRunVersion":       {"ns/op": 15981024, "binary-MB": 52.96, "median-ms": 15.98, "p90-ms": 15.98, "runs": 1, "B/op": 42832, "allocs/op": 65},
		"BenchmarkMerge1M":             {"ns/op": 2461933190, "duckdb-s": 0.05806, "peak-RSS-MB": 807.3, "ratio": 42.40, "rows/s": 406187, "s/op": 2.462, "B/op": 41960, "allocs/op": 47},
		"BenchmarkBootstrapBinary250k": {"ns/op": 2873044, "B/op": 82240, "allocs/op": 10},
		"BenchmarkLocalStartup/true":   {"ns/op": 30502123, "bare-ms/op": 0.6173, "overhead-ms/op": 29.88, "B/op": 82384, "allocs/op": 142},
		"BenchmarkLocalStartup/python": {"ns/op": 57330408, "bare-ms/op": 42.57, "overhead-ms/op": 14.76, "B/op": 82056, "allocs/op": 149},
	}
	if len(res.Figures) != len(want) {
		t.Errorf("benchmarks %v, want the %d of %v", keys(res.Figures), len(want), keys(want))
	}
	for b, units := range want {
		for u, v := range units {
			if got, ok := res.Figures[b][u]; !ok || got != v {
				t.Errorf("%s %s = %v (present %v), want %v", b, u, got, ok, v)
			}
		}
		if len(res.Figures[b]) != len(units) {
			t.Errorf("%s: units %v, want %v", b, keys(res.Figures[b]), keys(units))
		}
	}
}

func TestParseSynthetic(t *testing.T) {
	res := parseFile(t, "synthetic.txt")
	checks := []struct {
		bench, unit string
		want        float64
	}{
		{"BenchmarkMerge1M", "s/op", 2}, // median of 1, 2, 3
		{"BenchmarkMerge1M", "duckdb-s", 0.5},
		{"BenchmarkClientCost", "samples/s", 12345678},
		{"BenchmarkEfficiencyCapped/C=64", "%efficiency", 96.62},  // all three runs, two of them split
		{"BenchmarkEfficiencyCapped/C=512", "%efficiency", 97.50}, // the same
		{"BenchmarkEfficiencyCapped/C=64", "ns/op", 240},          // median of 320, 240, 141: the split lines count
	}
	for _, c := range checks {
		if got, ok := res.Figures[c.bench][c.unit]; !ok || got != c.want {
			t.Errorf("%s %s = %v (present %v), want %v", c.bench, c.unit, got, ok, c.want)
		}
	}
	if _, ok := res.Figures["BenchmarkShardMemory"]; ok {
		t.Error("the skipped BenchmarkShardMemory has figures")
	}
}

func TestParseRefusesAnOverflow(t *testing.T) {
	_, err := Parse(strings.NewReader("goos: linux\nBenchmarkX-2   1   1e999 s/op\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "1e999") {
		t.Fatalf("err = %v, want one naming line 2 and 1e999", err)
	}
}

// The verdicts of every kind of row, worked out by hand from the values
// in synthetic.txt and nelrun.txt listed above.
func TestVerdicts(t *testing.T) {
	res := parseFile(t, "synthetic.txt")
	more := parseFile(t, "nelrun.txt")
	res.Figures["BenchmarkNelRunVersion"] = more.Figures["BenchmarkNelRunVersion"]
	cases := []struct {
		label, verdict string
		nel, peer      float64 // -1: absent
		ratio          float64 // -1: none
		peerState      string
	}{
		// 2 s against DuckDB's 0.5 s: ratio 4, over the target of 2.
		{"merge + statistics + bundle, 1M rows/16 shards", fail, 2, 0.5, 4, ""},
		{"peak RSS of nel-run merge", fail, 300, -1, -1, ""}, // 300 > 256
		// The target is on the ratio and asyncio did not run.
		{"client CPU per 1,000 samples", peerAbsent, 0.12, -1, -1, peerAbsent},
		{"client throughput, 0 latency", peerAbsent, 12345678, -1, -1, peerAbsent},
		// The target is on nel's figure: the absent peer is said, and
		// the verdict stands.
		{"efficiency vs a server capped at C=64", fail, 96.62, -1, -1, peerAbsent}, // < 97
		{"efficiency vs a server capped at C=512", pass, 97.5, -1, -1, peerAbsent}, // >= 97
		{"ratio 80k / 10k", notRun, -1, -1, -1, ""},
		{"nel compile, 1M samples in 1000 shards", notRun, -1, -1, -1, ""},
		{"nel-run binary (stripped, static)", fail, 52.96, -1, -1, ""}, // > 38
		{"nel-run --version, median", pass, 15.98, -1, -1, ""},         // <= 20
		{"runs", "", 1, -1, -1, ""},                                    // no target
		// In neither output (TestNoFigure has it run without this unit).
		{"peak RSS of nel-run shard, 10000 in flight", notRun, -1, -1, -1, ""},
	}
	table := Evaluate(Rows(), res)
	byFigure := map[string]Line{}
	for _, l := range table.Lines {
		byFigure[l.Figure] = l
	}
	for _, c := range cases {
		l, ok := byFigure[c.label]
		if !ok {
			t.Errorf("no row %q", c.label)
			continue
		}
		if l.Verdict != c.verdict || !same(l.Nel, c.nel) || !same(l.Peer, c.peer) || !same(l.Ratio, c.ratio) || l.PeerState != c.peerState {
			t.Errorf("%s: verdict %q nel %v peer %v ratio %v state %q; want %q %v %v %v %q",
				c.label, l.Verdict, show(l.Nel), show(l.Peer), show(l.Ratio), l.PeerState, c.verdict, c.nel, c.peer, c.ratio, c.peerState)
		}
	}
}

func TestNoFigure(t *testing.T) {
	res := &Results{Figures: map[string]map[string]float64{"BenchmarkNelRunInFlight10k": {"%efficiency": 98}}}
	for _, l := range Evaluate(Rows(), res).Lines {
		switch l.Unit {
		case "peak-RSS-MB":
			if l.Benchmark == "BenchmarkNelRunInFlight10k" && (l.Verdict != noFigure || l.Nel != nil) {
				t.Errorf("peak RSS: verdict %q nel %v, want %q and none", l.Verdict, show(l.Nel), noFigure)
			}
		case "%efficiency":
			if l.Benchmark == "BenchmarkNelRunInFlight10k" && (l.Verdict != "" || !same(l.Nel, 98)) {
				t.Errorf("efficiency: verdict %q nel %v, want none and 98", l.Verdict, show(l.Nel))
			}
		}
	}
}

// The command end to end: the text names each state in its place, the
// JSON holds null for what was not measured, and a missed target is not
// an error.
func TestRun(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	var out, errb bytes.Buffer
	if code := run([]string{"-version", "v9-dirty", "-json", jsonPath, filepath.Join("testdata", "synthetic.txt")}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	for _, want := range []string{
		"GOMAXPROCS 2, AMD EPYC",
		"peer absent",
		"97.5 %",
		">= 97 %",
		"not run",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	merge := regexp.MustCompile(`(?m)^merge \+ statistics \+ bundle, 1M rows/16 shards +2 s +0\.5 s DuckDB +4x +ratio <= 2 +FAIL$`)
	if !merge.MatchString(text) {
		t.Errorf("table lacks the merge row (2 s, 0.5 s DuckDB, 4x, ratio <= 2, FAIL):\n%s", text)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var got Table
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Lines) != len(Rows()) || got.GOMAXPROCS != 2 || got.Version != "v9-dirty" {
		t.Fatalf("bench.json: %d rows, gomaxprocs %d, version %q; want %d, 2, v9-dirty", len(got.Lines), got.GOMAXPROCS, got.Version, len(Rows()))
	}
	if !strings.Contains(string(data), `"nel": null`) || !strings.Contains(string(data), `"target": "<= 256 MB"`) {
		t.Errorf("bench.json lacks a null figure or an unescaped target:\n%s", data)
	}
	if code := run([]string{"-json"}, nil, &out, &errb); code != 2 {
		t.Errorf("bad command line: exit %d, want 2", code)
	}
	if code := run([]string{filepath.Join(t.TempDir(), "missing.txt")}, nil, &out, &errb); code != 1 {
		t.Errorf("missing input: exit %d, want 1", code)
	}
}

// Every row names a benchmark and unit, and a target has an operator the
// verdict knows; Evaluate panics on another.
func TestRowsWellFormed(t *testing.T) {
	for _, r := range Rows() {
		if !strings.HasPrefix(r.Bench, "Benchmark") || r.Unit == "" || strings.TrimSpace(r.Label) == "" {
			t.Errorf("row %+v: benchmark, unit and label are required", r)
		}
		switch r.Op {
		case "", "<", "<=", ">", ">=":
		default:
			t.Errorf("row %q: operator %q", r.Label, r.Op)
		}
		if r.OnRatio && r.PeerUnit == "" {
			t.Errorf("row %q: a target on the ratio needs a peer", r.Label)
		}
	}
}

func same(p *float64, want float64) bool {
	if want < 0 {
		return p == nil
	}
	return p != nil && *p == want
}

func show(p *float64) any {
	if p == nil {
		return "none"
	}
	return *p
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// ns/op shown in ms: 85,000,000 ns is 85 ms, within 100 ms; 120 ms is not.
func TestScale(t *testing.T) {
	res := &Results{Figures: map[string]map[string]float64{
		"BenchmarkProcessCompileSuite": {"ns/op": 85e6},
		"BenchmarkProcessValidate20":   {"ns/op": 120e6},
	}}
	want := map[string]struct {
		ms      float64
		verdict string
	}{"BenchmarkProcessCompileSuite": {85, pass}, "BenchmarkProcessValidate20": {120, fail}}
	seen := 0
	for _, l := range Evaluate(Rows(), res).Lines {
		w, ok := want[l.Benchmark]
		if !ok {
			continue
		}
		seen++
		if !same(l.Nel, w.ms) || l.Verdict != w.verdict || l.Shown != "ms" {
			t.Errorf("%s: %v %s %s, want %v ms %s", l.Benchmark, show(l.Nel), l.Shown, l.Verdict, w.ms, w.verdict)
		}
	}
	if seen != 2 {
		t.Errorf("%d rows for the two benchmarks, want 2", seen)
	}
}
