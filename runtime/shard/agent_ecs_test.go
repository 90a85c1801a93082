package shard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/fakeaws"
	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/shard"
)

// Harbor tasks solved by tool_calling in an ecs_fargate sandbox: each
// sample is one task of the fake AWS (its exec server runs the session's
// commands in bubblewrap, where /app, /logs and /tests are the task's),
// the agent's edit of /app/out.txt is what the verifier reads, and every
// task is stopped once its sample ends.
func TestAgentECS(t *testing.T) {
	needLocalSandbox(t)
	f := fakeaws.New(t)
	f.TaskEngine = "local"
	t.Setenv("AWS_ENDPOINT_URL", f.URL())
	dir := t.TempDir()
	tasks := writeAgentTasks(t, dir)
	// "solve" is solved only if the agent's file is there for the
	// verifier: the session kept it from the agent's bash call.
	root := filepath.Join(dir, harbor.DefaultDatasetsDir, "mini")
	verifier := "#!/bin/bash\nmkdir -p /logs/verifier\nif [ \"$(cat /app/out.txt)\" = yes ] && [ -f /app/seed.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
	if err := os.WriteFile(filepath.Join(root, "solve", "tests", "test.sh"), []byte(verifier), 0o755); err != nil {
		t.Fatal(err)
	}
	ds, err := harbor.Load(context.Background(), "mini", root)
	if err != nil {
		t.Fatal(err)
	}
	tasks.Digest = ds.Digest
	srv, _ := agentSim(t)
	p := agentPlan(srv.URL, dir, tasks, ecsSandbox(f))
	out := filepath.Join(dir, "out")
	runAgent(t, shard.Options{Plan: p, Benchmark: "harbor://mini", Shard: 0, Of: 1, OutDir: out})

	rows, _, _ := readAgentShard(t, out)
	for name, w := range map[string]struct {
		reward   float64
		category string
	}{"solve": {1, ""}, "miss": {0, ""}, "loop": {0, "turn_budget"}, "silent": {0, "scorer_error"}} {
		if r := rows[name]; r.Reward != w.reward || r.ErrorCategory != w.category {
			t.Errorf("%s: reward %v category %q (%s), want %v %q", name, r.Reward, r.ErrorCategory, r.ErrorMessage, w.reward, w.category)
		}
	}
	if len(rows) != len(agentTasks) {
		t.Errorf("%d rows, want %d", len(rows), len(agentTasks))
	}
	// One task per sample, each stopped when its sample closed.
	started := len(f.Tasks())
	if started != len(agentTasks) {
		t.Errorf("%d tasks for %d samples, want one each", started, len(agentTasks))
	}
	f.CheckAllStopped("nel-test", started)
	for _, c := range f.Called("StopTask") {
		if c.Body["reason"] != "nel: session closed" {
			t.Errorf("StopTask reason %v, want the session's close", c.Body["reason"])
		}
	}
	f.CheckSigned()
	if n := len(f.Called("RunTask")); n != started {
		t.Errorf("RunTask called %d times for %d tasks", n, started)
	}
}

// A task that ECS stops under its sample (here at the sample's second
// command: the verifier's preparation after one tool call, or the second
// tool call) makes the sample an infrastructure failure naming ECS's
// reason, never a reward the verifier did not give.
func TestAgentECSTaskStoppedUnder(t *testing.T) {
	needLocalSandbox(t)
	f := fakeaws.New(t)
	f.TaskEngine = "local"
	f.OnSessionExec = func(arn string, n int) {
		if n == 2 {
			f.StopUnder(arn, "SpotInterruption", "Your Spot Task was interrupted.")
		}
	}
	t.Setenv("AWS_ENDPOINT_URL", f.URL())
	dir := t.TempDir()
	srv, _ := agentSim(t)
	p := agentPlan(srv.URL, dir, writeAgentTasks(t, dir), ecsSandbox(f))
	out := filepath.Join(dir, "out")
	runAgent(t, shard.Options{Plan: p, Benchmark: "harbor://mini", Shard: 0, Of: 1, OutDir: out})
	rows, _, _ := readAgentShard(t, out)
	for name, r := range rows {
		if r.ErrorCategory != "sandbox_error" || r.Outcome != "infra_error" || r.Reward != 0 || r.Correct != nil ||
			!strings.Contains(r.ErrorMessage, "the task stopped: SpotInterruption: Your Spot Task was interrupted.") {
			t.Errorf("%s: category %q outcome %q reward %v message %q", name, r.ErrorCategory, r.Outcome, r.Reward, r.ErrorMessage)
		}
	}
	if len(rows) != len(agentTasks) {
		t.Errorf("%d rows, want %d", len(rows), len(agentTasks))
	}
	f.CheckAllStopped("nel-test", len(f.Tasks()))
}
