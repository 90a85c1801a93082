package merge

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/merge/mergetest"
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
	if _, err := Merge(Options{Plan: p}); err != nil {
		t.Fatal(err)
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
	if _, err := Merge(Options{Plan: p}); err != nil {
		t.Fatal(err)
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
