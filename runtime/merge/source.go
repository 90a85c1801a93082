package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/nel-eval/nel/runtime/results"
)

// A shard's reader decodes at most sourceBatch rows at a time, and each
// shard holds up to three batches (one being decoded, one queued, one
// being merged); with many shards the batches shrink so that all of them
// together hold at most sourceBudget bytes of rows (a merge of 1,000
// shards would otherwise hold 800 MB of them).
const (
	sourceBatch  = 1024
	sourceBudget = 16 << 20
)

// batchRows is the rows of a batch with shards shards.
func batchRows(shards int) int {
	row := int(unsafe.Sizeof(results.Row{}))
	return max(16, min(sourceBatch, sourceBudget/(3*row*max(shards, 1))))
}

// source gives the rows of every shard in merged order (compareRows): a
// k-way merge of the shards, each in that order already. A shard written
// in merged order (nel-run writes them so) is decoded a batch at a time
// by a goroutine of its own, a batch ahead, so that the shards are
// decoded on every CPU while the merge takes their rows; one that is not
// is read whole and sorted first (its rows then held).
type source struct {
	heads []*head // a binary min-heap by the heads' rows
	stop  context.CancelFunc
}

// head is one shard's next rows.
type head struct {
	batch []results.Row
	i     int
	next  chan batch // nil for a shard read whole
	free  chan []results.Row
}

type batch struct {
	rows []results.Row
	err  error
}

func newSource(ctx context.Context, files []*shardFile) (*source, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &source{stop: cancel}
	rows := batchRows(len(files))
	for _, f := range files {
		h := &head{}
		if f.sorted {
			rr, err := results.OpenRows(f.path)
			if err != nil {
				s.close()
				return nil, err
			}
			h.next, h.free = make(chan batch, 1), make(chan []results.Row, 2)
			go decode(ctx, rr, rows, h.next, h.free)
		} else {
			rows, _, err := results.ReadRows(f.path)
			if err != nil {
				s.close()
				return nil, err
			}
			slices.SortFunc(rows, func(a, b results.Row) int { return compareRows(&a, &b) })
			h.batch = rows
		}
		if err := h.fill(); err != nil {
			s.close()
			return nil, err
		}
		if h.i < len(h.batch) {
			s.heads = append(s.heads, h)
		}
	}
	for i := len(s.heads)/2 - 1; i >= 0; i-- {
		s.down(i)
	}
	return s, nil
}

// decode sends rr's rows to next, a batch of rows rows at a time, reusing the batches
// given back on free, until the file ends (a last empty batch), an error
// (sent), or ctx is done.
func decode(ctx context.Context, rr *results.RowReader, rows int, next chan<- batch, free <-chan []results.Row) {
	defer rr.Close()
	for {
		var buf []results.Row
		select {
		case buf = <-free:
		default:
			buf = make([]results.Row, rows)
		}
		n, err := rr.Read(buf[:cap(buf)])
		if errors.Is(err, io.EOF) {
			n, err = 0, nil
		}
		select {
		case next <- batch{buf[:n], err}:
		case <-ctx.Done():
			return
		}
		if n == 0 || err != nil {
			return
		}
	}
}

// fill makes h.batch hold h's next rows, if it has any left.
func (h *head) fill() error {
	if h.i < len(h.batch) || h.next == nil {
		return nil
	}
	if h.batch != nil {
		select {
		case h.free <- h.batch:
		default:
		}
	}
	b := <-h.next
	h.batch, h.i = b.rows, 0
	return b.err
}

// read fills dst with the next rows in merged order; the shards must have
// that many rows left.
func (s *source) read(dst []results.Row) error {
	for k := range dst {
		if len(s.heads) == 0 {
			return fmt.Errorf("the shards ended %d rows early", len(dst)-k)
		}
		h := s.heads[0]
		dst[k] = h.batch[h.i]
		h.i++
		if err := h.fill(); err != nil {
			return err
		}
		if h.i == len(h.batch) {
			last := len(s.heads) - 1
			s.heads[0] = s.heads[last]
			s.heads = s.heads[:last]
		}
		s.down(0)
	}
	return nil
}

func (s *source) less(i, j int) bool {
	a, b := s.heads[i], s.heads[j]
	return compareRows(&a.batch[a.i], &b.batch[b.i]) < 0
}

func (s *source) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(s.heads) {
			return
		}
		if c+1 < len(s.heads) && s.less(c+1, c) {
			c++
		}
		if !s.less(c, i) {
			return
		}
		s.heads[i], s.heads[c] = s.heads[c], s.heads[i]
		i = c
	}
}

// close stops the decoders.
func (s *source) close() { s.stop() }

// maxFanIn is the most shards one k-way merge reads at once. Each open
// shard holds a page per column and its reader's buffers (~1 MB), so a
// merge of more shards first merges them maxFanIn at a time into sorted
// runs (temporary files), then merges the runs: the rows are encoded
// twice, but memory stays that of maxFanIn readers, not of every shard.
const maxFanIn = 64

// openSource is newSource over files, through sorted runs written under
// tmp when there are more than maxFanIn; cleanup removes the runs.
func openSource(ctx context.Context, files []*shardFile, tmp string) (s *source, cleanup func(), err error) {
	cleanup = func() {}
	if len(files) <= maxFanIn {
		s, err = newSource(ctx, files)
		return s, cleanup, err
	}
	if !strings.HasPrefix(filepath.Base(tmp), runsPrefix) {
		removeStaleRuns(tmp)
	}
	dir, err := os.MkdirTemp(tmp, runsPrefix)
	if err != nil {
		return nil, nil, err
	}
	// The owner lock says the runs are in use for as long as this process
	// holds it: a merge killed before its cleanup leaves a copy of the rows
	// that the next merge may then remove (removeStaleRuns).
	unlock, _ := tryLock(filepath.Join(dir, runsOwner))
	cleanup = func() {
		os.RemoveAll(dir)
		if unlock != nil {
			unlock()
		}
	}
	var runs []*shardFile
	for lo := 0; lo < len(files); lo += maxFanIn {
		group := files[lo:min(lo+maxFanIn, len(files))]
		run := &shardFile{i: len(runs), path: filepath.Join(dir, fmt.Sprintf("run-%d.parquet", len(runs))), sorted: true}
		for _, f := range group {
			run.n += f.n
		}
		if err := writeRun(ctx, group, run); err != nil {
			cleanup()
			return nil, nil, err
		}
		runs = append(runs, run)
	}
	// The runs are under dir: cleanup removes any runs of runs too.
	if s, _, err = openSource(ctx, runs, dir); err != nil {
		cleanup()
		return nil, nil, err
	}
	return s, cleanup, nil
}

// runsPrefix names the folders of sorted runs; runsOwner is the lock file
// in each that its merge holds while it runs.
const (
	runsPrefix = ".merge-runs-"
	runsOwner  = "owner.lock"
)

// staleAfter is how old a folder of runs without an owner lock must be to
// count as left behind: a live merge creates the lock right after the folder.
const staleAfter = time.Minute

// removeStaleRuns removes the folders of sorted runs under dir that no
// running merge owns: their owner lock is free (its process died: locks go
// with the process, even on kill -9), or they have none and are older than
// staleAfter. Each holds a copy of the shards' rows. Where locks cannot be
// tested, a folder with a lock file is kept.
func removeStaleRuns(dir string) {
	found, _ := filepath.Glob(filepath.Join(dir, runsPrefix+"*"))
	for _, d := range found {
		lock := filepath.Join(d, runsOwner)
		if _, err := os.Stat(lock); err != nil {
			if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > staleAfter {
				os.RemoveAll(d)
			}
			continue
		}
		if unlock, ok := tryLock(lock); ok {
			os.RemoveAll(d)
			unlock()
		}
	}
}

// writeRun writes the rows of files, merged, to run.path.
func writeRun(ctx context.Context, files []*shardFile, run *shardFile) error {
	s, err := newSource(ctx, files)
	if err != nil {
		return err
	}
	defer s.close()
	return results.WriteRowsFrom(run.path, run.n, s.read, nil, nil)
}
