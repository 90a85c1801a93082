package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A merge writes the plan's reports beside the results, as nel run does:
// report.md always, the other formats of output.report but html, for
// which it prints the nel command.
func TestMergeWritesReports(t *testing.T) {
	f := newResumeFixture(t, 12, 0)
	f.p.Shards = 2
	f.p.Recipe = "recipes/quick.cue"
	f.p.Reports = []string{"markdown", "html", "csv"}
	f.planPath = f.writePlan(t, f.p.OutputDir)
	out := f.p.OutputDir
	md := filepath.Join(out, "report.md")

	// Shards missing: --if-complete merges nothing and writes no report.
	if code, _, stderr := execCLI(t, "shard", "--plan", f.planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "2"); code != 0 {
		t.Fatalf("shard 0: %s", stderr)
	}
	code, stdout, stderr := execCLI(t, "merge", "--plan", f.planPath, "--if-complete")
	if code != 0 || strings.Contains(stdout, "report:") {
		t.Fatalf("merge --if-complete with a shard missing: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(md); !os.IsNotExist(err) {
		t.Fatalf("report.md written before the merge: %v", err)
	}

	if code, _, stderr := execCLI(t, "shard", "--plan", f.planPath, "--benchmark", "gsm8k", "--shard", "1", "--of", "2"); code != 0 {
		t.Fatalf("shard 1: %s", stderr)
	}
	code, stdout, stderr = execCLI(t, "merge", "--plan", f.planPath, "--if-complete")
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	// A second task that finishes at the same moment finds the work done.
	code, stdout2, stderr2 := execCLI(t, "merge", "--plan", f.planPath, "--if-complete")
	if code != 0 || stdout2 != "" || !strings.Contains(stderr2, "already merged by another task") {
		t.Errorf("second merge --if-complete: exit %d\nstdout %q\nstderr %q", code, stdout2, stderr2)
	}
	csv := filepath.Join(out, "report.csv")
	if want := fmt.Sprintf("report: %s\nreport: %s\n", md, csv); !strings.HasSuffix(stdout, want) {
		t.Errorf("stdout %q, want it to end with %q", stdout, want)
	}
	if strings.Contains(stdout, "report.html") {
		t.Errorf("stdout names report.html: %q", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); !os.IsNotExist(err) {
		t.Errorf("report.html: %v", err)
	}
	note := regexp.MustCompile(`(?m)^nel-run merge: report\.html not written .*: nel report (\S+) -f html -o (\S+)$`).FindAllStringSubmatch(stderr, -1)
	if len(note) != 1 || note[0][1] != out || note[0][2] != filepath.Join(out, "report.html") {
		t.Errorf("stderr %q: want one line with the command nel report %s -f html -o %s/report.html", stderr, out, out)
	}

	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, want := range []string{
		"# quick.cue\n",
		"Run: `" + out + "` · 1 benchmark(s)",
		"| [gsm8k](#bench-gsm8k) | `pass@1` | **",
		"12 items × 2 repeats (24 samples) · binary rewards",
		"SIMULATED endpoint",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}
	// The headline, as the merge printed it (value and both intervals;
	// binary rewards over repeats: Wilson on the effective sample size).
	if !regexp.MustCompile(`(?m)^\*\*pass@1 [01]\.\d{4} \[95% CI jeffreys_effective [0-9.]+–[0-9.]+\] \(NeMo's bootstrap, parity only: [0-9.]+–[0-9.]+\)\*\*`).MatchString(report) {
		t.Errorf("report.md has no headline:\n%s", report)
	}
	b, err = os.ReadFile(csv)
	if err != nil || !strings.HasPrefix(string(b), "benchmark,name,metric,") || !strings.Contains(string(b), "\ngsm8k,gsm8k,pass@1,") {
		t.Errorf("report.csv: %v\n%s", err, b)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 4 { // .nel, gsm8k, report.md, report.csv
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %q", out, names)
	}
}

// Without output.report (an older plan), a merge writes report.md alone,
// titled like any report.
func TestMergeWritesMarkdownByDefault(t *testing.T) {
	f := newResumeFixture(t, 5, 0)
	if code, _, stderr := execCLI(t, "shard", "--plan", f.planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1"); code != 0 {
		t.Fatalf("shard: %s", stderr)
	}
	out := f.p.OutputDir
	code, stdout, stderr := execCLI(t, "merge", out)
	if code != 0 || strings.Contains(stderr, "report") {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	md := filepath.Join(out, "report.md")
	if !strings.HasSuffix(stdout, "\nreport: "+md+"\n") || strings.Count(stdout, "report: ") != 1 {
		t.Errorf("stdout %q", stdout)
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.HasPrefix(string(b), "# nel evaluation report\n") || !strings.Contains(string(b), "**pass@1 ") {
		t.Errorf("report.md: %v\n%s", err, b)
	}
}
