package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
)

// A shard with http_pairs_dump killed with SIGKILL mid-run leaves, in the
// dump's in-progress file, a whole pair for every call it completed: at
// least one per sample its journal had finished. Run again, it finishes
// and writes the dump with the pairs of both attempts.
func TestHTTPPairsDumpSurvivesKill(t *testing.T) {
	f := newResumeFixture(t, 200, 20*time.Millisecond)
	dump := filepath.Join(f.dir, "dumps", "pairs.json")
	f.p.Services[0].Interceptors = []plan.Interceptor{{Name: "http_pairs_dump", Config: map[string]any{"dump_path": dump, "first_n": 100000}}}
	f.planPath = f.writePlan(t, f.p.OutputDir)
	inprogress := filepath.Join(f.dir, "dumps", "pairs.gsm8k-0.inprogress.jsonl")
	journal := rundir.Dir(f.p.OutputDir).Benchmark("gsm8k").Shard(0, 1).Journal()
	args := []string{"shard", "--plan", f.planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1"}

	cmd := nelRun(t, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for countLines(t, journal, `"t":"done"`) < 40 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the shard finished no 40 samples in 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// Read the journal after the pairs: a sample done later than the
	// pairs were read would only make the check stricter.
	pairs := readPairLines(t, inprogress)
	done := countLines(t, journal, `"t":"done"`)
	if done >= 400 {
		t.Fatalf("the shard finished before the kill (%d samples done)", done)
	}
	if len(pairs) < done {
		t.Fatalf("%d pairs on disk after the kill, want at least one per finished sample (%d)", len(pairs), done)
	}

	if out, err := nelRun(t, args...).CombinedOutput(); err != nil {
		t.Fatalf("second attempt: %v\n%s", err, out)
	}
	if _, err := os.Stat(inprogress); !os.IsNotExist(err) {
		t.Errorf("in-progress file left after the shard finished: %v", err)
	}
	var final struct {
		Metrics map[string]int   `json:"metrics"`
		Pairs   []map[string]any `json:"pairs"`
	}
	b, err := os.ReadFile(strings.TrimSuffix(dump, ".json") + ".gsm8k-0.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &final); err != nil {
		t.Fatal(err)
	}
	// The second attempt made at least a call per sample the first did
	// not finish, and the first attempt's pairs come first, unchanged.
	if len(final.Pairs) < len(pairs)+400-done || final.Metrics["200"] != len(final.Pairs) {
		t.Errorf("final dump: %d pairs, metrics %v; want ≥ %d+%d, all 200", len(final.Pairs), final.Metrics, len(pairs), 400-done)
	}
	for i, p := range pairs {
		if final.Pairs[i]["request_id"] != p["request_id"] {
			t.Fatalf("final pair %d is %v, the first attempt's was %v", i, final.Pairs[i]["request_id"], p["request_id"])
		}
	}
}

// countLines counts the lines of path that contain s (0 when there is no
// file yet).
func countLines(t *testing.T, path, s string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), s)
}

// readPairLines decodes the in-progress file: every line whole, each a
// chat completion's pair answered 200.
func readPairLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end with a whole line", path)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var l struct {
			Pair map[string]any `json:"pair"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		resp, _ := l.Pair["response"].(map[string]any)
		if st, _ := resp["status"].(float64); st != 200 {
			t.Fatalf("pair %v: status %v", l.Pair["request_id"], resp["status"])
		}
		out = append(out, l.Pair)
	}
	return out
}
