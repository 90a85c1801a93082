package rundir

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestDocLayout checks that the tree drawn in the package documentation
// is what the functions return: every drawn path comes from the call its
// line names, and every call is drawn.
func TestDocLayout(t *testing.T) {
	d := Dir("out")
	b := d.Benchmark("gsm8k")
	s := b.Shard(0, 2)
	calls := []struct{ call, path string }{
		{`Dir("out")`, string(d)},
		{"Meta()", d.Meta()},
		{"Plan(planHash)", d.Plan(hash)},
		{"Job(planHash)", d.Job(hash)},
		{"Attempts(tag)", d.Attempts("shard-3")},
		{"MergeLock()", d.MergeLock()},
		{"Servers()", d.Servers()},
		{"Balancer(service, job)", d.Balancer("vllm", "1234")},
		{"Images()", d.Images()},
		{"RecipeDir()", d.RecipeDir()},
		{"Recipe(file)", d.Recipe("suite.cue")},
		{"Source()", d.Source()},
		{"Process()", d.Process()},
		{"Jobs()", d.Jobs()},
		{"Published()", d.Published()},
		{"Logs()", string(d.Logs())},
		{"Logs.Run()", d.Logs().Run()},
		{`Logs.Server(service, "")`, d.Logs().Server("vllm", "")},
		{"Logs.Server(service, job)", d.Logs().Server("vllm", "1234")},
		{"Logs.Sandbox(sandbox, job)", d.Logs().Sandbox("python", "1234")},
		{"Logs.Shard(benchDir, i, job)", d.Logs().Shard("gsm8k", 0, "1234")},
		{"Logs.Harness(benchDir, job)", d.Logs().Harness("mmlu", "1234")},
		{"Benchmark(dir)", string(b)},
		{"Results()", b.Results()},
		{"Trajectories()", b.Trajectories()},
		{"Turns()", b.Turns()},
		{"Bundle()", b.Bundle()},
		{"Shards()", b.Shards()},
		{"Harness()", b.Harness()},
		{"Shard(i, n)", string(s)},
		{"Shard.Trajectories()", s.Trajectories()},
		{"Shard.Turns()", s.Turns()},
		{"Shard.Journal()", s.Journal()},
		{"Shard.Spool()", s.Spool()},
		{"Shard.StaleJournal(at)", s.StaleJournal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
		{`Report("md")`, d.Report("md")},
	}
	drawn := docTree(t)
	for _, c := range calls {
		comment, ok := drawn[c.path]
		if !ok {
			t.Errorf("%s = %s, which the package doc does not draw", c.call, c.path)
			continue
		}
		if !strings.HasPrefix(comment, c.call) {
			t.Errorf("the package doc draws %s as %q, expected it to start with %s", c.path, comment, c.call)
		}
		delete(drawn, c.path)
	}
	for p, comment := range drawn {
		t.Errorf("the package doc draws %s (%s), which no call checked here returns", p, comment)
	}
}

// docTree returns the paths drawn in the package doc's tree, each with
// the comment on its line.
func docTree(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "rundir.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var stack []string // the folders above the current line
	for _, line := range strings.Split(f.Doc.Text(), "\n") {
		line, ok := strings.CutPrefix(line, "\t")
		if !ok {
			continue
		}
		depth := 0
		for {
			rest, ok := cutAny(line, "│   ", "├── ", "└── ", "    ")
			if !ok {
				break
			}
			line = rest
			depth++
		}
		name, comment, _ := strings.Cut(line, "  ")
		comment = strings.TrimSpace(comment)
		if depth > len(stack) {
			t.Fatalf("package doc: %q is drawn %d deep, under %d folders", name, depth, len(stack))
		}
		stack = stack[:depth]
		p := filepath.Join(append(slices.Clone(stack), name)...)
		if _, dup := out[p]; dup {
			t.Fatalf("package doc: %s drawn twice", p)
		}
		out[p] = comment
		if strings.HasSuffix(name, "/") {
			stack = append(stack, name)
		}
	}
	if len(out) == 0 {
		t.Fatal("package doc: no tree found")
	}
	return out
}

func cutAny(s string, prefixes ...string) (string, bool) {
	for _, p := range prefixes {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest, true
		}
	}
	return s, false
}

func TestPlanID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{hash, "0123456789ab"},
		{"0123456789abcdef", "0123456789ab"}, // no prefix
		{"sha256:abc", "abc"},                // too short: used whole, no panic
		{"", ""},
	} {
		if got := PlanID(tc.in); got != tc.want {
			t.Errorf("PlanID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A job script hands Dir a shell variable; the paths must keep it intact
// for the shell to expand.
func TestShellVariableDir(t *testing.T) {
	d := Dir("$NEL_OUT")
	if got, want := filepath.ToSlash(d.Plan(hash)), "$NEL_OUT/.nel/plan-0123456789ab.json"; got != want {
		t.Errorf("Plan = %q, want %q", got, want)
	}
	if got, want := filepath.ToSlash(d.Logs().Server("vllm", "$SLURM_JOB_ID")), "$NEL_OUT/logs/server-vllm-$SLURM_JOB_ID.log"; got != want {
		t.Errorf("Logs.Server = %q, want %q", got, want)
	}
}

func TestOfPlan(t *testing.T) {
	for _, d := range []Dir{"out", "/abs/run", "../up/run"} {
		got, ok := OfPlan(d.Plan(hash))
		if !ok || got != Dir(filepath.Clean(string(d))) {
			t.Errorf("OfPlan(%s) = %q, %v; want %q, true", d.Plan(hash), got, ok, d)
		}
	}
	for _, p := range []string{"plan.json", "/tmp/plan-0123456789ab.json", "out/nel/plan.json"} {
		if got, ok := OfPlan(p); ok {
			t.Errorf("OfPlan(%s) = %q, true; want false: it is not in a .nel folder", p, got)
		}
	}
}

func TestPlans(t *testing.T) {
	d := Dir(t.TempDir())
	if got, err := d.Plans(); err != nil || len(got) != 0 {
		t.Fatalf("Plans of an empty folder = %v, %v; want none, no error", got, err)
	}
	other := "sha256:ffffffffffff" + strings.Repeat("0", 52)
	for _, p := range []string{d.Plan(other), d.Plan(hash), d.Job(hash), d.MergeLock(), d.Source()} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.Plans()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{d.Plan(hash), d.Plan(other)}; !slices.Equal(got, want) {
		t.Errorf("Plans = %v, want %v", got, want)
	}
}

func TestShardFiles(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, ShardFile(i, 12))
	}
	if !slices.IsSorted(names) {
		t.Errorf("shard names do not sort in shard order: %v", names)
	}
	s := Dir("out").Benchmark("gsm8k").Shard(3, 12)
	for _, tc := range []struct{ got, want string }{
		{string(s), "out/gsm8k/shards/shard-00003-of-00012.parquet"},
		{s.Trajectories(), "out/gsm8k/shards/shard-00003-of-00012.trajectories.parquet"},
		{s.Turns(), "out/gsm8k/shards/shard-00003-of-00012.turns.parquet"},
		{s.Journal(), "out/gsm8k/shards/.shard-00003-of-00012.journal"},
		{Shard("shard-00000-of-00001.parquet").Journal(), ".shard-00000-of-00001.journal"},
	} {
		if got := filepath.ToSlash(tc.got); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
	// A glob for Parquet files never picks up a journal.
	if ok, _ := filepath.Match("*.parquet", filepath.Base(s.Journal())); ok {
		t.Errorf("journal %s matches *.parquet", s.Journal())
	}
}

// Logs.List finds the .log files of the logs folder, sorted, and nothing
// (no error) before the folder exists.
func TestLogsList(t *testing.T) {
	d := Dir(t.TempDir())
	if got, err := d.Logs().List(); err != nil || len(got) != 0 {
		t.Fatalf("List before any log: %v, %v", got, err)
	}
	if err := os.MkdirAll(string(d.Logs()), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d.Logs().Server("sim", ""), d.Logs().Run(), filepath.Join(string(d.Logs()), "notes.txt")} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.Logs().List()
	if want := []string{d.Logs().Run(), d.Logs().Server("sim", "")}; err != nil || !slices.Equal(got, want) {
		t.Errorf("List = %v, %v; want %v", got, err, want)
	}
}
