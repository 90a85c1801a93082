package shard

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/plan"
)

// NeMo's rule for the agent's timeout (OpenClawSolver._effective_timeout),
// worked out by hand: nel's is run_timeout, else the benchmark's timeout;
// "task" takes the smaller of nel's and the task's, "max" the larger,
// "override" nel's; max_agent_timeout caps the result.
func TestClawTimeout(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name                   string
		bench, run, task, capT float64
		strategy               string
		want                   time.Duration
	}{
		{"task: the task's is smaller", 1800, 0, 120, 0, "task", 120 * s},
		{"task: nel's is smaller", 60, 0, 120, 0, "task", 60 * s},
		{"run_timeout replaces the benchmark's", 1800, 90, 120, 0, "task", 90 * s},
		{"max", 60, 0, 120, 0, "max", 120 * s},
		{"override", 1800, 280, 120, 0, "override", 280 * s},
		{"no task timeout", 1800, 0, 0, 0, "task", 1800 * s},
		{"capped", 1800, 0, 0, 300, "max", 300 * s},
	} {
		r := &runner{b: &plan.Benchmark{Timeout: c.bench, Solver: plan.Solver{OpenClaw: &plan.OpenClaw{
			RunTimeout: c.run, TimeoutStrategy: c.strategy, MaxAgentTimeout: c.capT}}}}
		task := &harbor.Task{}
		task.Config.AgentTimeout = time.Duration(c.task * float64(s))
		if got := r.clawTimeout(task); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// clawCommand runs npm's openclaw.mjs by the node on PATH, binding the
// node_modules it lives in (its hoisted dependencies) and node's install;
// another executable runs as itself with its folder.
func TestClawCommand(t *testing.T) {
	root := t.TempDir()
	mjs := filepath.Join(root, "oc", "node_modules", "openclaw", "openclaw.mjs")
	node := filepath.Join(root, "node24", "bin", "node")
	plain := filepath.Join(root, "tools", "openclaw")
	for _, f := range []string{mjs, node, plain} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// npm's bin link: node_modules/.bin/openclaw → ../openclaw/openclaw.mjs
	link := filepath.Join(root, "oc", "node_modules", ".bin", "openclaw")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../openclaw/openclaw.mjs", link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(node)+string(os.PathListSeparator)+filepath.Dir(link))
	argv0, binds, err := clawCommand("openclaw")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{node, mjs}; !reflect.DeepEqual(argv0, want) {
		t.Errorf("argv0 %q, want %q", argv0, want)
	}
	if want := []string{filepath.Join(root, "node24"), filepath.Join(root, "oc", "node_modules")}; !reflect.DeepEqual(binds, want) {
		t.Errorf("binds %q, want %q", binds, want)
	}
	argv0, binds, err = clawCommand(plain)
	if err != nil || !reflect.DeepEqual(argv0, []string{plain}) || !reflect.DeepEqual(binds, []string{filepath.Dir(plain)}) {
		t.Errorf("plain executable: %q %q %v", argv0, binds, err)
	}
	if _, _, err := clawCommand("no-such-openclaw"); err == nil {
		t.Error("a missing executable was found")
	}
	if got := hostPaths("/usr/lib/node_modules", "/usr", "/", "/opt/x"); !reflect.DeepEqual(got, []string{"/opt/x"}) {
		t.Errorf("hostPaths %q", got)
	}
}
