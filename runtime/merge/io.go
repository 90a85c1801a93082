package merge

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

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

// keyColumns are the columns checkShards reads of each shard.
var keyColumns = []string{"item_id", "item_idx", "repeat"}

// checkShards reads the key columns of every shard (shards side by side,
// one per CPU, each a batch of rows at a time) and checks that they hold
// exactly one row per (item, repeat), each in the shard its item belongs
// to, every selected item with every repeat, and that every shard's
// trajectories file has as many rows. It notes which shards are in merged
// order (nel-run writes them so). As every item belongs to one shard, the
// shards are checked apart, each holding one bitset of repeats per item
// of its own, not its rows.
func checkShards(key string, files []*shardFile, n, selected, repeats int) error {
	type verdict struct {
		items int
		short string // an item with fewer repeats, "" when none
		err   error
	}
	out := make([]verdict, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				v := &out[i]
				v.items, v.short, v.err = checkShard(files[i], n, repeats)
			}
		})
	}
	wg.Wait()
	items := 0
	for _, v := range out {
		if v.err != nil {
			return fmt.Errorf("benchmark %s: %w", key, v.err)
		}
		items += v.items
	}
	if items != selected {
		return fmt.Errorf("benchmark %s: the shards hold %d distinct items, but %d were selected", key, items, selected)
	}
	for _, v := range out {
		if v.short != "" {
			return fmt.Errorf("benchmark %s: %s", key, v.short)
		}
	}
	for _, f := range files {
		p := rundir.Shard(f.path).Trajectories()
		_, nt, err := results.ReadMeta(p)
		if err != nil {
			return fmt.Errorf("benchmark %s: %w", key, err)
		}
		if int(nt) != f.n {
			return fmt.Errorf("benchmark %s: %s has %d trajectories for %d results", key, p, nt, f.n)
		}
	}
	return nil
}

// checkShard checks one shard's rows for checkShards and sets f.sorted;
// it returns how many distinct items it holds and, when one has fewer
// than repeats rows, says which.
func checkShard(f *shardFile, n, repeats int) (items int, short string, err error) {
	rr, err := results.OpenRows(f.path, keyColumns...)
	if err != nil {
		return 0, "", err
	}
	defer rr.Close()
	buf := make([]results.Row, 4096)
	perItem := map[string]*itemState{}
	var st *itemState
	var last results.Row // the previous row's key
	f.sorted = true
	for first := true; ; {
		k, err := rr.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, "", err
		}
		for i := range buf[:k] {
			r := &buf[i]
			if !first && compareRows(&last, r) > 0 {
				f.sorted = false
			}
			first = false
			if st == nil || r.ItemID != last.ItemID {
				if st = perItem[r.ItemID]; st == nil {
					if s := shard.Of(r.ItemID, n); s != f.i {
						return 0, "", fmt.Errorf("%s holds item %s, which belongs to shard %d", f.path, r.ItemID, s)
					}
					st = &itemState{}
					perItem[r.ItemID] = st
				}
			}
			last = results.Row{ItemID: r.ItemID, ItemIdx: r.ItemIdx, Repeat: r.Repeat}
			if r.Repeat < 0 || r.Repeat >= int64(repeats) {
				return 0, "", fmt.Errorf("%s has item %s repeat %d, but the run has %d repeats", f.path, r.ItemID, r.Repeat, repeats)
			}
			if st.has(r.Repeat) {
				return 0, "", fmt.Errorf("item %s repeat %d appears twice in %s", r.ItemID, r.Repeat, f.path)
			}
			st.set(r.Repeat)
			st.count++
		}
	}
	for id, st := range perItem {
		if c := int(st.count); c != repeats {
			short = fmt.Sprintf("item %s has %d of %d repeats", id, c, repeats)
			break
		}
	}
	return len(perItem), short, nil
}

// limitMemory sets a soft memory limit (runtime/debug.SetMemoryLimit)
// for a merge of rows rows and returns a function that restores the
// previous one. A merge holds a batch of rows and a page per column for
// every shard and a few row groups for the writer (~130 MB for 16 shards),
// and per item its aggregates, per row its latency (~60 bytes a row), while
// the readers and the Parquet writer churn through garbage many times
// that size; left to GOGC=100 alone the heap peaks at about twice the live
// heap. The limit makes the GC run more often near the peak instead
// (measured on 1,000,000 rows in 16 shards: a limit of 192 MiB gave
// 201 MB RSS, 212 MiB 218-227 MB and 224 MiB 244 MB with 20% less CPU
// than 192 MiB). A limit set in the
// environment (GOMEMLIMIT) is left alone.
func limitMemory(rows int) (restore func()) {
	const (
		base        = 144 << 20
		bytesPerRow = 72
	)
	if os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(base + int64(rows)*bytesPerRow)
	return func() { debug.SetMemoryLimit(prev) }
}

// itemState is what checkShards knows of one item.
type itemState struct {
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
