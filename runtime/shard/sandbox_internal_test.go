package shard

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// Sizes as docker --memory reads them: k, m, g, t are powers of 1024.
func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		err  bool
	}{
		{"", 0, false},
		{"512", 512, false},
		{"4g", 4 << 30, false},
		{"4G", 4 << 30, false},
		{"4gb", 4 << 30, false},
		{"16m", 16 << 20, false},
		{"1.5g", 3 << 29, false},
		{"64k", 64 << 10, false},
		{"2t", 2 << 40, false},
		{"10B", 10, false},
		{"4 g", 0, true},
		{"-1m", 0, true},
		{"lots", 0, true},
		{"4x", 0, true},
		{"99999999999t", 0, true},
	}
	for _, c := range cases {
		got, err := parseSize(c.in)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestSandboxConfig(t *testing.T) {
	sb := &plan.Sandbox{Name: "py", Type: "docker", Image: "python:3.12-slim", Memory: "4g", Cpus: 2,
		Timeout: 60, Concurrency: 3, Network: "none", MaxProcesses: 64, MaxFileSize: "16m",
		Env: map[string]string{"A": "b"}}
	got, err := sandboxConfig(sb)
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.Config{Name: "py", Type: "docker", Image: "python:3.12-slim", MemoryBytes: 4 << 30, CPUs: 2,
		Timeout: time.Minute, Concurrency: 3, Network: "none", MaxProcesses: 64, MaxFileSizeBytes: 16 << 20,
		Env: map[string]string{"A": "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sandboxConfig = %+v\nwant %+v", got, want)
	}
	// A slurm pool's concurrency defaults to its slots per node.
	// An apptainer pool: the shard is the client of the pool's servers,
	// which run apptainer.
	if got, _ := sandboxConfig(&plan.Sandbox{Name: "sif", Type: "apptainer", Pool: true, SlotsPerNode: 3}); got.Type != "slurm" || got.Concurrency != 3 {
		t.Errorf("apptainer pool: type %q, concurrency %d; want the pool's client (slurm) with 3", got.Type, got.Concurrency)
	}
	if got, _ := sandboxConfig(&plan.Sandbox{Type: "slurm", SlotsPerNode: 4}); got.Concurrency != 4 {
		t.Errorf("slurm concurrency %d, want 4", got.Concurrency)
	}
	if _, err := sandboxConfig(&plan.Sandbox{Type: "local", MaxFileSize: "big"}); err == nil || !strings.HasPrefix(err.Error(), "max_file_size: ") {
		t.Errorf("bad max_file_size: %v", err)
	}
	if _, err := sandboxConfig(&plan.Sandbox{Type: "local", Timeout: -1}); err == nil || !strings.HasPrefix(err.Error(), "timeout: ") {
		t.Errorf("negative timeout: %v", err)
	}
}

type recordingSandbox struct{ got []time.Duration }

func (r *recordingSandbox) Run(_ context.Context, job sandbox.Job) (*sandbox.Result, error) {
	r.got = append(r.got, job.Timeout)
	return &sandbox.Result{}, nil
}
func (r *recordingSandbox) Name() string { return "rec" }
func (r *recordingSandbox) Close() error { return nil }

// A job runs under the smaller of its own timeout and the sandbox's.
func TestCappedTimeout(t *testing.T) {
	rec := &recordingSandbox{}
	c := capped{Sandbox: rec, max: 10 * time.Second}
	for _, d := range []time.Duration{30 * time.Second, 2 * time.Second, 0} {
		c.Run(context.Background(), sandbox.Job{Timeout: d})
	}
	uncapped := capped{Sandbox: rec}
	uncapped.Run(context.Background(), sandbox.Job{Timeout: time.Hour})
	want := []time.Duration{10 * time.Second, 2 * time.Second, 0, time.Hour}
	if !reflect.DeepEqual(rec.got, want) {
		t.Errorf("timeouts %v, want %v", rec.got, want)
	}
}

func TestUnavailableSandbox(t *testing.T) {
	cause := errors.New("no daemon")
	u := unavailable{name: "py", err: cause}
	if res, err := u.Run(context.Background(), sandbox.Job{}); res != nil || !errors.Is(err, cause) || u.Name() != "py" {
		t.Errorf("Run = %v, %v; name %q", res, err, u.Name())
	}
}

// An ecs_fargate sandbox's plan becomes the engine's ECSConfig, seconds as
// durations; Fargate's memory ("4096", MiB) is not read as bytes.
func TestSandboxConfigECS(t *testing.T) {
	got, err := sandboxConfig(&plan.Sandbox{Name: "py", Type: "ecs_fargate", Image: "python:3.12-slim", Timeout: 120, Concurrency: 4,
		ECS: &plan.ECS{Region: "us-west-2", Cluster: "c", Subnets: []string{"s1"}, SecurityGroups: []string{"g"}, AssignPublicIP: new(false), SSMProject: "proj",
			CPU: "2048", Memory: "4096", EphemeralStorageGiB: 30, ExecutionRoleARN: "arn:x", TaskRoleARN: "arn:t", LogGroup: "/l",
			LogStreamPrefix: "p", MaxTaskLifetimeSec: 3600, ExecServerPort: 19542, NelRunImage: "nel:1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &sandbox.ECSConfig{Region: "us-west-2", Cluster: "c", Subnets: []string{"s1"}, SecurityGroups: []string{"g"}, AssignPublicIP: new(false), SSMProject: "proj",
		CPU: "2048", Memory: "4096", EphemeralStorageGiB: 30, ExecutionRoleARN: "arn:x", TaskRoleARN: "arn:t", LogGroup: "/l",
		LogStreamPrefix: "p", MaxTaskLifetime: time.Hour, ExecServerPort: 19542, NelRunImage: "nel:1"}
	if !reflect.DeepEqual(got.ECS, want) || got.MemoryBytes != 0 || got.Timeout != 2*time.Minute || got.Concurrency != 4 {
		t.Errorf("sandboxConfig = %+v, ECS %+v\nwant ECS %+v", got, got.ECS, want)
	}
}

// The proxy for a Gym server's agent listens on loopback only when the
// server is on this host's loopback, by address, not by spelling.
func TestProxyListen(t *testing.T) {
	for base, want := range map[string]string{
		"http://127.0.0.1:8000": "127.0.0.1:0",
		"http://127.1.2.3:8000": "127.0.0.1:0",
		"http://localhost:8000": "127.0.0.1:0",
		"http://[::1]:8000":     "127.0.0.1:0",
		"http://127.example:80": "0.0.0.0:0", // a host name, not an address
		"http://gym-node:8000":  "0.0.0.0:0",
		"http://10.0.0.5:8000":  "0.0.0.0:0",
	} {
		if got := proxyListen(base); got != want {
			t.Errorf("proxyListen(%s) = %s, want %s", base, got, want)
		}
	}
}
