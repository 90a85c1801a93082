package shard

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
)

// kept is an item of the shard and its place in the selection.
type kept struct {
	rank int
	item *bench.Item
}

// stream numbers a streamed dataset's records, window by window, and
// keeps the shard's selected items.
type stream struct {
	r     *runner
	ctx   context.Context
	spec  string
	sel   *selection
	ids   *bench.IDs
	mine  []kept
	dups  []bench.Duplicate
	where origins
	total int
	keyed int // records numbered by the Key alone
	// vals and buf are reused by keyed.
	vals []string
	buf  []byte
}

// streamItems reads the data a window at a time, numbers every record's
// item (its ID counts the repeats of its content before it), and keeps
// the shard's selected items only. With the benchmark's Key, a record
// is read only as far as its key fields unless the shard keeps it.
func (r *runner) streamItems(ctx context.Context, s dataset.Stream, spec string) (*shardData, error) {
	sel, err := r.selection(ctx, s)
	if err != nil {
		return nil, r.loadErr(r.wordLoadErr(ctx, spec, err))
	}
	st := &stream{r: r, ctx: ctx, spec: spec, sel: sel, ids: bench.NewIDs(len(sel.ranks))}
	opts, fn := dataset.LoadOptions{}, st.window
	// The Key saves decoding the records the shard drops; a shard that
	// keeps every record would read each twice (its key fields, then
	// whole), which doubled the load of gsm8k's 10,240 records (issue 23).
	if key := r.def.Key; key != nil && (r.o.Of > 1 || !sel.all()) {
		opts.Pick, fn = key.Fields, st.byKey
	}
	ds, err := s.Windows(ctx, opts, r.window, func(w *dataset.Dataset) error {
		st.where.add(w)
		if err := fn(w); err != nil {
			return err
		}
		if len(st.where.lines) != st.total {
			return fmt.Errorf("%s: %d items of %d records: not RowWise", r.b.Name, st.total, len(st.where.lines))
		}
		return nil
	})
	switch {
	case err != nil && ds == nil:
		return nil, r.loadErr(r.wordLoadErr(ctx, spec, err))
	case err != nil:
		return nil, r.loadErr(err)
	case sel.ranks != nil && st.total != len(sel.ranks):
		return nil, fmt.Errorf("benchmark %s: dataset %s: %d records counted, %d read: did it change while read?", r.b.Key, spec, len(sel.ranks), st.total)
	}
	r.warnDuplicates(st.dups)
	slices.SortFunc(st.mine, func(a, b kept) int { return a.rank - b.rank })
	d := &shardData{total: st.total, selected: st.total, digest: ds.Digest, streamed: true, keyed: st.keyed}
	if sel.limit >= 0 && sel.limit < st.total {
		d.selected = sel.limit
	}
	for _, k := range st.mine {
		d.mine = append(d.mine, k.item)
	}
	return d, nil
}

// window makes the items of a window of whole records with the
// benchmark's Load.
func (st *stream) window(w *dataset.Dataset) error {
	set, err := st.r.def.Load(st.ctx, windowLoader{spec: st.spec, w: w}, st.r.b.Params)
	if err != nil {
		return err
	}
	// Without repeats inside the window, the IDs Load gave are the
	// contents' IDs: numbering them for the whole dataset needs no
	// second hash of each item.
	known := len(set.Duplicates) == 0
	for j := range set.Items {
		it := &set.Items[j]
		it.Index = w.Offset + j
		id, first := "", 0
		if known {
			if id, first, err = st.ids.NextID(it.ID, it.Content, it.Index); err != nil {
				return err
			}
		} else {
			id, first = st.ids.Next(it.Content, it.Index)
		}
		st.number(it, id, first)
	}
	st.total = w.Offset + len(set.Items)
	return nil
}

// number gives it, the item at its Index, its ID in the whole dataset,
// notes it as a repeat of the item at first (≥ 0), and keeps it when it
// is the shard's.
func (st *stream) number(it *bench.Item, id string, first int) {
	it.ID = id
	if first >= 0 {
		st.dups = append(st.dups, bench.Duplicate{Origin: it.Origin, First: st.where.at(first)})
	}
	if k := st.sel.rank(it.Index); k >= 0 && Of(id, st.r.o.Of) == st.r.o.Shard {
		// A copy: a pointer into a window's items would keep them all
		// alive.
		c := *it
		st.mine = append(st.mine, kept{k, &c})
	}
}

// byKey numbers a window's records by the benchmark's Key: a record read
// as its key fields (dataset.LoadOptions.Pick) is decoded and made an
// item only when the shard keeps it; a record decoded whole, or refused
// by the Key, goes through Load. The first record of every window goes
// through Load too, so that Load checks the params, and the Key is
// checked against Load as the data goes by.
func (st *stream) byKey(w *dataset.Dataset) error {
	key, index := st.r.def.Key, w.Offset
	for _, p := range w.Parts {
		for j, rec := range p.Records {
			var (
				sum [8]byte
				ok  bool
			)
			st.vals, ok = key.Values(rec, st.vals)
			if ok {
				sum, st.buf = key.Sum(st.vals, st.buf)
			}
			if !ok || index == w.Offset {
				if err := st.loaded(&p, j, index, sum, ok); err != nil {
					return err
				}
				index++
				continue
			}
			id, first := st.ids.NextSum(sum, func() map[string]any { return key.Content(st.vals) }, index)
			if first >= 0 {
				st.dups = append(st.dups, bench.Duplicate{Origin: p.Where(j), First: st.where.at(first)})
			}
			if k := st.sel.rank(index); k >= 0 && Of(id, st.r.o.Of) == st.r.o.Shard {
				it, err := st.load(&p, j, index)
				if err != nil {
					return err
				}
				if it.ID != hex.EncodeToString(sum[:]) {
					return st.keyMismatch(&p, j, it.ID, sum)
				}
				it.ID = id
				st.mine = append(st.mine, kept{k, it})
			} else {
				st.keyed++
			}
			index++
		}
	}
	st.total = index
	return nil
}

// loaded numbers record j of p, at index, through Load; when the Key read
// it (ok), Load's ID must be the Key's sum.
func (st *stream) loaded(p *dataset.Part, j, index int, sum [8]byte, ok bool) error {
	it, err := st.load(p, j, index)
	if err != nil {
		return err
	}
	if ok && it.ID != hex.EncodeToString(sum[:]) {
		return st.keyMismatch(p, j, it.ID, sum)
	}
	id, first, err := st.ids.NextID(it.ID, it.Content, index)
	if err != nil {
		return err
	}
	st.number(it, id, first)
	return nil
}

// load makes the item of record j of p, at index, with Load, decoding the
// record whole first when the window holds only its key fields.
func (st *stream) load(p *dataset.Part, j, index int) (*bench.Item, error) {
	rec := p.Records[j]
	if j < len(p.Raw) && p.Raw[j] != nil {
		var err error
		if rec, err = dataset.DecodeRecord(p.Raw[j]); err != nil {
			return nil, fmt.Errorf("dataset %s: %s: %w", st.spec, p.Where(j), err)
		}
	}
	one := dataset.Part{Name: p.Name, Records: []dataset.Record{rec}, First: p.First + j}
	if j < len(p.Lines) {
		one.Lines = []int{p.Lines[j]}
	}
	set, err := st.r.def.Load(st.ctx, windowLoader{spec: st.spec, w: &dataset.Dataset{Spec: st.spec, Offset: index, Parts: []dataset.Part{one}}}, st.r.b.Params)
	if err != nil {
		return nil, err
	}
	if len(set.Items) != 1 {
		return nil, fmt.Errorf("%s: %d items of 1 record: not RowWise", st.r.b.Name, len(set.Items))
	}
	it := set.Items[0]
	it.Index = index
	return &it, nil
}

func (st *stream) keyMismatch(p *dataset.Part, j int, id string, sum [8]byte) error {
	return fmt.Errorf("%s: %s: the benchmark's Key gives content id %x, its Load %s: a bug in nel", st.r.b.Name, p.Where(j), sum, id)
}
