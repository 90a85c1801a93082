package shard

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nel-eval/nel/runtime/journal"
	"github.com/nel-eval/nel/runtime/results"
)

// spoolRecord is sample i of an agentic shard: item i/2 (dataset index
// 10 × that), repeat i%2, with i%3 turns.
func spoolRecord(i int) (journal.Key, *sampleRecord) {
	item := fmt.Sprintf("item-%03d", i/2)
	idx, rep := int64(10*(i/2)), int64(i%2)
	rec := &sampleRecord{
		Row:  results.Row{ItemID: item, ItemIdx: idx, Repeat: rep, Reward: float64(i)},
		Traj: results.Trajectory{ItemID: item, ItemIdx: idx, Repeat: rep, Response: fmt.Sprint("answer ", i)},
	}
	for n := range i % 3 {
		rec.Turns = append(rec.Turns, results.Turn{ItemID: item, ItemIdx: idx, Repeat: rep, TurnIndex: int64(n), Content: fmt.Sprint("turn ", i, ".", n)})
	}
	return journal.Key{Item: item, Repeat: int(rep)}, rec
}

// spoolOf is a spool in a new folder for samples 0..n-1 (spoolRecord),
// with maxPending, and that folder.
func spoolOf(t *testing.T, n int, agentic bool, maxPending int) (*spool, string) {
	t.Helper()
	var order []journal.Key
	for i := range n {
		k, _ := spoolRecord(i)
		order = append(order, k)
	}
	dir := t.TempDir()
	s, err := newSpool(filepath.Join(dir, ".spool"), order, agentic, maxPending)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// addAll adds samples of s in the order given.
func addAll(t *testing.T, s *spool, samples []int) {
	t.Helper()
	for _, i := range samples {
		k, rec := spoolRecord(i)
		if err := s.add(k, rec); err != nil {
			t.Fatal(err)
		}
	}
}

// Samples that finish out of order are written in row order: those that
// wait behind a slower one (pending), and those passed over when too many
// wait (late), which are put in their places when the shard ends, across
// part boundaries, turns included.
func TestSpoolOrder(t *testing.T) {
	const n = 40
	// Samples 3 and 17 finish last (17 after the others waiting behind it
	// passed it over), 30..33 in reverse, the rest in order.
	var finish []int
	for i := range n {
		if i != 3 && i != 17 && (i < 30 || i > 33) {
			finish = append(finish, i)
		}
		if i == 33 {
			finish = append(finish, 33, 32, 31, 30)
		}
	}
	finish = append(finish, 17, 3)

	s, dir := spoolOf(t, n, true, 6)
	s.partMax = 5
	addAll(t, s, finish)
	if len(s.lateRecs) != 2 {
		t.Errorf("%d samples were late, want 2 (3 and 17)", len(s.lateRecs))
	}
	final, trajs, turns := filepath.Join(dir, "s.parquet"), filepath.Join(dir, "s.trajectories.parquet"), filepath.Join(dir, "s.turns.parquet")
	rows, err := s.finish(final, trajs, turns, map[string]string{results.MetaShard: "0/1"})
	if err != nil {
		t.Fatal(err)
	}
	if rows != n {
		t.Errorf("finish wrote %d rows, want %d", rows, n)
	}
	gotRows, meta, err := results.ReadRows(final)
	if err != nil {
		t.Fatal(err)
	}
	if meta[results.MetaShard] != "0/1" || meta[results.MetaRows] != fmt.Sprint(n) {
		t.Errorf("metadata: %v", meta)
	}
	gotTrajs, _, err := results.ReadTrajectories(trajs)
	if err != nil {
		t.Fatal(err)
	}
	gotTurns, _, err := results.ReadTurns(turns)
	if err != nil {
		t.Fatal(err)
	}
	var wantTurns []results.Turn
	for i := range n {
		_, rec := spoolRecord(i)
		if i >= len(gotRows) || gotRows[i].ItemID != rec.Row.ItemID || gotRows[i].Repeat != rec.Row.Repeat || gotRows[i].Reward != rec.Row.Reward {
			t.Fatalf("row %d: %+v, want sample %d", i, gotRows[i], i)
		}
		if gotTrajs[i].Response != rec.Traj.Response {
			t.Fatalf("trajectory %d: %q, want %q", i, gotTrajs[i].Response, rec.Traj.Response)
		}
		wantTurns = append(wantTurns, rec.Turns...)
	}
	if !slices.Equal(gotTurns, wantTurns) {
		t.Errorf("turns:\n%+v\nwant\n%+v", gotTurns, wantTurns)
	}
}

// A spool that is missing a sample at the end refuses to write the shard.
func TestSpoolMissingSample(t *testing.T) {
	s, dir := spoolOf(t, 4, false, 8)
	addAll(t, s, []int{0, 2, 3})
	_, err := s.finish(filepath.Join(dir, "s.parquet"), filepath.Join(dir, "t.parquet"), "", nil)
	if err == nil || err.Error() != "spool: 1 of 4 samples did not finish" {
		t.Errorf("finish: %v", err)
	}
}

// Once fewer than a part's samples are left to come, a part is cut when
// it holds as many as are left (halving down to tailMax), so that what
// finish still has to write is less than tailMax samples; the shard's
// rows are the same.
func TestSpoolTail(t *testing.T) {
	const n = 40
	s, dir := spoolOf(t, n, false, 8)
	s.partMax, s.tailMax = 16, 3
	var all []int
	for i := range n {
		all = append(all, i)
	}
	addAll(t, s, all)
	// Samples 0-15 make a full part; from sample 24 on fewer than 16 are
	// left: 16-27 (12, as many as left after 27: 28-39), 28-33 (6), then
	// parts of tailMax: 34-36, 37-39. (The parts are on disk once the
	// writer stopped.)
	s.mu.Lock()
	err := s.close()
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for i := range s.parts {
		rows, err := results.ReadRowsPart(s.partPath(i, ""))
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(rows))
	}
	if want := []int{16, 12, 6, 3, 3}; !slices.Equal(sizes, want) || len(s.buf) != 0 {
		t.Errorf("parts of %v samples and %d left for finish, want %v and 0", sizes, len(s.buf), want)
	}
	final := filepath.Join(dir, "s.parquet")
	if rows, err := s.finish(final, filepath.Join(dir, "t.parquet"), "", nil); err != nil || rows != n {
		t.Fatalf("finish: %d rows, %v", rows, err)
	}
	got, _, err := results.ReadRows(final)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, rec := spoolRecord(i); got[i].ItemID != rec.Row.ItemID || got[i].Repeat != rec.Row.Repeat {
			t.Fatalf("row %d: %s/%d, want sample %d", i, got[i].ItemID, got[i].Repeat, i)
		}
	}
}
