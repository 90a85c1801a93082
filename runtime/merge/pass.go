package merge

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
)

// pass is a merge's one pass over the shards' rows: the writer of
// results.parquet takes them in merged order through fill, and each goes
// through the statistics (and, for an agentic benchmark, the turns' check)
// on its way, so that no more rows are held than the writer's row groups.
type pass struct {
	src         *source
	acc         *metrics.Accumulator
	total, seen int
	// done receives one value: nil once every row has been read, or the
	// error that stopped the pass.
	done chan error
	// The trajectory audit's turns, the file each is from, and whether
	// the rows hold its sample.
	turns    []results.Turn
	turnSrcs []string
	held     map[metrics.RowKey]bool
	cleanup  func() // removes the source's temporary runs
}

// close stops the pass's readers and removes its temporary files.
func (p *pass) close() {
	p.src.close()
	p.cleanup()
}

// startPass reads the audit columns of the shards' turns files (none for
// a benchmark without turns) and opens the shards for the pass.
func startPass(files []*shardFile, total int, turnSrcs []string) (*pass, error) {
	p := &pass{total: total, done: make(chan error, 1)}
	for _, src := range turnSrcs {
		turns, _, err := results.ReadTurnColumns(src, nil, metrics.AuditColumns...)
		if err != nil {
			return nil, err
		}
		p.turns = append(p.turns, turns...)
		for range turns {
			p.turnSrcs = append(p.turnSrcs, src)
		}
	}
	if len(p.turns) > 0 {
		p.held = make(map[metrics.RowKey]bool, len(p.turns))
		for _, t := range p.turns {
			p.held[metrics.RowKey{ItemID: t.ItemID, Repeat: t.Repeat}] = false
		}
	}
	p.acc = metrics.NewAccumulator(p.turns, total)
	p.acc.Sorted() // the source's order: an item's rows are adjacent
	src, cleanup, err := openSource(context.Background(), files, filepath.Dir(files[0].path))
	if err != nil {
		return nil, err
	}
	p.src, p.cleanup = src, cleanup
	if total == 0 {
		p.done <- nil
	}
	return p, nil
}

// fill is results.WriteRowsFrom's: the next rows, into dst.
func (p *pass) fill(dst []results.Row) error {
	if err := p.src.read(dst); err != nil {
		p.done <- err
		return err
	}
	for i := range dst {
		r := &dst[i]
		p.acc.Add(r)
		if p.held != nil {
			k := metrics.RowKey{ItemID: r.ItemID, Repeat: r.Repeat}
			if _, ok := p.held[k]; ok {
				p.held[k] = true
			}
		}
	}
	p.seen += len(dst)
	if p.seen == p.total {
		p.done <- nil
	}
	return nil
}

// strayTurn is the error for the first turn (in file order) of a sample
// the results do not hold, nil when there is none: a turn of a sample
// the results do not hold would be audited while it was never scored.
func (p *pass) strayTurn() error {
	for i, t := range p.turns {
		if !p.held[metrics.RowKey{ItemID: t.ItemID, Repeat: t.Repeat}] {
			return fmt.Errorf("%s: item %s repeat %d has turns but no result row", p.turnSrcs[i], t.ItemID, t.Repeat)
		}
	}
	return nil
}

// errorTexts returns the error texts of the samples keys names (the
// failure exemplars that need one), from the trajectories' item_id,
// repeat and error columns of only the shards that hold them (files[i] is
// shard i of n).
func errorTexts(files []*shardFile, n int, keys []metrics.RowKey) (map[metrics.RowKey]string, error) {
	texts := make(map[metrics.RowKey]string, len(keys))
	byShard := map[int][]metrics.RowKey{}
	for _, k := range keys {
		s := shard.Of(k.ItemID, n)
		byShard[s] = append(byShard[s], k)
	}
	shards := make([]int, 0, len(byShard))
	for s := range byShard {
		shards = append(shards, s)
	}
	slices.Sort(shards)
	buf := make([]results.Trajectory, 1024)
	for _, s := range shards {
		p := rundir.Shard(files[s].path).Trajectories()
		if err := findErrors(p, buf, byShard[s], texts); err != nil {
			return nil, err
		}
	}
	return texts, nil
}

// findErrors adds to texts the error text of each of keys found in the
// trajectories file at path, read a buffer of rows at a time.
func findErrors(path string, buf []results.Trajectory, keys []metrics.RowKey, texts map[metrics.RowKey]string) error {
	tr, err := results.OpenTrajectories(path, "item_id", "repeat", "error")
	if err != nil {
		return err
	}
	defer tr.Close()
	for {
		n, err := tr.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range buf[:n] {
			k := metrics.RowKey{ItemID: buf[i].ItemID, Repeat: buf[i].Repeat}
			if buf[i].Error != "" && slices.Contains(keys, k) {
				texts[k] = buf[i].Error
			}
		}
	}
}
