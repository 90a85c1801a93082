package shard_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/fakeaws"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/sim"
)

// ecsSandbox is an ecs_fargate sandbox of a plan whose AWS is f.
func ecsSandbox(f *fakeaws.ECS) *plan.Sandbox {
	return &plan.Sandbox{Name: "fargate", Type: "ecs_fargate", Image: "python:3.12-slim", Timeout: 60, Concurrency: 3,
		ECS: &plan.ECS{Region: "us-west-2", Cluster: "nel-test", Subnets: []string{"subnet-1"}, CPU: "2048", Memory: "4096",
			LogGroup: "/nel/sandbox", MaxTaskLifetimeSec: 600, ExecServerPort: f.Port(), NelRunImage: "nel:test"}}
}

// HumanEval samples run end to end in an ecs_fargate sandbox, against a
// fake AWS whose tasks' exec servers run the programs on loopback: each
// sample's program is a Fargate task of its own, stopped after; the
// right answers pass and the wrong ones fail as answers, not as errors.
func TestSandboxECSHumanEval(t *testing.T) {
	dir := t.TempDir()
	const n = 6
	data := writeHumanEval(t, dir, n)
	for _, acc := range []float64{1, 0} {
		f := fakeaws.New(t)
		srv := simServer(t, sim.Config{Accuracy: max(acc, 1e-12), Seed: 5}, "humaneval", data)
		p := hePlan(srv.URL, data, ecsSandbox(f), 2)
		// The plan names no endpoint: the SDK's own, here the fake's.
		t.Setenv("AWS_ENDPOINT_URL", f.URL())
		rows, bundle := runHumanEval(t, p, filepath.Join(dir, fmt.Sprint("out", acc)))
		correct := 0
		for _, r := range rows {
			if r.ErrorCategory != "" {
				t.Errorf("accuracy %v: row %s: %s: %s", acc, r.ItemID, r.ErrorCategory, r.ErrorMessage)
			}
			if r.Correct != nil && *r.Correct {
				correct++
			}
		}
		if len(rows) != n || correct != int(acc*n) {
			t.Errorf("accuracy %v: %d rows, %d correct; want %d, %d", acc, len(rows), correct, n, int(acc*n))
		}
		if h := bundle.Headline; h.Value == nil || *h.Value != acc {
			t.Errorf("accuracy %v: headline %+v", acc, h)
		}
		f.CheckAllStopped("nel-test", n)
		f.CheckSigned()
	}
}

// A task that cannot start makes each sample a sandbox_error with ECS's
// reason, never a wrong answer.
func TestSandboxECSTaskFails(t *testing.T) {
	dir := t.TempDir()
	const n = 3
	data := writeHumanEval(t, dir, n)
	f := fakeaws.New(t)
	f.StopAtStart = "Essential container in task exited"
	t.Setenv("AWS_ENDPOINT_URL", f.URL())
	srv := simServer(t, sim.Config{Accuracy: 1, Seed: 5}, "humaneval", data)
	rows, bundle := runHumanEval(t, hePlan(srv.URL, data, ecsSandbox(f), 1), filepath.Join(dir, "out"))
	for _, r := range rows {
		if r.ErrorCategory != "sandbox_error" || r.Outcome != "infra_error" || r.Correct != nil ||
			!strings.Contains(r.ErrorMessage, "stopped before it ran: TaskFailedToStart: Essential container in task exited") {
			t.Errorf("row %s: category %q outcome %q correct %v message %q", r.ItemID, r.ErrorCategory, r.Outcome, r.Correct, r.ErrorMessage)
		}
	}
	if len(rows) != n || bundle.Validity.InfraErrors != n {
		t.Errorf("%d rows, %d infra errors; want %d each", len(rows), bundle.Validity.InfraErrors, n)
	}
	// Every attempt's task was stopped (the shard retries a sandbox error).
	f.CheckAllStopped("nel-test", len(f.Tasks()))
	if len(f.Tasks()) < n {
		t.Errorf("%d tasks for %d samples", len(f.Tasks()), n)
	}
}

// A plan whose ecs_fargate sandbox names only a region (NeMo Evaluator's
// example 18) runs its samples end to end on the cluster and subnets the
// region's SSM parameter names, read once when the sandbox opens.
func TestSandboxECSDiscoveredHumanEval(t *testing.T) {
	dir := t.TempDir()
	const n = 3
	data := writeHumanEval(t, dir, n)
	f := fakeaws.New(t)
	f.Parameters = map[string]string{"/harbor/ecs-sandbox/config": `{"cluster": "harbor-cluster", "subnets": ["subnet-aaa"],
		"security_groups": ["sg-123"], "assign_public_ip": true, "execution_role_arn": "arn:aws:iam::123456:role/exec"}`}
	t.Setenv("AWS_ENDPOINT_URL", f.URL())
	sb := ecsSandbox(f)
	sb.ECS.Cluster, sb.ECS.Subnets, sb.ECS.SSMProject = "", nil, "harbor"
	srv := simServer(t, sim.Config{Accuracy: 1, Seed: 5}, "humaneval", data)
	rows, bundle := runHumanEval(t, hePlan(srv.URL, data, sb, 1), filepath.Join(dir, "out"))
	if len(rows) != n || bundle.Headline.Value == nil || *bundle.Headline.Value != 1 {
		t.Errorf("%d rows, headline %+v; want %d rows, 1", len(rows), bundle.Headline, n)
	}
	for _, r := range rows {
		if r.ErrorCategory != "" {
			t.Errorf("row %s: %s: %s", r.ItemID, r.ErrorCategory, r.ErrorMessage)
		}
	}
	if gp := f.Called("GetParameter"); len(gp) != 1 {
		t.Errorf("GetParameter called %d times, want once", len(gp))
	}
	for _, c := range f.Called("RunTask") {
		if c.Body["cluster"] != "harbor-cluster" {
			t.Errorf("RunTask on cluster %v, want the discovered harbor-cluster", c.Body["cluster"])
		}
	}
	f.CheckAllStopped("harbor-cluster", n)
	f.CheckSigned()
}
