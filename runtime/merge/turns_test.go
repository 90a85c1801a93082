package merge

import (
	"errors"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/merge/mergetest"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// writeShardTurns gives every sample of each shard but those in skip two
// turns (a call and its answer), as a tool-calling shard writes them, and
// returns the rows written, in shard order.
func writeShardTurns(t *testing.T, bdir rundir.Bench, shards int, skip ...int) []results.Turn {
	t.Helper()
	var all []results.Turn
	for i := range shards {
		s := bdir.Shard(i, shards)
		rows, meta, err := results.ReadRows(string(s))
		if err != nil {
			t.Fatal(err)
		}
		var turns []results.Turn
		for _, r := range rows {
			turns = append(turns, results.TurnsOf(r, i, []agent.Turn{
				{Index: 0, Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c", Name: "bash", Arguments: `{"command":"` + r.ItemID + `"}`}}},
				{Index: 1, Role: "tool", ToolCallID: "c", ToolName: "bash", Content: "ok"},
			}, agent.Answered)...)
		}
		if slices.Contains(skip, i) {
			continue
		}
		if err := results.WriteTurns(s.Turns(), turns, meta); err != nil {
			t.Fatal(err)
		}
		all = append(all, turns...)
	}
	return all
}

func smallRun(t *testing.T, shards int) (*plan.Plan, rundir.Bench) {
	t.Helper()
	dir := t.TempDir()
	p, _, err := mergetest.Write(dir, mergetest.Options{Items: 40, Repeats: 2, Shards: shards, TextBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	return p, rundir.Dir(dir).Benchmark(mergetest.Benchmark)
}

// The shards' turns files become turns.parquet, in shard order, every row
// kept; a run without them gets none.
func TestMergeTurns(t *testing.T) {
	const shards = 3
	p, bdir := smallRun(t, shards)
	want := writeShardTurns(t, bdir, shards)
	if len(want) != 40*2*2 {
		t.Fatalf("fixture wrote %d turns, want 160", len(want))
	}
	sums, err := Merge(Options{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	// 40 items × 2 repeats, each one model turn and one bash call.
	wantAudit := &metrics.Agent{
		Samples: 80, Turns: metrics.TurnStats{Mean: 1, Median: 1, Max: 1}, ToolCalls: 80,
		Tools:    []metrics.ToolUsage{{Name: "bash", Calls: 80}},
		Outcomes: []metrics.OutcomeCount{{Outcome: "answered", Samples: 80, Share: 1}},
	}
	audit := sums[0].Bundle.Agent
	if audit == nil {
		t.Fatal("the merged bundle has no trajectory audit")
	}
	if a := *audit; len(a.Slowest) != metrics.MaxAgentSamples || a.Longest[0].ItemIdx != 0 {
		t.Errorf("slowest %+v, longest %+v", a.Slowest, a.Longest)
	}
	audit.Slowest, audit.Longest = nil, nil
	if !reflect.DeepEqual(audit, wantAudit) {
		t.Errorf("audit %+v, want %+v", audit, wantAudit)
	}
	// A bundle recomputed from the merged files has the same audit.
	again, err := metrics.FromParquet(string(bdir))
	if err != nil {
		t.Fatal(err)
	}
	if again.Agent == nil || again.Agent.Samples != 80 || again.Agent.ToolCalls != 80 {
		t.Errorf("FromParquet's audit %+v", again.Agent)
	}
	got, meta, err := results.ReadTurns(bdir.Turns())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("turns.parquet holds %d rows, not the shards' %d in shard order", len(got), len(want))
	}
	if meta[results.MetaShard] != "merged/3" {
		t.Errorf("turns.parquet's shard metadata %q", meta[results.MetaShard])
	}

	p, bdir = smallRun(t, shards)
	if sums, err = Merge(Options{Plan: p}); err != nil || sums[0].Bundle.Agent != nil {
		t.Fatalf("Merge without turns: %v, audit %+v", err, sums[0].Bundle.Agent)
	}
	if _, err := os.Stat(bdir.Turns()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a run without turns has %s (%v)", bdir.Turns(), err)
	}
}

// A run where one shard lacks the turns the others have is refused, and
// neither turns.parquet nor results.parquet appears.
func TestMergeTurnsMissingShard(t *testing.T) {
	const shards = 3
	p, bdir := smallRun(t, shards)
	writeShardTurns(t, bdir, shards, 1)
	_, err := Merge(Options{Plan: p})
	if err == nil || !strings.Contains(err.Error(), "2 of 3 shards have turns") || !strings.Contains(err.Error(), bdir.Shard(1, shards).Turns()) {
		t.Fatalf("Merge: %v, want the shard without turns named", err)
	}
	for _, f := range []string{bdir.Turns(), bdir.Results()} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s written by a refused merge (%v)", f, err)
		}
	}
}

// Turns of a sample that has no result row are refused, naming the file
// and the sample; nothing is written.
func TestMergeTurnsStraySample(t *testing.T) {
	const shards = 2
	p, bdir := smallRun(t, shards)
	writeShardTurns(t, bdir, shards)
	s := bdir.Shard(1, shards)
	turns, meta, err := results.ReadTurns(s.Turns())
	if err != nil {
		t.Fatal(err)
	}
	stray := turns[0]
	stray.ItemID, stray.Repeat = "not-an-item", 7
	if err := results.WriteTurns(s.Turns(), append(turns, stray), meta); err != nil {
		t.Fatal(err)
	}
	_, err = Merge(Options{Plan: p})
	if err == nil || !strings.Contains(err.Error(), s.Turns()+": item not-an-item repeat 7 has turns but no result row") {
		t.Fatalf("Merge: %v", err)
	}
	for _, f := range []string{bdir.Turns(), bdir.Results(), bdir.Bundle()} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s written by a refused merge (%v)", f, err)
		}
	}
}
