package shard

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/nel-eval/nel/runtime/journal"
	"github.com/nel-eval/nel/runtime/results"
)

// A spool streams a shard's finished samples to Parquet while the shard
// runs, so that what the shard holds does not grow with its sample count:
// samples are written as part files of at most partSamples samples (or
// partBytes of text) in the shard's row order, and once every sample is
// done the parts are joined into the shard's files by copying their row
// groups (results.Concat), never holding the whole shard decoded.
//
// Samples are sent in row order (resume sorts todo), so they finish nearly
// in it: a sample that finishes before one ahead of it waits in pending
// until those ahead are done. A sample that keeps the others waiting too
// long (a slow request, a failure held back until the shard ends) is
// passed over once pending holds maxPending samples: it is late, kept in
// memory when it finishes, and put in its place when the shard ends, by
// rewriting the parts around it one at a time.
//
// The parts are not a record of anything: the journal is. A shard that
// starts (afresh or resuming) deletes any parts an earlier run left and
// writes the journal's samples again.
type spool struct {
	dir     string // the hidden folder of the part files
	agentic bool   // the samples have turns

	mu         sync.Mutex
	order      []journal.Key // every sample of the shard, in row order
	next       int           // order[next] is the next sample to write
	pending    map[journal.Key]*sampleRecord
	maxPending int
	late       map[journal.Key]bool // passed over, not yet finished
	lateRecs   []*sampleRecord      // passed over, finished
	buf        []*sampleRecord      // in row order, not yet written
	bufBytes   int
	parts      []string // results part files, in row order
	written    int      // samples in parts
	partMax    int      // samples a part holds at most: partSamples but in tests
	tailMax    int      // the same in the shard's tail: tailSamples but in tests

	// The parts are encoded and written by one goroutine of their own, so
	// that samples finishing meanwhile are not held up (they would each
	// hold a worker, and the pool would start more). One part waits while
	// another is written; a third waits in add.
	jobs   chan partJob
	werr   chan error // the writer's one result: its first error, or nil at the end
	err    error      // what werr said, once got
	got    bool
	closed bool // jobs is
}

type partJob struct {
	i    int
	recs []*sampleRecord
}

// partSamples and partBytes bound a part: a row group of the shard's
// files, and what the shard holds of finished samples besides pending.
const (
	partSamples = 2048
	partBytes   = 8 << 20
)

// tailSamples bounds the last part: the part written after the shard's
// last sample is what keeps the shard from ending, and at partSamples it
// took 25-40 ms to encode on 2 CPUs (issue 23). Cut smaller (see push),
// the tail's parts are written while its last samples are in flight, and
// the last one is quick.
const tailSamples = 256

// newSpool prepares dir for the parts of a shard whose samples are order
// (in row order), removing what an earlier run left there. maxPending
// bounds the samples held back behind an unfinished one.
func newSpool(dir string, order []journal.Key, agentic bool, maxPending int) (*spool, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s := &spool{
		dir: dir, agentic: agentic, order: order, maxPending: max(maxPending, 1), partMax: partSamples, tailMax: tailSamples,
		pending: map[journal.Key]*sampleRecord{}, late: map[journal.Key]bool{},
		jobs: make(chan partJob, 1), werr: make(chan error, 1),
	}
	go s.writer()
	return s, nil
}

// writer writes the parts sent on jobs. It reports its first error at
// once and drops the parts after it; nil once jobs is closed.
func (s *spool) writer() {
	var err error
	for j := range s.jobs {
		if err != nil {
			continue
		}
		if _, err = s.writePart(j.i, j.recs); err != nil {
			s.werr <- err
		}
	}
	if err == nil {
		s.werr <- nil
	}
}

// failed is the writer's error, if it reported one yet. The caller holds
// mu.
func (s *spool) failed() error {
	if !s.got {
		select {
		case s.err = <-s.werr:
			s.got = true
		default:
		}
	}
	return s.err
}

// close stops the writer once it has written the parts sent, and returns
// its error. The caller holds mu.
func (s *spool) close() error {
	if !s.closed {
		s.closed = true
		close(s.jobs)
		if !s.got {
			s.err, s.got = <-s.werr, true
		}
	}
	return s.err
}

// stop is close for a shard that ends before it finished: the parts
// stay (the next run deletes them), and their errors do not matter.
func (s *spool) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.close()
}

// add takes the finished sample k, writing a part when one is full.
func (s *spool) add(k journal.Key, rec *sampleRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.late[k] {
		delete(s.late, k)
		s.lateRecs = append(s.lateRecs, rec)
		return nil
	}
	s.pending[k] = rec
	if err := s.drain(); err != nil {
		return err
	}
	// Too many wait behind unfinished samples: pass those over (they are
	// late) until at most half as many wait.
	if len(s.pending) > s.maxPending {
		for len(s.pending) > s.maxPending/2 && s.next < len(s.order) {
			for s.next < len(s.order) && s.pending[s.order[s.next]] == nil {
				s.late[s.order[s.next]] = true
				s.next++
			}
			if err := s.drain(); err != nil {
				return err
			}
		}
	}
	return nil
}

// drain moves the samples that are next in row order from pending to buf.
func (s *spool) drain() error {
	for s.next < len(s.order) {
		k := s.order[s.next]
		rec := s.pending[k]
		if rec == nil {
			return nil
		}
		delete(s.pending, k)
		s.next++
		if err := s.push(rec); err != nil {
			return err
		}
	}
	return nil
}

// push appends rec to buf, writing buf as a part when it is full.
func (s *spool) push(rec *sampleRecord) error {
	s.buf = append(s.buf, rec)
	s.bufBytes += recordBytes(rec)
	limit := s.partMax
	if left := len(s.order) - s.next; left < s.partMax {
		// The tail: a part as large as what is left to come, so that
		// parts halve (1,024, 512, 256 ...) down to tailMax, and what
		// finish writes is less than tailMax; a few more parts, not
		// partMax/tailMax more (each is two files to join and remove).
		limit = min(limit, max(left, s.tailMax))
	}
	if len(s.buf) < limit && s.bufBytes < partBytes {
		return nil
	}
	return s.flush()
}

// flush hands buf to the writer as the next part.
func (s *spool) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	// A failed write shows here, a part or two later, or in finish.
	if err := s.failed(); err != nil {
		return err
	}
	if s.closed {
		return errors.New("spool: closed")
	}
	i := len(s.parts)
	s.jobs <- partJob{i, s.buf}
	s.parts = append(s.parts, s.partPath(i, ""))
	s.written += len(s.buf)
	s.buf, s.bufBytes = make([]*sampleRecord, 0, min(s.partMax, len(s.order))), 0
	return nil
}

// recordBytes is about how much of the heap rec holds: its text.
func recordBytes(rec *sampleRecord) int {
	t := &rec.Traj
	n := len(t.Request) + len(t.Response) + len(t.Reasoning) + len(t.ScoringDetails) + len(t.Error) + len(t.JudgeCalls)
	n += len(rec.Row.Extracted) + len(rec.Row.Expected) + len(rec.Row.ErrorMessage) + 256
	for i := range rec.Turns {
		n += len(rec.Turns[i].Content) + len(rec.Turns[i].Reasoning) + len(rec.Turns[i].ToolArguments) + len(rec.Turns[i].ToolCalls)
	}
	return n
}

// partPath names part i of a kind ("" results, "trajectories", "turns").
func (s *spool) partPath(i int, kind string) string {
	name := fmt.Sprintf("part-%06d", i)
	if kind != "" {
		name += "." + kind
	}
	return filepath.Join(s.dir, name+".parquet")
}

// writePart writes recs as part i: its rows, trajectories and turns.
func (s *spool) writePart(i int, recs []*sampleRecord) (string, error) {
	rows := make([]results.Row, len(recs))
	trajs := make([]results.Trajectory, len(recs))
	var turns []results.Turn
	for j, rec := range recs {
		rows[j], trajs[j] = rec.Row, rec.Traj
		turns = append(turns, rec.Turns...)
	}
	path := s.partPath(i, "")
	if err := results.WriteRowsPart(path, rows); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	if err := results.WriteTrajectoriesPart(s.partPath(i, "trajectories"), trajs); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	if s.agentic {
		if err := results.WriteTurnsPart(s.partPath(i, "turns"), turns); err != nil {
			return "", fmt.Errorf("spool: %w", err)
		}
	}
	return path, nil
}

// readPart reads part i back as records (rows with their trajectories and
// turns), for putting late samples in their place.
func (s *spool) readPart(i int) ([]*sampleRecord, error) {
	rows, err := results.ReadRowsPart(s.partPath(i, ""))
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	trajs, err := results.ReadTrajectoriesPart(s.partPath(i, "trajectories"))
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if len(trajs) != len(rows) {
		return nil, fmt.Errorf("spool: part %d has %d rows and %d trajectories", i, len(rows), len(trajs))
	}
	var turns []results.Turn
	if s.agentic {
		if turns, err = results.ReadTurnsPart(s.partPath(i, "turns")); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
	}
	recs := make([]*sampleRecord, len(rows))
	for j := range rows {
		rec := &sampleRecord{Row: rows[j], Traj: trajs[j]}
		// A sample's turns are together, in its row's place.
		n := 0
		for n < len(turns) && turns[n].ItemID == rows[j].ItemID && turns[n].Repeat == rows[j].Repeat {
			n++
		}
		rec.Turns, turns = turns[:n:n], turns[n:]
		recs[j] = rec
	}
	if len(turns) > 0 {
		return nil, fmt.Errorf("spool: part %d has turns of no row (%s/%d)", i, turns[0].ItemID, turns[0].Repeat)
	}
	return recs, nil
}

// compareRecords orders records as the shard's rows are: by dataset index,
// item id, repeat (runtime/merge's order).
func compareRecords(a, b *sampleRecord) int {
	return cmp.Or(cmp.Compare(a.Row.ItemIdx, b.Row.ItemIdx), cmp.Compare(a.Row.ItemID, b.Row.ItemID), cmp.Compare(a.Row.Repeat, b.Row.Repeat))
}

// finish writes the shard's files (paths: results, trajectories, turns)
// with meta once every sample is done, and removes the parts. It returns
// the number of rows.
func (s *spool) finish(final, trajs, turns string, meta map[string]string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.drain(); err != nil {
		return 0, err
	}
	if err := s.flush(); err != nil {
		return 0, err
	}
	if err := s.close(); err != nil {
		return 0, err
	}
	// Every sample ran (Run checked); this is the spool's own account.
	if finished := s.written + len(s.lateRecs); finished != len(s.order) {
		return 0, fmt.Errorf("spool: %d of %d samples did not finish", len(s.order)-finished-len(s.pending), len(s.order))
	}
	if len(s.lateRecs) > 0 {
		if err := s.placeLate(); err != nil {
			return 0, err
		}
	}
	if s.agentic {
		if err := s.join(turns, "turns", meta); err != nil {
			return 0, err
		}
	}
	// Trajectories first: the results file is the shard's completion mark.
	if err := s.join(trajs, "trajectories", meta); err != nil {
		return 0, err
	}
	if err := s.join(final, "", meta); err != nil {
		return 0, err
	}
	n := s.written
	if err := os.RemoveAll(s.dir); err != nil {
		return n, fmt.Errorf("spool: %w", err)
	}
	return n, nil
}

// join writes the parts of a kind as one file at path, their row groups
// copied as they are.
func (s *spool) join(path, kind string, meta map[string]string) error {
	if len(s.parts) == 0 {
		switch kind {
		case "":
			return results.WriteRows(path, nil, meta)
		case "trajectories":
			return results.WriteTrajectories(path, nil, meta)
		default:
			return results.WriteTurns(path, nil, meta)
		}
	}
	srcs := make([]string, len(s.parts))
	for i := range s.parts {
		srcs[i] = s.partPath(i, kind)
	}
	_, err := results.Concat(path, srcs, meta)
	return err
}

// placeLate rewrites the parts with the late samples in their places: one
// part at a time, each with the late samples that sort before its last
// row (the last part: all the rest), so that what it holds at once is a
// part and the late samples.
func (s *spool) placeLate() error {
	late := s.lateRecs
	slices.SortFunc(late, compareRecords)
	n := len(s.parts)
	if n == 0 {
		return errors.New("spool: late samples but no parts")
	}
	for i := range n {
		recs, err := s.readPart(i)
		if err != nil {
			return err
		}
		var take int
		if i == n-1 {
			take = len(late)
		} else {
			last := recs[len(recs)-1]
			take, _ = slices.BinarySearchFunc(late, last, compareRecords)
		}
		merged := make([]*sampleRecord, 0, len(recs)+take)
		a, b := recs, late[:take]
		for len(a) > 0 && len(b) > 0 {
			if compareRecords(b[0], a[0]) < 0 {
				merged, b = append(merged, b[0]), b[1:]
			} else {
				merged, a = append(merged, a[0]), a[1:]
			}
		}
		merged = append(append(merged, a...), b...)
		late = late[take:]
		if _, err := s.writePart(i, merged); err != nil {
			return err
		}
	}
	s.written += len(s.lateRecs)
	s.lateRecs = nil
	return nil
}
