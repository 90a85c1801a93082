package merge

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
)

// verdict is an error (or nil) decided once and awaited by any number of
// goroutines.
type verdict struct {
	done chan struct{}
	err  error
}

func newVerdict() *verdict { return &verdict{done: make(chan struct{})} }

func (v *verdict) set(err error) {
	v.err = err
	close(v.done)
}

func (v *verdict) wait() error {
	<-v.done
	return v.err
}

// checkShards reads every shard's rows into one slice (shard after shard,
// decoded one shard per CPU at a time), checks that they are exactly one
// row per (item, repeat), each in the shard its item belongs to, every
// selected item with every repeat, and every shard's trajectories file
// with as many rows; then sorts them by dataset index, item id, repeat.
func checkShards(key string, files []*shardFile, n, selected, repeats int) ([]results.Row, error) {
	total := 0
	for _, f := range files {
		total += f.n
	}
	rows := allocRows(total)
	off := 0
	for _, f := range files {
		f.rows = rows[off : off+f.n : off+f.n]
		off += f.n
	}
	// Readers decode the shards, one per CPU, in file order; the checks
	// below take each shard as soon as it is read.
	errs := make([]error, len(files))
	done := make([]chan struct{}, len(files))
	for i := range done {
		done[i] = make(chan struct{})
	}
	var stop atomic.Bool
	var next atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(files) && !stop.Load(); i = int(next.Add(1) - 1) {
				f := files[i]
				if _, err := results.ReadRowsInto(f.path, f.rows); err != nil {
					errs[i] = fmt.Errorf("benchmark %s: %w", key, err)
				}
				close(done[i])
			}
		})
	}

	// One state per item: the shard it was first seen in, how many rows
	// and which repeats it has (rows of an item are adjacent in a shard, so
	// the last item's state is at hand for the next row).
	perItem := make(map[string]int32, selected)
	states := make([]itemState, 0, selected)
	for fi, f := range files {
		<-done[fi]
		if errs[fi] != nil {
			return nil, errs[fi]
		}
		var st *itemState
		lastID := ""
		for i := range f.rows {
			r := &f.rows[i]
			if st == nil || r.ItemID != lastID {
				j, ok := perItem[r.ItemID]
				if !ok {
					// The first row of an item decides its shard: later
					// rows are either in the same file or caught below.
					if s := shard.Of(r.ItemID, n); s != f.i {
						return nil, fmt.Errorf("benchmark %s: %s holds item %s, which belongs to shard %d", key, f.path, r.ItemID, s)
					}
					j = int32(len(states))
					states = append(states, itemState{file: int32(fi)})
					perItem[r.ItemID] = j
				}
				st, lastID = &states[j], r.ItemID
			}
			inRange := r.Repeat >= 0 && r.Repeat < int64(repeats)
			if inRange && st.has(r.Repeat) {
				return nil, fmt.Errorf("benchmark %s: item %s repeat %d appears twice (%s and %s)", key, r.ItemID, r.Repeat, files[st.file].path, f.path)
			}
			if int(st.file) != fi {
				return nil, fmt.Errorf("benchmark %s: %s holds item %s, which belongs to shard %d", key, f.path, r.ItemID, shard.Of(r.ItemID, n))
			}
			if !inRange {
				return nil, fmt.Errorf("benchmark %s: %s has item %s repeat %d, but the run has %d repeats", key, f.path, r.ItemID, r.Repeat, repeats)
			}
			st.set(r.Repeat)
			st.count++
			if r.ErrorCategory != "" {
				f.failures++
			}
		}
	}
	if len(perItem) != selected {
		return nil, fmt.Errorf("benchmark %s: the shards hold %d distinct items, but %d were selected", key, len(perItem), selected)
	}
	for id, j := range perItem {
		if c := int(states[j].count); c != repeats {
			return nil, fmt.Errorf("benchmark %s: item %s has %d of %d repeats", key, id, c, repeats)
		}
	}
	for _, f := range files {
		p := rundir.Shard(f.path).Trajectories()
		_, nt, err := results.ReadMeta(p)
		if err != nil {
			return nil, fmt.Errorf("benchmark %s: %w", key, err)
		}
		if int(nt) != f.n {
			return nil, fmt.Errorf("benchmark %s: %s has %d trajectories for %d results", key, p, nt, f.n)
		}
	}
	sortRows(rows, files)
	for _, f := range files {
		f.rows = nil // the windows no longer hold the shard's rows
	}
	return rows, nil
}

// limitMemory sets a soft memory limit (runtime/debug.SetMemoryLimit)
// for merging rows rows and returns a function that restores the previous
// one. A merge holds all of a benchmark's rows (~300 MB a million) while
// the Parquet writer churns through garbage several times that size; left
// to GOGC=100 alone the heap peaks at about twice the live heap (over
// 1 GB RSS for 1,000,000 rows). The limit, about twice the expected live
// heap (bytesPerRow a row, at least minMergeLimit), makes the GC run more
// often near the peak instead (measured: ~780 MB RSS for 1,000,000 rows,
// no slower). A limit set in the environment (GOMEMLIMIT) is left alone.
// (Turning GOGC off under the limit saved GC work but cost as much in page
// faults: not done.)
func limitMemory(rows int) (restore func()) {
	const (
		bytesPerRow   = 768
		minMergeLimit = 768 << 20
	)
	if os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(max(int64(minMergeLimit), int64(rows)*bytesPerRow))
	return func() { debug.SetMemoryLimit(prev) }
}

// allocRows returns n zero rows, their memory already written once. A
// fresh allocation this size starts a GC cycle at once, whose marking
// reads the whole still-untouched slice: the kernel then maps its pages
// to the shared zero page, and the readers' first write to each page
// faults again and flushes the TLBs of every CPU (measured: ~15% of the
// merge's CPU time on a 2-CPU VM). So the GC is held off until every page
// has been written (a few tens of milliseconds).
func allocRows(n int) []results.Row {
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	rows := make([]results.Row, n)
	const page = 4096
	step := max(page/int(unsafe.Sizeof(results.Row{})), 1)
	workers := runtime.GOMAXPROCS(0)
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		wg.Go(func() {
			for i := lo; i < min(lo+chunk, n); i += step {
				rows[i].ItemIdx = 0
			}
		})
	}
	wg.Wait()
	return rows
}

// itemState is what checkShards knows of one item.
type itemState struct {
	file  int32 // index of the first file it was seen in
	count int32 // rows seen
	seen  uint64
	more  []uint64 // repeats past 63, one bit each
}

func (st *itemState) has(repeat int64) bool {
	if repeat < 64 {
		return st.seen&(1<<repeat) != 0
	}
	i := int(repeat/64) - 1
	return i < len(st.more) && st.more[i]&(1<<(repeat%64)) != 0
}

func (st *itemState) set(repeat int64) {
	if repeat < 64 {
		st.seen |= 1 << repeat
		return
	}
	i := int(repeat/64) - 1
	for len(st.more) <= i {
		st.more = append(st.more, 0)
	}
	st.more[i] |= 1 << (repeat % 64)
}

// compareRows is the merged order: dataset index, item id, repeat.
func compareRows(a, b *results.Row) int {
	if a.ItemIdx != b.ItemIdx {
		return cmp.Compare(a.ItemIdx, b.ItemIdx)
	}
	if a.ItemID != b.ItemID {
		return strings.Compare(a.ItemID, b.ItemID)
	}
	return cmp.Compare(a.Repeat, b.Repeat)
}

// sortRows sorts rows, the concatenation of files' rows, by compareRows.
// nel-run writes every shard sorted so, so a k-way merge of the shards
// gives the order (a permutation, applied in place: no second copy of the
// rows); any shard out of order is sorted first.
func sortRows(rows []results.Row, files []*shardFile) {
	type run struct{ at, end int }
	var runs []run
	off := 0
	for _, f := range files {
		if !slices.IsSortedFunc(f.rows, func(a, b results.Row) int { return compareRows(&a, &b) }) {
			slices.SortFunc(f.rows, func(a, b results.Row) int { return compareRows(&a, &b) })
		}
		if len(f.rows) > 0 {
			runs = append(runs, run{off, off + len(f.rows)})
		}
		off += len(f.rows)
	}
	if len(runs) <= 1 {
		return
	}
	// A binary min-heap of the runs by their next row.
	less := func(i, j int) bool { return compareRows(&rows[runs[i].at], &rows[runs[j].at]) < 0 }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(runs) {
				return
			}
			if c+1 < len(runs) && less(c+1, c) {
				c++
			}
			if !less(c, i) {
				return
			}
			runs[i], runs[c] = runs[c], runs[i]
			i = c
		}
	}
	for i := len(runs)/2 - 1; i >= 0; i-- {
		down(i)
	}
	// from[k] is the index of the row that goes to position k.
	from := make([]int32, len(rows))
	for k := range from {
		from[k] = int32(runs[0].at)
		runs[0].at++
		if runs[0].at == runs[0].end {
			runs[0] = runs[len(runs)-1]
			runs = runs[:len(runs)-1]
			if len(runs) == 0 {
				break
			}
		}
		down(0)
	}
	// Apply the permutation cycle by cycle; a done position gets from = -1.
	for start := range from {
		if from[start] < 0 || int(from[start]) == start {
			continue
		}
		tmp := rows[start]
		k := start
		for {
			src := int(from[k])
			from[k] = -1
			if src == start {
				rows[k] = tmp
				break
			}
			rows[k] = rows[src]
			k = src
		}
	}
}

// errorTexts returns the error text of every failed row (ErrorCategory
// set), from the trajectories' error column; only shards with failures are
// read, and of them only the item_id, repeat and error columns.
func errorTexts(files []*shardFile, rows []results.Row) (map[metrics.RowKey]string, error) {
	var paths []string
	for _, f := range files {
		if f.failures > 0 {
			paths = append(paths, rundir.Shard(f.path).Trajectories())
		}
	}
	return metrics.ErrorTexts(rows, paths...)
}
