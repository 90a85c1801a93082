package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/sim"
)

// resumeFixture is a plan over synthetic GSM8K data served by the simulator.
type resumeFixture struct {
	dir, planPath string
	p             *plan.Plan
}

func newResumeFixture(t *testing.T, items int, latency time.Duration) *resumeFixture {
	t.Helper()
	dir := t.TempDir()
	data := writeGSM8KData(t, dir, items)
	gsm, _ := bench.Lookup("gsm8k")
	set, err := gsm.Load(context.Background(), dataset.NewLoader(dataset.Options{Offline: true}), map[string]any{"data_path": data})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Accuracy: 0.7, Latency: latency, LatencyJitter: latency / 2, Seed: 3}, sim.Dataset{Benchmark: gsm, Items: set.Items})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	p := &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "test", ScoringVersion: "1",
		RecipeHash: "sha256:r", PlanHash: "sha256:p", OutputDir: filepath.Join(dir, "out"), Shards: 1,
		Services: []plan.Service{{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: srv.URL + "/v1"}},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:b",
			Solver:  plan.Solver{Type: "simple", Service: "sim"},
			Repeats: 2, MaxConcurrent: 8, Timeout: 60,
			Params: map[string]any{"data_path": data},
		}},
	}
	f := &resumeFixture{dir: dir, p: p}
	f.planPath = f.writePlan(t, filepath.Join(dir, "out"))
	return f
}

func (f *resumeFixture) writePlan(t *testing.T, out string) string {
	t.Helper()
	path := filepath.Join(out, ".nel", "plan-test.json")
	b, _ := json.Marshal(f.p)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// comparable strips what legitimately differs between an interrupted and an
// uninterrupted run of the same samples: timings and attempt counts.
func comparable(rows []results.Row, trajs []results.Trajectory) ([]results.Row, []results.Trajectory) {
	for i := range rows {
		rows[i].LatencyMS, rows[i].Attempts = 0, 0
	}
	for i := range trajs {
		trajs[i].LatencyMS, trajs[i].Retries = 0, 0
	}
	return rows, trajs
}

func readShard(t *testing.T, out string) ([]results.Row, []results.Trajectory) {
	t.Helper()
	p := filepath.Join(out, "gsm8k", "shards", rundir.ShardFile(0, 1))
	rows, _, err := results.ReadRows(p)
	if err != nil {
		t.Fatal(err)
	}
	trajs, _, err := results.ReadTrajectories(strings.TrimSuffix(p, ".parquet") + ".trajectories.parquet")
	if err != nil {
		t.Fatal(err)
	}
	return rows, trajs
}

// DESIGN §6.3: kill -9 at random moments, then the same command again,
// until it finishes; the result equals an uninterrupted run's.
func TestKillNineResume(t *testing.T) {
	f := newResumeFixture(t, 400, 15*time.Millisecond)
	args := []string{"shard", "--plan", f.planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1"}

	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for attempt := 0; ; attempt++ {
		if attempt > 200 {
			t.Fatal("the shard never finished")
		}
		cmd, exited, stderr := startNelRun(t, args...)
		// Early kills land in start-up and data loading, later ones in the
		// middle of requests and journal writes.
		wait := time.Duration(rng.IntN(250)+5) * time.Millisecond
		if kills >= 12 {
			wait = time.Minute // enough killing: let it finish
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("nel-run shard failed on its own: %v\n%s", err, stderr.String())
			}
		case <-time.After(wait):
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			kills++
			continue
		}
		break
	}
	t.Logf("finished after %d kills", kills)
	if kills < 12 {
		t.Fatalf("only %d kills before the shard finished: the test did not interrupt it enough", kills)
	}
	rows, trajs := readShard(t, f.p.OutputDir)
	if len(rows) != 800 {
		t.Fatalf("%d rows, want 400 items × 2 repeats", len(rows))
	}
	seen := map[string]bool{}
	var retried int
	for _, r := range rows {
		k := fmt.Sprintf("%s/%d", r.ItemID, r.Repeat)
		if seen[k] {
			t.Fatalf("sample %s twice", k)
		}
		seen[k] = true
		if r.Attempts < 1 || r.Attempts > int64(kills)+1 {
			t.Fatalf("row %s: attempts %d after %d kills", k, r.Attempts, kills)
		}
		if r.Attempts > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Error("no row records an interrupted attempt, yet the shard was killed mid-flight")
	}
	// No journal, temporary or partial file is left behind.
	entries, _ := os.ReadDir(filepath.Join(f.p.OutputDir, "gsm8k", "shards"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind: %s", e.Name())
		}
	}

	f.checkLikeUninterrupted(t, rows, trajs)
}

// checkLikeUninterrupted runs f's plan uninterrupted in another directory
// and checks that rows and trajs, an interrupted run's, equal its (timings
// and attempts aside).
func (f *resumeFixture) checkLikeUninterrupted(t *testing.T, rows []results.Row, trajs []results.Trajectory) {
	t.Helper()
	ref := filepath.Join(f.dir, "ref")
	refPlan := f.writePlan(t, ref)
	if code, _, stderr := execCLI(t, "shard", "--plan", refPlan, "--benchmark", "gsm8k", "--shard", "0", "--of", "1"); code != 0 {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	wantRows, wantTrajs := comparable(readShard(t, ref))
	gotRows, gotTrajs := comparable(rows, trajs)
	if !reflect.DeepEqual(gotRows, wantRows) {
		t.Error("results differ from an uninterrupted run")
	}
	if !reflect.DeepEqual(gotTrajs, wantTrajs) {
		t.Error("trajectories differ from an uninterrupted run")
	}
}

func TestPlanChecksum(t *testing.T) {
	f := newResumeFixture(t, 5, 0)
	b, _ := os.ReadFile(f.planPath)
	sum := sha256.Sum256(b)
	args := []string{"shard", "--plan", f.planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1"}

	cmd := nelRun(t, args...)
	cmd.Env = append(cmd.Env, "NEL_PLAN_SHA256="+strings.Repeat("0", 64))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "was changed after compilation") || !strings.Contains(string(out), f.planPath) {
		t.Fatalf("tampered plan: err %v\n%s", err, out)
	}
	cmd = nelRun(t, args...)
	cmd.Env = append(cmd.Env, "NEL_PLAN_SHA256="+hex.EncodeToString(sum[:]))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("matching plan: %v\n%s", err, out)
	}
}

func TestMergeCommand(t *testing.T) {
	f := newResumeFixture(t, 30, 0)
	f.p.Shards = 3
	f.planPath = f.writePlan(t, f.p.OutputDir)
	out := f.p.OutputDir
	// Nothing run yet: --if-complete is a quiet success, a plain merge an error.
	if code, _, stderr := execCLI(t, "merge", "--plan", f.planPath, "--if-complete"); code != 0 || !strings.Contains(stderr, "3 of 3 shards not finished") {
		t.Fatalf("merge --if-complete with no shards: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := execCLI(t, "merge", out); code != 1 || !strings.Contains(stderr, "shard 0, 1, 2") {
		t.Fatalf("merge with no shards: exit %d\n%s", code, stderr)
	}
	for i := range 3 {
		if code, _, stderr := execCLI(t, "shard", "--plan", f.planPath, "--benchmark", "gsm8k", "--shard", fmt.Sprint(i), "--of", "3"); code != 0 {
			t.Fatalf("shard %d: %s", i, stderr)
		}
	}
	code, stdout, stderr := execCLI(t, "merge", out)
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "gsm8k  pass@1") || !strings.Contains(stdout, "30 items × 2 repeats") || !strings.Contains(stdout, "SIMULATED") {
		t.Errorf("headline: %q", stdout)
	}
	rows, _, err := results.ReadRows(filepath.Join(out, "gsm8k", "results.parquet"))
	if err != nil || len(rows) != 60 {
		t.Fatalf("merged: %d rows, %v", len(rows), err)
	}

	// A shard from another plan is refused by name.
	shard1 := filepath.Join(out, "gsm8k", "shards", rundir.ShardFile(1, 3))
	rs, meta, _ := results.ReadRows(shard1)
	meta[results.MetaPlanHash] = "sha256:other"
	if err := results.WriteRows(shard1, rs, meta); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := execCLI(t, "merge", "--plan", f.planPath); code != 1 || !strings.Contains(stderr, shard1) || !strings.Contains(stderr, "sha256:other") {
		t.Fatalf("merge with a foreign shard: exit %d\n%s", code, stderr)
	}
	// A duplicated row is refused.
	meta[results.MetaPlanHash] = "sha256:p"
	if err := results.WriteRows(shard1, append(rs, rs[0]), meta); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := execCLI(t, "merge", "--plan", f.planPath); code != 1 || !strings.Contains(stderr, "appears twice") {
		t.Fatalf("merge with a duplicate: exit %d\n%s", code, stderr)
	}
	// A missing row is refused.
	if err := results.WriteRows(shard1, rs[1:], meta); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := execCLI(t, "merge", "--plan", f.planPath); code != 1 || !strings.Contains(stderr, "repeats") {
		t.Fatalf("merge with a missing row: exit %d\n%s", code, stderr)
	}
}
